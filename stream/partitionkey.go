package stream

import (
	"bytes"
	"encoding/hex"
	"hash/fnv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxKeyToken is the longest qid PartitionKey uses as it is.
const MaxKeyToken = 64

// PartitionKey is the key token of qid's subjects (SPEC §10: publishers
// send rag.trace.<arm>.<key>), by which the stream assigns partitions.
// A subject token cannot hold every qid (no '.', wildcards, white space,
// and the server's subjects are best kept short and ASCII), so a qid that
// is not a safe token is replaced by "h" and the 16 hex digits of its
// FNV-1a 64-bit hash: every event of one qid still gets the same key and
// so lands on one replica. A safe qid is its own key, which keeps
// subjects readable; a qid that collides with another's hash form only
// shares its partition.
func PartitionKey(qid string) string {
	if safeKeyToken(qid) {
		return qid
	}
	h := fnv.New64a()
	h.Write([]byte(qid)) //nolint:errcheck // hash.Hash never fails
	var b [1 + 16]byte
	b[0] = 'h'
	hex.Encode(b[1:], h.Sum(nil))
	return string(b[:])
}

// safeKeyToken reports whether s is non-empty, at most MaxKeyToken bytes
// and made only of ASCII letters, digits and -_:=+.
func safeKeyToken(s string) bool {
	if s == "" || len(s) > MaxKeyToken {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == ':', c == '=', c == '+':
		default:
			return false
		}
	}
	return true
}

// EventQID is the qid of a JSON event line as the sidecar reads it
// (SPEC §2.2): the top-level "qid" when it is a non-empty string, else the
// alias "q_id" when that is; "" when neither is. It reads no further than
// needed and gives up quietly on invalid JSON (the sidecar rejects such a
// line whatever its subject).
func EventQID(line []byte) string {
	r := qidReaders.Get().(*qidReader)
	defer qidReaders.Put(r)
	r.src.Reset(line)
	r.dec.Reset(&r.src)
	return eventQID(&r.dec)
}

// qidReader is a reusable decoder: a replica that loads some partitions'
// gold reads the qid of every row of the file, most of them to skip.
type qidReader struct {
	src bytes.Reader
	dec jsontext.Decoder
}

var qidReaders = sync.Pool{New: func() any { return new(qidReader) }}

func eventQID(dec *jsontext.Decoder) string {
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	alias := ""
	for dec.PeekKind() == '"' {
		key, err := dec.ReadToken()
		if err != nil {
			return alias
		}
		name := key.String()
		if (name == "qid" || name == "q_id") && dec.PeekKind() == '"' {
			v, err := dec.ReadToken()
			if err != nil {
				return alias
			}
			switch s := v.String(); {
			case s == "":
			case name == "qid":
				return s
			case alias == "":
				alias = s
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return alias
		}
	}
	return alias
}
