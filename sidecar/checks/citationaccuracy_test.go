package checks

import (
	"math"
	"testing"

	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

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
