package sidecar

import "unicode/utf8"

// maxDetail bounds the detail of a rejection in the dead-letter header and
// the log: a decoder error can quote a JSON pointer 10000 levels deep.
const maxDetail = 512

// clipDetail cuts detail to at most maxDetail bytes, on a rune boundary.
func clipDetail(detail string) string {
	if len(detail) <= maxDetail {
		return detail
	}
	i := maxDetail
	for i > 0 && !utf8.RuneStart(detail[i]) {
		i--
	}
	return detail[:i] + "…"
}
