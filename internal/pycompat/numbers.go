package pycompat

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Round is Python's round(x, ndigits) for a float: the exact binary value
// rounded half-to-even at ndigits decimals (strconv rounds the exact value
// the same way), then read back as the nearest float.
func Round(x float64, ndigits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', ndigits, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// FloatRepr is Python's repr(float): the shortest round-tripping digits,
// fixed notation with a trailing ".0" when 1e-4 <= |x| < 1e16, otherwise
// exponent notation with a signed two-digit-minimum exponent.
func FloatRepr(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return string(appendFloatRepr(nil, x))
}

func appendFloatRepr(dst []byte, x float64) []byte {
	e := strconv.FormatFloat(x, 'e', -1, 64) // "-d.ddde±XX"
	neg := e[0] == '-'
	if neg {
		e = e[1:]
		dst = append(dst, '-')
	}
	mant, expPart, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	if x == 0 {
		return append(dst, "0.0"...)
	}
	decpt := exp + 1 // value = 0.DIGITS × 10^decpt
	if decpt <= -4 || decpt > 16 {
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	switch {
	case decpt <= 0:
		dst = append(dst, "0."...)
		for i := 0; i < -decpt; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	case decpt >= len(digits):
		dst = append(dst, digits...)
		for i := len(digits); i < decpt; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, ".0"...)
	default:
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		dst = append(dst, digits[decpt:]...)
	}
	return dst
}

var errSyntax = errors.New("invalid syntax")

// ParseFloat is Python's float(str): surrounding white space is ignored,
// underscores may separate digits, and inf, infinity and nan are accepted in
// any case. Hexadecimal forms, which strconv would take, are refused.
func ParseFloat(s string) (float64, error) {
	t := Strip(s)
	body := strings.TrimLeft(t, "+-")
	if len(t)-len(body) > 1 {
		return 0, errSyntax
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		return strconv.ParseFloat(t, 64)
	}
	clean, ok := decimalFloat(body)
	if !ok {
		return 0, errSyntax
	}
	f, err := strconv.ParseFloat(t[:len(t)-len(body)]+clean, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errSyntax
	}
	return f, nil // out of range gives ±inf or 0, as Python does
}

// decimalFloat checks digits [. digits] [e [sign] digits] with single
// underscores between digits, and returns it without the underscores.
func decimalFloat(s string) (string, bool) {
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
		exp = strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
		if _, ok := digitRun(exp); !ok {
			return "", false
		}
	}
	intPart, frac, hasDot := strings.Cut(mant, ".")
	okInt := intPart == ""
	if !okInt {
		_, okInt = digitRun(intPart)
	}
	okFrac := frac == ""
	if !okFrac {
		_, okFrac = digitRun(frac)
	}
	if !okInt || !okFrac || intPart == "" && frac == "" || !hasDot && frac != "" {
		return "", false
	}
	return strings.ReplaceAll(s, "_", ""), true
}

// digitRun accepts one or more ASCII digits with single underscores between
// them.
func digitRun(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	prevDigit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			prevDigit = true
		case c == '_' && prevDigit && i+1 < len(s):
			prevDigit = false
		default:
			return "", false
		}
	}
	return strings.ReplaceAll(s, "_", ""), true
}

// ParseInt is Python's int(str) in base 10: white space around, one sign,
// underscores between digits, leading zeros allowed.
func ParseInt(s string) (int, error) {
	t := Strip(s)
	sign := ""
	if t != "" && (t[0] == '+' || t[0] == '-') {
		sign, t = t[:1], t[1:]
	}
	digits, ok := digitRun(t)
	if !ok {
		return 0, errSyntax
	}
	return strconv.Atoi(sign + digits)
}
