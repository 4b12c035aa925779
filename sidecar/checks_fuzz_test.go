package sidecar

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/sidecar/pycompat"
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
