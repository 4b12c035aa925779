package checks

import (
	"math"
	"math/bits"
	"slices"

	"github.com/shadoweval/shadoweval/window"
)

// The ranking metrics retrieval engineers read (nDCG@k, AP@k, hit@k,
// reciprocal rank, R-precision), with trec_eval's definitions and binary
// relevance: an id is relevant when it is in G. The ranking is the
// retrieved ids in order with each id at its first rank only (trec_eval
// refuses a run that repeats a document); a cut-off k keeps its first k
// ids. A question whose G is empty has none of them: no ranking can score
// on it.

// Ranked is a ranking reduced to what the metrics read: the 0-based ranks
// of its relevant ids, ascending, and the number of distinct gold ids.
type Ranked struct {
	Relevant []int
	Gold     int
}

// Rank reduces ids to their Ranked form against gold.
func Rank(gold, ids []string) Ranked {
	g := make(map[string]bool, len(gold))
	for _, id := range gold {
		g[id] = true
	}
	seen := make(map[string]bool, len(ids))
	r := Ranked{Gold: len(g)}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		if g[id] {
			r.Relevant = append(r.Relevant, len(seen))
		}
		seen[id] = true
	}
	return r
}

// log2Rank[i] is log2(i+2), the discount of 0-based rank i, and
// idealDCG[n] the DCG of n relevant ids at the first n ranks, summed in
// rank order as trec_eval sums it.
var log2Rank, idealDCG = func() (l, d []float64) {
	const n = 1024
	l, d = make([]float64, n), make([]float64, n+1)
	for i := range n {
		l[i] = math.Log2(float64(i + 2))
		d[i+1] = d[i] + 1/l[i]
	}
	return l, d
}()

func discount(i int) float64 {
	if i < len(log2Rank) {
		return log2Rank[i]
	}
	return math.Log2(float64(i + 2))
}

func ideal(n int) float64 {
	if n < len(idealDCG) {
		return idealDCG[n]
	}
	s := idealDCG[len(idealDCG)-1]
	for i := len(idealDCG) - 1; i < n; i++ {
		s += 1 / discount(i)
	}
	return s
}

// within is how many relevant ranks are below k.
func (r Ranked) within(k int) int {
	n, _ := slices.BinarySearch(r.Relevant, max(k, 0))
	return n
}

// NDCG is nDCG@k (trec_eval ndcg_cut with gains of 1): the DCG of the
// relevant ranks below k over that of min(|G|, k) relevant ids first; 0
// when G is empty.
func (r Ranked) NDCG(k int) float64 {
	idcg := ideal(min(r.Gold, max(k, 0)))
	if idcg == 0 {
		return 0
	}
	dcg := 0.0
	for _, i := range r.Relevant[:r.within(k)] {
		dcg += 1 / discount(i)
	}
	return dcg / idcg
}

// AP is AP@k (trec_eval map_cut): Σ of the precision at each relevant
// rank below k, over |G|; 0 when G is empty.
func (r Ranked) AP(k int) float64 {
	if r.Gold == 0 {
		return 0
	}
	s := 0.0
	for j, i := range r.Relevant[:r.within(k)] {
		s += float64(j+1) / float64(i+1)
	}
	return s / float64(r.Gold)
}

// Hit says whether a relevant id is among the first k (trec_eval
// success).
func (r Ranked) Hit(k int) bool { return r.within(k) > 0 }

// RR is the reciprocal rank of the first relevant id, 0 when none is
// (trec_eval recip_rank).
func (r Ranked) RR() float64 {
	if len(r.Relevant) == 0 {
		return 0
	}
	return 1 / float64(r.Relevant[0]+1)
}

// RPrecision is the share of the first |G| ranks that are relevant
// (trec_eval Rprec); 0 when G is empty.
func (r Ranked) RPrecision() float64 {
	if r.Gold == 0 {
		return 0
	}
	return float64(r.within(r.Gold)) / float64(r.Gold)
}

// setRanking writes r's metrics at the cut-offs ks into o: the hit bits,
// the means and their denominator counter. Nothing for an empty G.
func setRanking(r Ranked, ks []int, o *window.Observation) {
	if r.Gold == 0 {
		return
	}
	nk := len(ks)
	n := window.MeansLen(nk)
	o.Means = slices.Grow(o.Means[:0], n)[:n]
	ndcg, ap := window.MeanIndex(window.SumNDCGAtK, 0, nk), window.MeanIndex(window.SumMAPAtK, 0, nk)
	for i, k := range ks {
		if r.Hit(k) {
			o.HitAtK |= 1 << i
		}
		o.Means[ndcg+i] = r.NDCG(k)
		o.Means[ap+i] = r.AP(k)
	}
	o.Means[window.MeanIndex(window.SumRR, 0, nk)] = r.RR()
	o.Means[window.MeanIndex(window.SumRPrecision, 0, nk)] = r.RPrecision()
	o.Counters.Set(window.CountRanked)
}

// rankingPlain sets the ranking metrics of any list (Rank allocates).
func rankingPlain(gold, ids []string, ks []int, o *window.Observation) {
	setRanking(Rank(gold, ids), ks, o)
}

// rankingOfMasks sets the ranking metrics from retrievalAtKs's masks of a
// list of up to 64 ids: first (bit j: ids[j] is new), hit (bit j: ids[j]
// is new and a gold id), without allocating.
func rankingOfMasks(first, hit uint64, distinctGold int, ks []int, o *window.Observation) {
	var ranks [64]int
	r := Ranked{Relevant: ranks[:0], Gold: distinctGold}
	for h := hit; h != 0; h &= h - 1 {
		j := bits.TrailingZeros64(h)
		r.Relevant = append(r.Relevant, bits.OnesCount64(first&(1<<j-1)))
	}
	setRanking(r, ks, o)
}
