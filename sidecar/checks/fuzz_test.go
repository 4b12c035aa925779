package checks

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// The ASCII fast paths of IsRefusal and Containment must agree with the
// reference's plain lower-then-compare on every input.

func FuzzIsRefusal(f *testing.F) {
	for _, s := range []string{"not in context", " NOT IN CONTEXT\n", "Not in context.", "not in conte\u212ax", "\x1cnot in context", "NOT İN CONTEXT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, claim string) {
		want := pycompat.Lower(pycompat.Strip(claim)) == RefusalToken
		if got := IsRefusal(claim); got != want {
			t.Fatalf("IsRefusal(%q) = %v, reference %v", claim, got, want)
		}
	})
}

func FuzzContainment(f *testing.F) {
	f.Add("X rejects NULL keys.", "rejects null keys", "abc")
	f.Add("ΟΔΟΣ ok", "οδος ", "İnce")
	f.Fuzz(func(t *testing.T, claim, a, b string) {
		subs := []string{a, b}
		want := false
		c := pycompat.Lower(claim)
		for _, s := range subs {
			s = pycompat.Lower(s)
			if utf8.RuneCountInString(s) >= 5 && strings.Contains(c, s) {
				want = true
			}
		}
		if got := Containment(claim, subs); got != want {
			t.Fatalf("Containment(%q, %q) = %v, reference %v", claim, subs, got, want)
		}
	})
}

// FuzzContainsLowerASCII: the IndexByte search agrees with lowering the
// haystack and strings.Contains, on ASCII input.
func FuzzContainsLowerASCII(f *testing.F) {
	for _, c := range [][2]string{{"X rejects NULL keys.", "null"}, {"aAaAb", "aab"}, {"", ""}, {"abc", ""}, {"ab", "abc"}, {"..A.a", ".a"}, {"Zz", "zz"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, hay, needle string) {
		if !isASCII(hay) || !isASCII(needle) {
			return
		}
		needle = strings.ToLower(needle)
		want := strings.Contains(strings.ToLower(hay), needle)
		if got := containsLowerASCII(hay, needle); got != want {
			t.Fatalf("containsLowerASCII(%q, %q) = %v, want %v", hay, needle, got, want)
		}
	})
}
