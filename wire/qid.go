package wire

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

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
