package checks

import (
	"strings"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/window"
)

func init() { evaluations = append(evaluations, containmentEvaluation) }

// containmentEvaluation: pass when a gold substring is in the claim (C).
func containmentEvaluation(o *window.Observation) (Evaluation, bool) {
	return passFail("containment", o.Contained), o.HasAnswer
}

// minSubstrLen is the reference scorer's minimum gold substring length, in
// code points of the lower-cased substring.
const minSubstrLen = 5

// Containment is the reference contains_substr(claim, subs): some gold
// substring, lower-cased and then at least 5 code points long, occurs in the
// lower-cased claim. The claim is expected already stripped.
//
// Quirk kept from the reference (`return subs == []`): when nothing matches,
// an empty non-nil list is vacuously true, while a nil list (gold field
// missing or null) is false.
func Containment(claim string, substrs []string) bool {
	set := prepareSubstrs(substrs)
	return set.contains(claim, isASCII(claim))
}

// substrSet is a gold item's substring list as Containment reads it,
// prepared once per gold load instead of once per event: lowered, those
// shorter than minSubstrLen dropped, ASCII ones marked.
type substrSet struct {
	subs []loweredSubstr
	// vacuous: the list was empty, not nil, so a claim that matches
	// nothing is still contained (the reference's `return subs == []`).
	vacuous bool
}

type loweredSubstr struct {
	s     string
	ascii bool
}

func prepareSubstrs(substrs []string) substrSet {
	set := substrSet{vacuous: substrs != nil && len(substrs) == 0}
	for _, s := range substrs {
		s = pycompat.Lower(s)
		// Length after lowering: "İİİ" is 3 code points but lowers to 6.
		if utf8.RuneCountInString(s) >= minSubstrLen {
			set.subs = append(set.subs, loweredSubstr{s, isASCII(s)})
		}
	}
	return set
}

// contains is Containment(claim, the list set was prepared from);
// asciiClaim says whether claim is all ASCII.
func (set *substrSet) contains(claim string, asciiClaim bool) bool {
	lowered, c := false, ""
	for _, s := range set.subs {
		if asciiClaim && s.ascii {
			// Same result as lowering the claim, without the copy.
			if containsLowerASCII(claim, s.s) {
				return true
			}
			continue
		}
		if !lowered {
			c, lowered = pycompat.Lower(claim), true
		}
		if strings.Contains(c, s.s) {
			return true
		}
	}
	return set.vacuous
}

// containsLowerASCII reports whether the ASCII lower-casing of hay contains
// needle, an already lower-cased ASCII string.
func containsLowerASCII(hay, needle string) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	// A match starts with needle[0] in either case: the next of each is
	// found with IndexByte, and only there are the strings compared.
	c0, c1 := needle[0], needle[0]
	if 'a' <= c0 && c0 <= 'z' {
		c1 = c0 - ('a' - 'A')
	}
	lim := len(hay) - n + 1
	next := func(i int, c byte) int {
		if j := strings.IndexByte(hay[i:lim], c); j >= 0 {
			return i + j
		}
		return lim
	}
	n0, n1 := -1, -1 // next position of c0, c1 at or after i
	for i := 0; i < lim; {
		if n0 < i {
			n0 = next(i, c0)
		}
		if n1 < i {
			n1 = n0
			if c1 != c0 {
				n1 = next(i, c1)
			}
		}
		p := min(n0, n1)
		if p >= lim {
			return false
		}
		if equalLowerASCII(hay[p:p+n], needle) {
			return true
		}
		i = p + 1
	}
	return false
}

// equalLowerASCII: lowering a gives b (a, b ASCII, the same length).
func equalLowerASCII(a, b string) bool {
	for j := 0; j < len(b); j++ {
		if lowerASCII(a[j]) != b[j] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
