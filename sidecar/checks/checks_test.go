package checks

import "testing"

// Expectations below were checked by hand against Python 3 running the
// reference code of seed 002.

func TestIsRefusal(t *testing.T) {
	tests := []struct {
		name  string
		claim string
		want  bool
	}{
		{"exact", "not in context", true},
		{"missing claim", "", false},
		{"upper with spaces and newline", "  NOT IN CONTEXT\n", true},
		{"title case", "Not In Context", true},
		{"trailing period", "not in context.", false},
		{"double inner space", "not  in context", false},
		{"inner NBSP is not a space", "Not\u00a0in context", false},
		{"outer NBSP is stripped", "not in context\u00a0", true},
		{"info separators are stripped", "\x1cnot in context\x1f", true},
		{"ideographic space and line separator", "\u3000not in context\u2028", true},
		{"NEL is stripped", "\u0085not in context", true},
		{"zero-width space is not stripped", "\u200bnot in context", false},
		{"BOM is not stripped", "\ufeffnot in context", false},
		{"Turkish dotted I is not i", "NOT \u0130N CONTEXT", false},
		{"a sentence", "X rejects null keys.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsRefusal(tt.claim); got != tt.want {
				t.Errorf("IsRefusal(%q) = %v, want %v", tt.claim, got, tt.want)
			}
		})
	}
}

func TestContainment(t *testing.T) {
	tests := []struct {
		name    string
		claim   string
		substrs []string
		want    bool
	}{
		{"seed example", "X rejects null keys.", []string{"rejects null keys"}, true},
		{"case-insensitive", "X rejects null keys.", []string{"REJECTS NULL"}, true},
		{"second substring matches", "Only domain example.com is allowed.", []string{"nothing here", "only domain example.com"}, true},
		{"no match", "X accepts null keys.", []string{"rejects null keys"}, false},
		{"nil list is false", "anything", nil, false},
		{"empty list is vacuously true", "anything", []string{}, true},
		{"empty list, empty claim", "", []string{}, true},
		{"nil list, empty claim", "", nil, false},
		{"too short substring", "abc", []string{"abc"}, false},
		{"only short substrings", "abcd", []string{"abcd", "bc"}, false},
		{"exactly 5", "hello world", []string{"HELLO"}, true},
		{"empty substring", "hello", []string{""}, false},
		// Final sigma: "ΜΕΓΑΣ" lowers to "μεγας" (final ς) alone, but to
		// "μεγασ…" inside a longer word.
		{"final sigma matches final sigma", "ΜΕΓΑΣ", []string{"ΜΕΓΑΣ"}, true},
		{"final sigma vs medial sigma", "μεγασ", []string{"ΜΕΓΑΣ"}, false},
		{"sigma followed by a letter is medial", "ΜΕΓΑΣΑ", []string{"ΜΕΓΑΣ"}, false},
		{"final sigma in a sentence", "Ο ΜΕΓΑΣ ΑΛΕΞΑΝΔΡΟΣ", []string{"μεγας"}, true},
		{"sigma before space is final", "ΟΔΟΣ ΚΑΙ", []string{"ΟΔΟΣ "}, true},
		{"medial sigma in claim vs final in gold", "οδοσ και", []string{"ΟΔΟΣ "}, false},
		// U+0130 lowers to "i" + U+0307.
		{"Turkish dotted I both sides", "\u0130STANBUL", []string{"\u0130stanbul"}, true},
		{"Turkish dotted I vs plain i", "istanbul", []string{"\u0130stanbul"}, false},
		{"length after lowering: 3 code points become 6", "\u0130\u0130\u0130", []string{"\u0130\u0130\u0130"}, true},
		{"length after lowering: 2 code points become 4", "\u0130\u0130", []string{"\u0130\u0130"}, false},
		{"Kelvin sign in gold", "KELVIN scale", []string{"\u212aelvin"}, true},
		{"Kelvin sign in claim", "\u212aELVIN", []string{"kelvin"}, true},
		{"combining acute vs precomposed", "caf\u00e9", []string{"cafe\u0301"}, false},
		{"combining acute both sides", "CAFE\u0301 au lait", []string{"cafe\u0301"}, true},
		{"precomposed is 4 code points", "caf\u00e9", []string{"caf\u00e9"}, false},
		{"titlecase digraph", "\u01c5emal", []string{"\u01c5emal"}, true},
		{"sharp s does not expand on lower", "stra\u00dfe", []string{"STRASSE"}, false},
		{"CJK 6 bytes but 2 code points", "日本について", []string{"日本"}, false},
		{"CJK 5 code points", "日本語ですね", []string{"日本語です"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Containment(tt.claim, tt.substrs); got != tt.want {
				t.Errorf("Containment(%q, %#v) = %v, want %v", tt.claim, tt.substrs, got, tt.want)
			}
		})
	}
}

func TestCitationHit(t *testing.T) {
	ret := []string{"p1#1", "p1#2", "p2#1"}
	tests := []struct {
		name      string
		c         Citations
		gold      []string
		retrieved []string
		want      bool
	}{
		{"hit", Citations{IDs: []string{"p1#2"}}, []string{"p1#2"}, ret, true},
		{"hit among several", Citations{IDs: []string{"p1#2", "p1#1"}}, []string{"p1#2", "x"}, ret, true},
		{"duplicate citations", Citations{IDs: []string{"p1#2", "p1#2"}}, []string{"p1#2"}, ret, true},
		{"citation outside retrieved", Citations{IDs: []string{"p1#2", "p9"}}, []string{"p1#2"}, ret, false},
		{"gold cited but nothing retrieved", Citations{IDs: []string{"p1#2"}}, []string{"p1#2"}, nil, false},
		{"no overlap with gold", Citations{IDs: []string{"p1#1"}}, []string{"p1#2"}, ret, false},
		{"no citations, gold non-empty", Citations{IDs: []string{}}, []string{"p1#2"}, ret, false},
		{"nil citations, gold non-empty", Citations{}, []string{"x"}, nil, false},
		{"no citations, empty gold", Citations{IDs: []string{}}, []string{}, ret, true},
		{"no citations, nil gold", Citations{}, nil, ret, true},
		{"no citations, nil gold, nothing retrieved", Citations{}, nil, nil, true},
		{"citations, empty gold", Citations{IDs: []string{"p1#1"}}, []string{}, ret, false},
		{"citations, nil gold", Citations{IDs: []string{"p1#1"}}, nil, ret, false},
		{"not a list", Citations{NotList: true}, []string{"p1#2"}, ret, false},
		{"not a list, empty gold", Citations{NotList: true}, nil, ret, false},
		{"not a list wins over ids", Citations{IDs: []string{"p1#2"}, NotList: true}, []string{"p1#2"}, ret, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CitationHit(tt.c, tt.gold, tt.retrieved); got != tt.want {
				t.Errorf("CitationHit(%+v, %q, %q) = %v, want %v", tt.c, tt.gold, tt.retrieved, got, tt.want)
			}
		})
	}
}
