package pycompat

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsSpace reports whether Python's str.isspace() (and so re's \s on str
// patterns) holds for r. It differs from unicode.IsSpace by also covering the
// information separators U+001C..U+001F.
func IsSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0d, r >= 0x1c && r <= 0x20:
		return true
	case r < 0x85:
		return false
	}
	switch r {
	case 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// Strip is Python's str.strip() with no arguments.
func Strip(s string) string {
	// The usual claim starts and ends with ASCII that is not a space: it
	// is its own strip, found without decoding runes.
	if n := len(s); n > 0 && s[0] > ' ' && s[0] < utf8.RuneSelf && s[n-1] > ' ' && s[n-1] < utf8.RuneSelf {
		return s
	}
	return strings.TrimFunc(s, IsSpace)
}

// IsWord reports whether r matches Python's re \w on str patterns:
// str.isalnum() or '_'. Combining marks are not word characters in Python.
func IsWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Lower is Python 3's str.lower(): the full lower-case mapping, which unlike
// strings.ToLower turns U+0130 into "i\u0307" and applies the Final_Sigma
// rule to U+03A3.
func Lower(s string) string {
	ascii := true
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return s
		}
		b := make([]byte, len(s))
		for i := 0; i < len(s); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i, r := range s {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(s, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma follows CPython's handle_capital_sigma: the sigma at byte i is
// final when preceded by a cased letter and not followed by one, skipping
// case-ignorable characters on both sides.
func finalSigma(s string, i int) bool {
	j := i
	var c rune
	found := false
	for j > 0 {
		var size int
		c, size = utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if !isCaseIgnorable(c) {
			found = true
			break
		}
	}
	if !found || !isCased(c) {
		return false
	}
	for _, c := range s[i+utf8.RuneLen(0x3a3):] {
		if !isCaseIgnorable(c) {
			return !isCased(c)
		}
	}
	return true
}

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// isCaseIgnorable is Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk and the
// Word_Break classes MidLetter, MidNumLet and Single_Quote.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// SplitLines iterates over data the way Python iterates over a file opened in
// text mode: universal newlines (\n, \r\n and a lone \r all end a line). It
// yields 1-based line numbers and the line without its terminator; a final
// line without a terminator is yielded too. Returning false stops.
func SplitLines(data []byte, yield func(lineNo int, line []byte) bool) {
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		// Two vectorised searches beat a byte loop: find the \n, then any
		// \r before it.
		end, next := len(data), len(data)
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			end, next = nl, nl+1
		}
		if cr := bytes.IndexByte(data[:end], '\r'); cr >= 0 {
			end, next = cr, cr+1
			if next < len(data) && data[next] == '\n' {
				next++
			}
		}
		if !yield(lineNo, data[:end]) {
			return
		}
		data = data[next:]
	}
}
