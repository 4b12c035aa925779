// Package sidecar scores trace events: the per-event checks of SPEC §3
// (refusal, containment, citation hit, retrieval, coverage, citation
// accuracy, anchor proximity, ΔS and λ), triage and arbitration. The checks
// are pure functions over already-decoded values.
package sidecar

import (
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// RefusalToken is the only correct answer to an unanswerable question.
const RefusalToken = "not in context"

// minSubstrLen is the reference scorer's minimum gold substring length, in
// code points of the lower-cased substring.
const minSubstrLen = 5

// IsRefusal reports whether claim is the refusal token. A missing or null
// claim is passed as "" and counts as shipped.
//
// Strip then lower, in Python's sense, as the reference does: surrounding
// NBSP and U+001C..U+001F are stripped, an inner NBSP is not a space.
func IsRefusal(claim string) bool {
	c := pycompat.Strip(claim)
	return isStrippedRefusal(c, isASCII(c))
}

// isStrippedRefusal is IsRefusal of a claim already stripped, ascii
// saying whether it is all ASCII.
func isStrippedRefusal(c string, ascii bool) bool {
	if ascii {
		// Lowering ASCII is ASCII case folding; skip the copy.
		return len(c) == len(RefusalToken) && strings.EqualFold(c, RefusalToken)
	}
	// Lowering never shortens a string in code points, so a longer claim
	// cannot lower to the token.
	if utf8.RuneCountInString(c) > utf8.RuneCountInString(RefusalToken) {
		return false
	}
	return pycompat.Lower(c) == RefusalToken
}

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

func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 { // 8 bytes at a time: no byte has its top bit
		if binary.LittleEndian.Uint64([]byte(s[i:i+8]))&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
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

// Citations is answer_json.citations as sent. The reference reads it as
// `aj.get("citations") or []`, so an absent or falsy value (null, false, 0,
// "", {}) arrives here as an empty list; a truthy value that is not a JSON
// array sets NotList.
type Citations struct {
	IDs     []string
	NotList bool // truthy but not an array: H is false
}

// CitationHit is the reference citation_hit: the citations are a list, all
// of them are retrieved ids, and they share an id with gold; with no gold
// citations only an empty citation list hits.
func CitationHit(c Citations, gold, retrieved []string) bool {
	if c.NotList {
		return false
	}
	if !allIn(c.IDs, retrieved) {
		return false
	}
	if len(gold) == 0 {
		return len(c.IDs) == 0
	}
	return anyIn(c.IDs, gold)
}

// smallSet is the list length up to which a linear scan beats building a
// map; retrieval lists are short, so the checks normally allocate nothing.
const smallSet = 32

// idSet returns the distinct ids of ids.
func idSet(ids []string) map[string]struct{} {
	m := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// allIn reports whether every id of ids is in set (true for no ids).
func allIn(ids, set []string) bool {
	if len(set) > smallSet && len(ids) > 1 {
		m := idSet(set)
		for _, id := range ids {
			if _, ok := m[id]; !ok {
				return false
			}
		}
		return true
	}
	for _, id := range ids {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

// anyIn reports whether some id of ids is in set.
func anyIn(ids, set []string) bool {
	if len(set) > smallSet && len(ids) > 1 {
		m := idSet(set)
		for _, id := range ids {
			if _, ok := m[id]; ok {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		if slices.Contains(set, id) {
			return true
		}
	}
	return false
}

// distinctCount is |set(ids)|.
func distinctCount(ids []string) int {
	if len(ids) > smallSet {
		return len(idSet(ids))
	}
	n := 0
	for i, id := range ids {
		if !slices.Contains(ids[:i], id) {
			n++
		}
	}
	return n
}

// intersectCount is |set(a) ∩ set(b)|.
func intersectCount(a, b []string) int {
	if len(a) > smallSet || len(b) > smallSet {
		return countIn(idSet(a), idSet(b))
	}
	n := 0
	for i, id := range a {
		if !slices.Contains(a[:i], id) && slices.Contains(b, id) {
			n++
		}
	}
	return n
}
