package checks

import (
	"testing"
)

func TestUnderSection(t *testing.T) {
	tests := []struct {
		section, anchor string
		want            bool
	}{
		{"S.4.2", "S.4.2", true},
		{"S.4.2.1", "S.4.2", true},
		{"S.4.2.1.7", "S.4.2", true},
		{"S.4.20", "S.4.2", false},
		{"S.4.2x", "S.4.2", false},
		{"S.4", "S.4.2", false},
		{"S.4.1", "S.4.2", false},
		{"s.4.2", "S.4.2", false},
		{"", "S.4.2", false},
		{"S.4.2", "", false},
		{"", "", false},
		{"S.4.2", "S", true},
	}
	for _, tt := range tests {
		if got := UnderSection(tt.section, tt.anchor); got != tt.want {
			t.Errorf("UnderSection(%q, %q) = %v, want %v", tt.section, tt.anchor, got, tt.want)
		}
	}
}

func TestCovered(t *testing.T) {
	sections := map[string]string{
		"S.4.2.p.Bk011a": "S.4.2",
		"S.4.2.1.p.x":    "S.4.2.1",
		"S.4.20.p.y":     "S.4.20",
		"S.4.1.p.Bk010":  "S.4.1",
		"nosec":          "",
	}
	sectionOf := func(id string) (string, bool) {
		s, ok := sections[id]
		return s, ok
	}
	gold := []string{"S.4.2.p.Bk011a", "S.4.2.p.Bk011b"}
	tests := []struct {
		name      string
		citations []string
		gold      []string
		anchor    string
		sectionOf func(string) (string, bool)
		want      bool
	}{
		{"cites gold", []string{"S.4.2.p.Bk011b"}, gold, "", nil, true},
		{"cites gold second", []string{"S.4.1.p.Bk010", "S.4.2.p.Bk011b"}, gold, "S.9", sectionOf, true},
		{"cites the anchor section", []string{"S.4.2.p.Bk011a"}, nil, "S.4.2", sectionOf, true},
		{"cites under the anchor", []string{"S.4.2.1.p.x"}, nil, "S.4.2", sectionOf, true},
		{"S.4.20 is not under S.4.2", []string{"S.4.20.p.y"}, nil, "S.4.2", sectionOf, false},
		{"sibling section", []string{"S.4.1.p.Bk010"}, gold, "S.4.2", sectionOf, false},
		{"unknown item", []string{"S.4.2.zzz"}, nil, "S.4.2", sectionOf, false},
		{"item without section", []string{"nosec"}, nil, "S.4.2", sectionOf, false},
		{"no anchor never matches a section", []string{"nosec", "S.4.2.p.Bk011a"}, nil, "", sectionOf, false},
		{"no sectionOf", []string{"S.4.2.1.p.x"}, gold, "S.4.2", nil, false},
		{"no citations", nil, gold, "S.4.2", sectionOf, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Covered(tt.citations, tt.gold, tt.anchor, tt.sectionOf); got != tt.want {
				t.Errorf("Covered(%q, %q, %q) = %v, want %v", tt.citations, tt.gold, tt.anchor, got, tt.want)
			}
		})
	}
}

func TestAnchorDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"S.4.2", "S.4.2", 0},
		{"S.4.2.1", "S.4.2", 1},
		{"S.4.2", "S.4.2.1", 1},
		{"S.4.1", "S.4.2", 2},
		{"S.4.20", "S.4.2", 2},
		{"S.4.2.1", "S.5", 4},
		{"S", "T", 2},
		{"A.4.2", "S.4.2", 6},
		{"", "", 0},
		{"", "S.4.2", 3},
		{"S.4", "", 2},
		{"S..4", "S.4", 3},
	}
	for _, tt := range tests {
		if got := AnchorDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("AnchorDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
