package gen

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// jw appends one JSON line to b. Its style knobs produce JSON that is valid
// but spelled in the many ways real producers spell it: Python's
// ensure_ascii escapes (with lower- or upper-case hex), escaped solidus,
// escaped letters inside member names, and Python's default ", " / ": "
// separators.
type jw struct {
	b        []byte
	ascii    bool // \uXXXX for everything outside ' '..'~'
	upperHex bool
	escSlash bool // "/" as "\/"
	escKeys  bool // first letter of each member name as \u00XX
	spaced   bool // ", " and ": " like json.dumps
	afterKey bool
	depth    int
	nonEmpty [16]bool
}

func (w *jw) reset(b []byte) {
	*w = jw{b: b}
}

func (w *jw) sep() {
	if w.afterKey {
		w.afterKey = false
		return
	}
	if w.depth > 0 {
		if w.nonEmpty[w.depth] {
			w.b = append(w.b, ',')
			if w.spaced {
				w.b = append(w.b, ' ')
			}
		}
		w.nonEmpty[w.depth] = true
	}
}

func (w *jw) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.nonEmpty[w.depth] = false
}

func (w *jw) close(c byte) {
	w.depth--
	w.b = append(w.b, c)
}

// obj/arr open a value in value position (after key or as array element).
func (w *jw) obj()    { w.sep(); w.open('{') }
func (w *jw) arr()    { w.sep(); w.open('[') }
func (w *jw) endObj() { w.close('}') }
func (w *jw) endArr() { w.close(']') }

// rootObj opens the top-level object.
func (w *jw) rootObj() { w.open('{') }

// key writes a member name; the next call writes its value.
func (w *jw) key(k string) {
	w.sep()
	if w.escKeys && len(k) > 0 && k[0] < utf8.RuneSelf {
		w.b = append(w.b, '"')
		w.b = w.appendU(w.b, rune(k[0]))
		w.b = w.appendBody(w.b, k[1:])
		w.b = append(w.b, '"')
	} else {
		w.b = w.appendStr(w.b, k)
	}
	w.b = append(w.b, ':')
	if w.spaced {
		w.b = append(w.b, ' ')
	}
	w.afterKey = true
}

func (w *jw) str(s string) {
	w.sep()
	w.b = w.appendStr(w.b, s)
}

func (w *jw) raw(lit string) {
	w.sep()
	w.b = append(w.b, lit...)
}

func (w *jw) boolean(v bool) {
	if v {
		w.raw("true")
	} else {
		w.raw("false")
	}
}

func (w *jw) null() { w.raw("null") }

func (w *jw) int(v int) {
	w.sep()
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}

// float writes v with the given number of decimals ('f' format).
func (w *jw) float(v float64, prec int) {
	w.sep()
	w.b = strconv.AppendFloat(w.b, v, 'f', prec, 64)
}

func (w *jw) strs(list []string) {
	w.arr()
	for _, s := range list {
		w.str(s)
	}
	w.endArr()
}

const lowerHex = "0123456789abcdef"
const upperHexDigits = "0123456789ABCDEF"

func (w *jw) appendU(b []byte, r rune) []byte {
	h := lowerHex
	if w.upperHex {
		h = upperHexDigits
	}
	return append(b, '\\', 'u', h[r>>12&0xf], h[r>>8&0xf], h[r>>4&0xf], h[r&0xf])
}

func (w *jw) appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	b = w.appendBody(b, s)
	return append(b, '"')
}

// plain[mode][c] tells whether byte c is written as it is; mode bit 0 is
// ascii, bit 1 escSlash.
var plain = func() (t [4][256]bool) {
	for mode := range t {
		for c := 0x20; c < 256; c++ {
			t[mode][c] = c != '"' && c != '\\' && !(c == '/' && mode&2 != 0) && !(c >= utf8.RuneSelf && mode&1 != 0)
		}
	}
	return t
}()

func (w *jw) appendBody(b []byte, s string) []byte {
	mode := 0
	if w.ascii {
		mode |= 1
	}
	if w.escSlash {
		mode |= 2
	}
	tab := &plain[mode]
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if tab[c] {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch e := pycompat.ShortEscape(c); {
		case e != 0:
			b = append(b, '\\', e)
			i++
		case c == '/': // here only with escSlash
			b = append(b, '\\', '/')
			i++
		case c < 0x20:
			b = w.appendU(b, rune(c))
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				b = w.appendU(w.appendU(b, r1), r2)
			} else {
				b = w.appendU(b, r)
			}
			i += size
		}
		start = i
	}
	return append(b, s[start:]...)
}
