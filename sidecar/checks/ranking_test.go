package checks

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/shadoweval/shadoweval/window"
)

// The ranking metrics of a few rankings worked out by hand from trec_eval's
// definitions (the golden test in offline/eval holds them to trec_eval's
// own output).
func TestRankingMetrics(t *testing.T) {
	l3 := math.Log2(3)
	for _, tc := range []struct {
		name      string
		gold, ids []string
		k         int
		ndcg, ap  float64
		hit       bool
		rr, rprec float64
	}{
		{"perfect", []string{"a", "b"}, []string{"a", "b", "x"}, 3, 1, 1, true, 1, 1},
		{"second", []string{"a"}, []string{"x", "a"}, 5, 1 / l3, 0.5, true, 0.5, 0},
		{"past k", []string{"a"}, []string{"x", "y", "a"}, 2, 0, 0, false, 1.0 / 3, 0},
		{"ap over |G|, not min(|G|,k)", []string{"a", "b", "c"}, []string{"a", "x"}, 1, 1, 1.0 / 3, true, 1, 1.0 / 3},
		{"duplicates keep their first rank", []string{"r1", "r2"}, []string{"u1", "r1", "u1", "r1", "r2"}, 3, (1/l3 + 0.5) / (1 + 1/l3), (0.5 + 2.0/3) / 2, true, 0.5, 0.5},
		{"nothing retrieved", []string{"a"}, nil, 10, 0, 0, false, 0, 0},
		{"short list", []string{"a", "b", "c"}, []string{"a"}, 3, 1 / (1 + 1/l3 + 0.5), 1.0 / 3, true, 1, 1.0 / 3},
	} {
		r := Rank(tc.gold, tc.ids)
		got := []float64{r.NDCG(tc.k), r.AP(tc.k), r.RR(), r.RPrecision()}
		want := []float64{tc.ndcg, tc.ap, tc.rr, tc.rprec}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-15 {
				t.Errorf("%s: nDCG, AP, RR, R-prec %v, want %v", tc.name, got, want)
				break
			}
		}
		if r.Hit(tc.k) != tc.hit {
			t.Errorf("%s: hit %v", tc.name, r.Hit(tc.k))
		}
	}
}

// Evaluate's observation carries the ranking metrics at the cut-offs, and
// nothing of them for an empty G: those questions are out of the means.
func TestRankingObservation(t *testing.T) {
	ks := []int{1, 3}
	var o window.Observation
	if !retrievalAtKs([]string{"g"}, []string{"x", "g"}, ks, &o) {
		t.Fatal("refused")
	}
	if !o.Counters.Has(window.CountRanked) || o.HitAtK != 0b10 || len(o.Means) != window.MeansLen(2) {
		t.Fatalf("observation %+v", o)
	}
	at := func(b window.SumBlock, i int) float64 { return o.Means[window.MeanIndex(b, i, 2)] }
	if at(window.SumNDCGAtK, 0) != 0 || at(window.SumNDCGAtK, 1) != 1/math.Log2(3) || at(window.SumMAPAtK, 1) != 0.5 ||
		at(window.SumRR, 0) != 0.5 || at(window.SumRPrecision, 0) != 0 {
		t.Errorf("means %v", o.Means)
	}
	var none window.Observation
	retrievalAtKs(nil, []string{"x"}, ks, &none)
	if none.Counters.Has(window.CountRanked) || none.HitAtK != 0 || len(none.Means) != 0 {
		t.Errorf("empty G: %+v", none)
	}
}

// The fast path allocates nothing once the observation's slices have
// grown: the event path pools its observations.
func TestRankingNoAllocation(t *testing.T) {
	gold, ids, ks := []string{"a", "b"}, []string{"x", "a", "y", "b", "a"}, []int{1, 3, 5, 10}
	var o window.Observation
	run := func() {
		o = window.Observation{PrecisionAtK: o.PrecisionAtK[:0], RecallAtK: o.RecallAtK[:0], Means: o.Means[:0]}
		retrievalAtKs(gold, ids, ks, &o)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

// FuzzRanking: every metric in [0, 1]; nDCG@k = 1 for a perfect ranking
// (as many gold ids first as fit in k); RR = 1/rank of the first gold id
// of the list; the bitmask path (retrievalAtKs) equals the plain one
// (retrievalPerK). The bytes pick ids from a small pool so that hits and
// duplicates are common.
func FuzzRanking(f *testing.F) {
	f.Add([]byte{0, 1}, []byte{0, 5, 1, 0}, uint8(3))
	f.Add([]byte{}, []byte{1, 2}, uint8(1))
	f.Add([]byte{2, 3, 4}, []byte{}, uint8(10))
	f.Add([]byte{7}, []byte{1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 7}, uint8(10))
	pool := []string{"a", "b", "c", "d", "e", "p81#5", "p18#5", "abcdefg", "sec-0001.aaaa.para-01", "sec-0001.bbbb.para-01", "x", "y"}
	f.Fuzz(func(t *testing.T, g, r []byte, k8 uint8) {
		ids := func(b []byte) []string {
			var out []string
			for _, c := range b {
				out = append(out, pool[int(c)%len(pool)])
			}
			return out
		}
		gold, list := ids(g), ids(r)
		k := int(k8%70) + 1
		ks := []int{1, k}
		if k == 1 {
			ks = ks[:1]
		}
		rk := Rank(gold, list)
		vals := []float64{rk.NDCG(k), rk.AP(k), rk.RR(), rk.RPrecision()}
		for _, v := range vals {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("gold %q list %q k %d: values %v outside [0, 1]", gold, list, k, vals)
			}
		}
		// RR: 1/rank of the first gold id, ranks counted over distinct ids.
		var distinct []string
		wantRR := 0.0
		for _, id := range list {
			if slices.Contains(distinct, id) {
				continue
			}
			distinct = append(distinct, id)
			if slices.Contains(gold, id) {
				wantRR = 1 / float64(len(distinct))
				break
			}
		}
		if rk.RR() != wantRR {
			t.Fatalf("gold %q list %q: RR %v, want %v", gold, list, rk.RR(), wantRR)
		}
		if rk.Gold > 0 && rk.Hit(k) != (rk.NDCG(k) > 0) {
			t.Fatalf("gold %q list %q k %d: hit %v, nDCG %v", gold, list, k, rk.Hit(k), rk.NDCG(k))
		}
		// A perfect ranking: the distinct gold ids first, then the rest.
		var perfect []string
		for _, id := range gold {
			if !slices.Contains(perfect, id) {
				perfect = append(perfect, id)
			}
		}
		if len(perfect) > 0 {
			pr := Rank(gold, append(perfect, list...))
			if v := pr.NDCG(k); math.Abs(v-1) > 1e-15 {
				t.Fatalf("gold %q: perfect ranking nDCG@%d = %v", gold, k, v)
			}
			if pr.RR() != 1 || pr.RPrecision() != 1 || !pr.Hit(k) {
				t.Fatalf("gold %q: perfect ranking RR %v R-prec %v", gold, pr.RR(), pr.RPrecision())
			}
		}
		var fast, plain window.Observation
		if retrievalAtKs(gold, list, ks, &fast) {
			retrievalPerK(gold, list, ks, &plain)
			if !reflect.DeepEqual(fast, plain) {
				t.Fatalf("gold %q list %q ks %v:\nfast  %+v\nplain %+v", gold, list, ks, fast, plain)
			}
		}
	})
}
