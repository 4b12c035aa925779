package stream

import (
	"encoding/hex"
	"hash/fnv"
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
