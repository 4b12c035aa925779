package window

import (
	"math"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// Value is one metric of one window.
//
// Valid=false is the "—" of SPEC §4: no value (gates: inconclusive). Samples
// is the size of the denominator: observations for proportions and means,
// values for quantiles, complete groups for λ, pairs for agreement, kappa
// and abstain_rate. Num and Den are the counts for Proportion metrics (so
// that gates can compute Wilson and Newcombe intervals), the sum and count
// for Mean and Distance metrics, and 0 for Quantile and Kappa.
type Value struct {
	Value   float64
	Valid   bool
	Samples int64
	Num     float64
	Den     float64
}

// Snapshot is every metric of MetricNames(Ks) for one arm, window and
// content type ("" = all types of the arm).
type Snapshot struct {
	Arm, Window, Type string
	Metrics           map[string]Value
}

// agg is the sum of the cells of a window; the λ summaries and ΔS
// distributions only when wanted.
type agg struct {
	cell
	wantLam   bool
	wantDists bool
}

func (g *agg) add(c *cell) { g.cell.merge(c, g.wantDists, g.wantLam) }

// find resolves an arm and a window name to the arm and ring index.
func (w *Windows) find(armName, window string) (*arm, int, bool) {
	a, ok := w.lookupArm(armName)
	if !ok {
		return nil, 0, false
	}
	for i, s := range w.specs {
		if s.Name == window {
			return a, i, true
		}
	}
	return nil, 0, false
}

// collect sums the cells of ring ri of a that lie in the window at now, for
// content type contentType ("" = all). False when the type is unknown.
func (w *Windows) collect(a *arm, ri int, contentType string, now time.Time, g *agg) bool {
	w.flushArm(a)
	a.mu.Lock()
	defer a.mu.Unlock()
	ti := -1
	if contentType != "" {
		i, ok := a.types.Index[contentType]
		if !ok {
			return false
		}
		ti = i
	}
	r := &a.rings[ri]
	cur := floorDiv(now.UnixNano(), r.res)
	lo := cur - r.n + 1
	if g.wantLam {
		// size the merge map for the largest cell once, instead of growing it
		hint := 0
		for i := range r.slots {
			s := &r.slots[i]
			if s.epoch < lo || s.epoch > cur {
				continue
			}
			n := 0
			for j, c := range s.cells {
				if c != nil && (ti < 0 || j == ti) {
					n += len(c.lam)
				}
			}
			hint = max(hint, n)
		}
		g.lamIdx = make(map[uint32]int32, hint)
		g.lam = make([]lamSum, 0, hint)
	}
	for i := range r.slots {
		s := &r.slots[i]
		if s.epoch < lo || s.epoch > cur {
			continue
		}
		for j, c := range s.cells {
			if c != nil && (ti < 0 || j == ti) {
				g.add(c)
			}
		}
	}
	return true
}

func (w *Windows) newAgg(wantLam, wantDists bool) *agg {
	g := &agg{
		cell:      cell{cnt: make([]int64, w.layout.nCnt), sums: make([]fixedSum, w.layout.nSums)},
		wantLam:   wantLam,
		wantDists: wantDists,
	}
	return g
}

// Snapshot computes every metric of arm over window at now, for one
// content type or, with contentType "", all types of the arm. False when
// the arm, window or type is unknown. Cost: O(buckets × qids), under the
// arm's lock for the summing only.
func (w *Windows) Snapshot(armName, window, contentType string, now time.Time) (Snapshot, bool) {
	a, ri, ok := w.find(armName, window)
	if !ok {
		return Snapshot{}, false
	}
	g := w.newAgg(true, true)
	if !w.collect(a, ri, contentType, now, g) {
		return Snapshot{}, false
	}
	if armName == "" {
		armName = DefaultArm
	}
	return Snapshot{Arm: armName, Window: window, Type: contentType, Metrics: w.metrics(g)}, true
}

// DeltaS returns a merged copy of the ΔS-cited sketch of arm over window at
// now (contentType "" = all types), for rank tests on its bins; nil when
// the arm, window or type is unknown. Values below MinDeltaS are in its zero
// count. All sketches share one index mapping, so they can be merged and
// compared bin by bin.
func (w *Windows) DeltaS(armName, window, contentType string, now time.Time) *ddsketch.DDSketch {
	a, ri, ok := w.find(armName, window)
	if !ok {
		return nil
	}
	g := w.newAgg(false, true)
	if !w.collect(a, ri, contentType, now, g) {
		return nil
	}
	return g.cited.sketch()
}

// sketch returns d as a DDSketch that owns d's store.
func (d *dist) sketch() *ddsketch.DDSketch {
	st := d.st
	if st == nil {
		st = store.NewDenseStore()
	}
	sk := ddsketch.NewDDSketch(sketchMapping, st, store.NewDenseStore())
	if d.zero > 0 {
		_ = sk.AddWithCount(0, d.zero)
	}
	return sk
}

// quantile is the q-quantile of d, linearly interpolated between order
// statistics as numpy does (and the offline commands): each order
// statistic comes from the sketch, within RelativeAccuracy and clamped to
// d's exact range, so their interpolation is within RelativeAccuracy of the
// exact percentile, whatever the number of values.
func (d *dist) quantile(q float64) float64 {
	pos := float64(q * float64(d.n-1))
	lo := math.Floor(pos)
	frac := pos - lo
	v := d.orderStat(lo)
	if frac == 0 || lo+1 >= float64(d.n) {
		return v
	}
	return v + float64((d.orderStat(lo+1)-v)*frac)
}

// orderStat estimates the i-th smallest value (0-based) of d, d.n > i.
func (d *dist) orderStat(i float64) float64 {
	if i < d.zero || d.st == nil {
		return 0
	}
	v := sketchMapping.Value(d.st.KeyAtRank(i - d.zero))
	return max(d.min, min(v, d.max))
}

func proportion(num, den int64, empty float64, emptyValid bool) Value {
	if den == 0 {
		return Value{Value: empty, Valid: emptyValid}
	}
	return Value{Value: float64(num) / float64(den), Valid: true, Samples: den, Num: float64(num), Den: float64(den)}
}

func mean(sum float64, n int64) Value {
	if n == 0 {
		return Value{}
	}
	return Value{Value: sum / float64(n), Valid: true, Samples: n, Num: sum, Den: float64(n)}
}

// metrics turns the window's sums into the metrics of SPEC §4.
func (w *Windows) metrics(g *agg) map[string]Value {
	var lam lamCounts
	for i := range g.lam {
		ok, cv, fl := g.lam[i].eval(w.minRuns)
		lam.count(ok, cv, fl)
	}
	return computeMetrics(&w.layout, w.ks, &g.cell, lam)
}

// lamCounts are the complete, convergent and flipping λ groups.
type lamCounts struct{ complete, convergent, flips int64 }

func (lc *lamCounts) count(complete, convergent, flips bool) {
	if !complete {
		return
	}
	lc.complete++
	if convergent {
		lc.convergent++
	}
	if flips {
		lc.flips++
	}
}

// computeMetrics turns summed counts (and the λ group counts) into the
// metrics of SPEC §4, each as its registry row says.
func computeMetrics(l *layout, ks []int, g *cell, lam lamCounts) map[string]Value {
	var cm [4][4]int64
	for i := range cm {
		copy(cm[i][:], g.cnt[cPairs+i*nLabels:])
	}
	src := counts{l: l, c: g, lam: lam, ag: Agreement(cm)}
	m := make(map[string]Value, 24+3*len(ks))
	for s := range allSeries(ks) {
		m[s.Name] = src.value(&s)
	}
	return m
}

// counts are what a snapshot divides: a window's summed cell, its λ group
// counts and its judgement pairs' statistics.
type counts struct {
	l   *layout
	c   *cell
	lam lamCounts
	ag  AgreementStats
}

// count is counter c at index i of its block.
func (src *counts) count(c Counter, i int) int64 {
	switch c {
	case cLambdaComplete:
		return src.lam.complete
	case cLambdaConvergent:
		return src.lam.convergent
	case cLambdaFlips:
		return src.lam.flips
	case cPairsJudged:
		return src.ag.N
	case cPairsAgreeing:
		return src.ag.Diagonal
	case cPairsScholarAbstain:
		return src.ag.ScholarAbstain
	}
	return src.c.cnt[src.l.index(c, i)]
}

func (src *counts) dist(s Sketch) *dist {
	if s == RetrievedDeltaS {
		return &src.c.ret
	}
	return &src.c.cited
}

// value is the metric s.
func (src *counts) value(s *Series) Value {
	r, i := &s.Row, s.index
	switch r.Kind {
	case Proportion:
		return proportion(src.count(r.num, i), src.count(r.den, i), r.empty, r.emptyValid)
	case Mean:
		return mean(src.c.sums[src.l.sumIndex(r.sum, i)].float(), src.count(r.den, i))
	case Distance:
		return mean(float64(src.count(r.num, i)), src.count(r.den, i))
	case Quantile:
		d := src.dist(r.sketch)
		if d.n == 0 {
			return Value{}
		}
		return Value{Value: d.quantile(r.q), Valid: true, Samples: d.n}
	case Kappa:
		if src.ag.N == 0 {
			return Value{}
		}
		return Value{Value: src.ag.Kappa, Valid: true, Samples: src.ag.N}
	}
	return Value{}
}

// AgreementStats is the seed 003 summary of a confusion matrix.
type AgreementStats struct {
	N                int64 // pairs with both labels in JudgementLabels
	Diagonal         int64 // pairs where the labels agree
	ScholarAbstain   int64 // Scholar's ABSTAIN row sum
	PercentAgreement float64
	Kappa            float64
	AbstainRate      float64
}

// Agreement computes percent agreement, Cohen's κ and the abstain rate of a
// 4×4 confusion matrix (Scholar label major, JudgementLabels order) with the
// arithmetic of seed 003's confusion_and_kappa, operation for operation
// (Python 3.11 left-to-right sum; products are rounded before adding, never
// fused). All zero when N is 0.
func Agreement(m [4][4]int64) AgreementStats {
	var st AgreementStats
	var rs, cs [nLabels]int64
	for i := 0; i < nLabels; i++ {
		for j := 0; j < nLabels; j++ {
			v := m[i][j]
			st.N += v
			rs[i] += v
			cs[j] += v
		}
		st.Diagonal += m[i][i]
	}
	if st.N == 0 {
		return st
	}
	n := float64(st.N)
	po := float64(st.Diagonal) / n
	pe := 0.0
	for i := 0; i < nLabels; i++ {
		pe += float64((float64(rs[i]) / n) * (float64(cs[i]) / n))
	}
	kappa := 0.0
	if 1-pe > 1e-12 {
		kappa = (po - pe) / (1 - pe)
	}
	st.ScholarAbstain = rs[3]
	st.PercentAgreement = po
	st.Kappa = kappa
	st.AbstainRate = float64(rs[3]) / n
	return st
}

// Part is the window of arm at now (contentType "" = all types) as an
// accumulator: its counts, sums and ΔS distributions, and its λ groups
// judged. Replicas whose qids do not overlap (partitions by qid) merge
// their parts with Cumulative.Merge into what one replica that saw every
// event holds: the Metrics of the merge equal that replica's Snapshot.
// False when the arm, window or type is unknown.
func (w *Windows) Part(armName, window, contentType string, now time.Time) (*Cumulative, bool) {
	a, ri, ok := w.find(armName, window)
	if !ok {
		return nil, false
	}
	g := w.newAgg(true, true)
	if !w.collect(a, ri, contentType, now, g) {
		return nil, false
	}
	cu := NewCumulative(w.ks, w.minRuns)
	cu.c.merge(&g.cell, true, false)
	for i := range g.lam {
		cu.lam.count(g.lam[i].eval(w.minRuns))
	}
	return cu, true
}
