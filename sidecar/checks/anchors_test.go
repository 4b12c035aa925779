package checks

import (
	"math"
	"testing"

	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
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

func TestCitationAccurate(t *testing.T) {
	gold := []string{"a", "b"}
	goldOff := map[string][2]int64{
		"a":   {204611, 205279},
		"c":   {0, 10},
		"big": {math.MaxInt64, math.MaxInt64},
	}
	goldWithBig := []string{"a", "big"}
	tests := []struct {
		name    string
		first   string
		off     [2]int64
		haveOff bool
		gold    []string
		tol     int64
		want    bool
	}{
		{"exact", "a", [2]int64{204611, 205279}, true, gold, 30, true},
		{"both ends at tolerance", "a", [2]int64{204641, 205249}, true, gold, 30, true},
		{"start just past tolerance", "a", [2]int64{204580, 205279}, true, gold, 30, false},
		{"end just past tolerance", "a", [2]int64{204611, 205310}, true, gold, 30, false},
		{"zero tolerance exact", "a", [2]int64{204611, 205279}, true, gold, 0, true},
		{"zero tolerance off by one", "a", [2]int64{204611, 205280}, true, gold, 0, false},
		{"negative tolerance", "a", [2]int64{204611, 205279}, true, gold, -1, false},
		{"no citation", "", [2]int64{204611, 205279}, true, gold, 30, false},
		{"no offsets", "a", [2]int64{204611, 205279}, false, gold, 30, false},
		{"gold id without gold offsets", "b", [2]int64{0, 10}, true, gold, 30, false},
		{"not gold even with offsets", "c", [2]int64{0, 10}, true, gold, 30, false},
		{"no overflow at extremes", "big", [2]int64{math.MinInt64, math.MinInt64}, true, goldWithBig, math.MaxInt64, false},
		{"extreme but equal", "big", [2]int64{math.MaxInt64, math.MaxInt64 - 5}, true, goldWithBig, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CitationAccurate(tt.first, tt.off, tt.haveOff, tt.gold, goldOff, tt.tol); got != tt.want {
				t.Errorf("CitationAccurate(%q, %v, %v, %q, tol=%d) = %v, want %v", tt.first, tt.off, tt.haveOff, tt.gold, tt.tol, got, tt.want)
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

// TestCitationAccuracyCounters: Evaluate counts citation_accuracy through
// its check: eligible when the gold item has relevant_offsets, accurate
// when the first citation's offsets (citation_offsets, else its topk
// item's) are within the tolerance.
func TestCitationAccuracyCounters(t *testing.T) {
	offsets := func(a, b int64) *[2]int64 { return &[2]int64{a, b} }
	tests := []struct {
		name               string
		relevant           map[string][2]int64
		citationOffsets    map[string][2]int64
		topkOffsets        *[2]int64
		eligible, accurate bool
	}{
		{"no relevant_offsets", nil, map[string][2]int64{"a": {100, 200}}, nil, false, false},
		{"citation_offsets within tolerance", map[string][2]int64{"a": {100, 200}}, map[string][2]int64{"a": {110, 190}}, nil, true, true},
		{"citation_offsets past tolerance", map[string][2]int64{"a": {100, 200}}, map[string][2]int64{"a": {150, 200}}, nil, true, false},
		{"topk offsets when the answer has none", map[string][2]int64{"a": {100, 200}}, nil, offsets(95, 205), true, true},
		{"citation_offsets before topk offsets", map[string][2]int64{"a": {100, 200}}, map[string][2]int64{"a": {0, 10}}, offsets(100, 200), true, false},
		{"no offsets at all", map[string][2]int64{"a": {100, 200}}, nil, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &wire.TraceEvent{QID: "q", HasAnswer: true,
				TopK:   []wire.TopKItem{{ID: "a", Offsets: tt.topkOffsets}},
				Answer: wire.Answer{Claim: "the answer", Citations: []string{"a"}, CitationOffsets: tt.citationOffsets}}
			g := wire.Gold{QID: "q", Answerable: true, GoldCitations: []string{"a"}, RelevantOffsets: tt.relevant}
			var o window.Observation
			if err := Evaluate(e, NewGold(g), true, Options{Ks: []int{5}, Tolerance: 30}, &o); err != nil {
				t.Fatal(err)
			}
			eligible, accurate := o.Counters.Has(window.CountCitationAccEligible), o.Counters.Has(window.CountCitationAccurate)
			if eligible != tt.eligible || accurate != tt.accurate {
				t.Errorf("eligible %v accurate %v, want %v %v", eligible, accurate, tt.eligible, tt.accurate)
			}
		})
	}
}
