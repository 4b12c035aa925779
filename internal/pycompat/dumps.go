package pycompat

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is one key of an Object; Object keeps Python's dict insertion order.
type Member struct {
	Key   string
	Value any
}

// Object is an ordered JSON object.
type Object []Member

// DumpOptions are the json.dumps arguments the reference scorers use.
type DumpOptions struct {
	Indent      int  // 0: one line with ", " and ": " separators
	EnsureASCII bool // escape every non-ASCII character as \uXXXX
}

// Dumps renders v as Python's json.dumps would, without a trailing newline.
// Supported values: Object, string, int, int64, float64, bool, nil,
// []string and []any. Anything else panics: it is a programming error.
func Dumps(v any, opt DumpOptions) []byte {
	return appendValue(nil, v, opt, 0)
}

func appendValue(b []byte, v any, opt DumpOptions, level int) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendJSONFloat(b, x)
	case string:
		return AppendString(b, x, opt.EnsureASCII)
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		return appendList(b, items, opt, level)
	case []any:
		return appendList(b, x, opt, level)
	case Object:
		if len(x) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, m := range x {
			b = appendSeparator(b, i, opt, level+1)
			b = AppendString(b, m.Key, opt.EnsureASCII)
			b = append(b, ": "...)
			b = appendValue(b, m.Value, opt, level+1)
		}
		b = appendClose(b, opt, level)
		return append(b, '}')
	}
	panic(fmt.Sprintf("pycompat.Dumps: unsupported type %T", v))
}

func appendList(b []byte, items []any, opt DumpOptions, level int) []byte {
	if len(items) == 0 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i, it := range items {
		b = appendSeparator(b, i, opt, level+1)
		b = appendValue(b, it, opt, level+1)
	}
	b = appendClose(b, opt, level)
	return append(b, ']')
}

// appendSeparator writes what precedes item i: with an indent, "," (not the
// first) then a newline and indentation; without, ", " between items.
func appendSeparator(b []byte, i int, opt DumpOptions, level int) []byte {
	if opt.Indent == 0 {
		if i > 0 {
			b = append(b, ", "...)
		}
		return b
	}
	if i > 0 {
		b = append(b, ',')
	}
	return appendIndent(b, opt.Indent*level)
}

func appendClose(b []byte, opt DumpOptions, level int) []byte {
	if opt.Indent == 0 {
		return b
	}
	return appendIndent(b, opt.Indent*level)
}

func appendIndent(b []byte, n int) []byte {
	b = append(b, '\n')
	for i := 0; i < n; i++ {
		b = append(b, ' ')
	}
	return b
}

// appendJSONFloat writes float.__repr__, or json's NaN/Infinity spellings.
func appendJSONFloat(b []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, "NaN"...)
	case math.IsInf(x, 1):
		return append(b, "Infinity"...)
	case math.IsInf(x, -1):
		return append(b, "-Infinity"...)
	}
	return appendFloatRepr(b, x)
}

const hexDigits = "0123456789abcdef"

// shortEscapes holds, for each byte json.dumps writes as a backslash and
// a letter, that letter (0 for the others).
var shortEscapes = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// ShortEscape is the letter json.dumps writes after a backslash for c
// (\" \\ \b \f \n \r \t), or 0 where it writes c otherwise.
func ShortEscape(c byte) byte {
	if c >= utf8.RuneSelf {
		return 0
	}
	return shortEscapes[c]
}

// AppendString writes s as a JSON string the way json.dumps does: short
// escapes for \b \f \n \r \t, \uXXXX (lower-case hex) for other control
// characters, and with ensureASCII for everything outside ' '..'~' too,
// astral characters as a surrogate pair.
func AppendString(b []byte, s string, ensureASCII bool) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && shortEscapes[r] != 0:
			b = append(b, '\\', shortEscapes[r])
		case r < 0x20 || ensureASCII && r > '~' && r < 0x10000:
			b = appendU(b, r)
		case ensureASCII && r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			b = appendU(appendU(b, r1), r2)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
