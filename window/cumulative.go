package window

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch/store"
)

// Cumulative is everything one arm has seen since a start, with no sliding
// and no buckets: the unit a canary analysis judges. It holds the same
// counts as a window cell, so its metrics are the windows' formulas.
//
// λ groups differ from the windows' on purpose: each qid's runs, in the
// order they arrive, are cut into consecutive groups of exactly minRuns
// runs, and each group is judged once, when it completes. A group of the
// windows holds every run of the window, so its chance of being convergent
// falls with the arm's traffic; a baseline with four times the canary's
// traffic would look worse for that alone. Fixed-size groups make the two
// arms comparable, and each group is one Bernoulli outcome for the
// analysis' confidence sequence.
//
// Not safe for concurrent use.
type Cumulative struct {
	l       layout
	ks      []int
	minRuns int
	c       *cell
	open    map[uint64]*lamSum // qid → its group still short of minRuns runs
	lam     lamCounts
}

// NewCumulative returns an empty accumulator for the cut-offs ks and
// groups of minRuns runs (at least 1).
func NewCumulative(ks []int, minRuns int) *Cumulative {
	l := newLayout(len(ks))
	return &Cumulative{l: l, ks: slices.Clone(ks), minRuns: max(minRuns, 1), c: newCell(&l), open: map[uint64]*lamSum{}}
}

// Add records one observation; an invalid one is refused (ErrInvalid) and
// nothing is recorded. The arm and time of o are the caller's business.
func (cu *Cumulative) Add(o *Observation) error {
	if err := validate(o, cu.l.nk); err != nil {
		return err
	}
	// No analysis judges the retrieved-ΔS quantiles: skip their sketch,
	// the dearest part of an event. The λ groups are kept here, not in
	// the cell, which is emptied of the one it makes.
	retrieved := o.DeltaSRetrieved
	o.DeltaSRetrieved = nil
	cu.c.add(&cu.l, o, nil, 0)
	o.DeltaSRetrieved = retrieved
	if inLambda(o) {
		cu.c.lam = cu.c.lam[:0]
		clear(cu.c.lamIdx)
		key := qidKey(o)
		g := cu.open[key]
		if g == nil {
			g = &lamSum{}
			cu.open[key] = g
		}
		g.add(o.Lambda)
		if g.runs >= int64(cu.minRuns) {
			cu.lam.count(g.eval(cu.minRuns))
			delete(cu.open, key)
		}
	}
	return nil
}

// qidKey keys o's λ group by a 64-bit hash of its qid (a collision merges
// two qids' runs, at odds of about n²/2⁶⁵ for n qids). Not by QIDKey: a
// caller's numbering of qids lives only as long as its process, and a
// checkpoint's open groups must be found again in the next one.
func qidKey(o *Observation) uint64 {
	// FNV-1a, inline: hash/fnv would allocate for every event.
	h := uint64(14695981039346656037)
	for i := 0; i < len(o.QID); i++ {
		h ^= uint64(o.QID[i])
		h *= 1099511628211
	}
	return h
}

// AddPair records one judgement pair; an unknown label is refused
// (ErrInvalid).
func (cu *Cumulative) AddPair(p *PairObservation) error {
	si, ai := labelIndex(p.Scholar), labelIndex(p.Auditor)
	if si < 0 || ai < 0 {
		return invalidf("judgement labels %q/%q: want one of %v", p.Scholar, p.Auditor, JudgementLabels)
	}
	cu.c.cnt[cPairs+si*nLabels+ai]++
	return nil
}

// Metrics computes every metric of MetricNames over what was added.
func (cu *Cumulative) Metrics() map[string]Value {
	return computeMetrics(&cu.l, cu.ks, cu.c, cu.lam)
}

// CitedCount is the number of ΔS-cited values added.
func (cu *Cumulative) CitedCount() int64 { return cu.c.cited.n }

// CitedOrderStat estimates the i-th smallest ΔS-cited value (0-based,
// clamped to [0, CitedCount()-1]) within the sketch's relative accuracy;
// 0 when there is none.
func (cu *Cumulative) CitedOrderStat(i float64) float64 {
	d := &cu.c.cited
	if d.n == 0 {
		return 0
	}
	i = max(0, min(math.Floor(i), float64(d.n-1)))
	return d.orderStat(i)
}

// CitedQuantile is the q-quantile of the ΔS-cited values, interpolated as
// the windows' delta_s_median and delta_s_p90 are; 0 when there is none.
func (cu *Cumulative) CitedQuantile(q float64) float64 {
	if cu.c.cited.n == 0 {
		return 0
	}
	return cu.c.cited.quantile(q)
}

// Merge adds o into cu. Both must have the same cut-offs and group size.
// Groups still open in both are merged run for run, as if o's runs had
// arrived after cu's.
func (cu *Cumulative) Merge(o *Cumulative) error {
	if !slices.Equal(cu.ks, o.ks) || cu.minRuns != o.minRuns {
		return fmt.Errorf("window: merging accumulators of k %v and %v, groups of %d and %d runs", cu.ks, o.ks, cu.minRuns, o.minRuns)
	}
	cu.c.merge(o.c, true, false)
	cu.lam.complete += o.lam.complete
	cu.lam.convergent += o.lam.convergent
	cu.lam.flips += o.lam.flips
	for k, g := range o.open {
		mine := cu.open[k]
		if mine == nil {
			cp := *g
			cu.open[k] = &cp
			continue
		}
		mine.merge(g)
		if mine.runs >= int64(cu.minRuns) {
			cu.lam.count(mine.eval(cu.minRuns))
			delete(cu.open, k)
		}
	}
	return nil
}

// cumulativeState is the serialised form of a Cumulative.
type cumulativeState struct {
	Ks      []int            `json:"ks"`
	MinRuns int              `json:"min_runs"`
	Counts  []int64          `json:"counts"`
	Sums    [][2]uint64      `json:"sums"`
	Cited   distState        `json:"cited"`
	Ret     distState        `json:"retrieved"`
	Lambda  [3]int64         `json:"lambda"` // complete, convergent, flips
	Open    []openGroupState `json:"open,omitempty"`
}

type distState struct {
	N    int64           `json:"n"`
	Zero float64         `json:"zero,omitempty"`
	Min  float64         `json:"min,omitempty"`
	Max  float64         `json:"max,omitempty"`
	Bins map[int]float64 `json:"bins,omitempty"` // sketch index → count
}

type openGroupState struct {
	Key                                   uint64
	Mixed                                 bool
	Runs, Stated, NotArrow, Back, Refused int64
	Cited                                 uint64
}

func (d *dist) state() distState {
	s := distState{N: d.n, Zero: d.zero, Min: d.min, Max: d.max}
	if d.st != nil && !d.st.IsEmpty() {
		s.Bins = map[int]float64{}
		d.st.ForEach(func(i int, c float64) bool { s.Bins[i] += c; return false })
	}
	return s
}

// load restores what state wrote, refusing what it could not have written:
// a bin outside the ΔS range would make the dense store allocate up to it.
func (d *dist) load(s distState) error {
	lo, hi := mapIndex(MinDeltaS), mapIndex(1)
	total := s.Zero
	for i, c := range s.Bins {
		if i < lo || i > hi || !(c > 0) || math.IsInf(c, 1) {
			return fmt.Errorf("sketch bin %d of count %v outside [%d, %d]", i, c, lo, hi)
		}
		total += c
	}
	if s.N < 0 || !(s.Zero >= 0) || math.Abs(total-float64(s.N)) > 0.5 || !(0 <= s.Min && s.Min <= s.Max && s.Max <= 1) && s.N > 0 {
		return fmt.Errorf("sketch of %d values with %v counted, range [%v, %v]", s.N, total, s.Min, s.Max)
	}
	d.n, d.zero, d.min, d.max = s.N, s.Zero, s.Min, s.Max
	if len(s.Bins) > 0 {
		d.st = store.NewDenseStore()
		for i, c := range s.Bins {
			d.st.AddWithCount(i, c)
		}
	}
	return nil
}

// MarshalJSON writes the accumulator for a checkpoint.
func (cu *Cumulative) MarshalJSON() ([]byte, error) {
	s := cumulativeState{Ks: cu.ks, MinRuns: cu.minRuns, Counts: cu.c.cnt, Cited: cu.c.cited.state(), Ret: cu.c.ret.state(),
		Lambda: [3]int64{cu.lam.complete, cu.lam.convergent, cu.lam.flips}}
	for _, v := range cu.c.sums {
		s.Sums = append(s.Sums, [2]uint64{v.hi, v.lo})
	}
	for k, g := range cu.open {
		s.Open = append(s.Open, openGroupState{Key: k, Mixed: g.mixed, Runs: g.runs, Stated: g.stated, NotArrow: g.notArrow, Back: g.back, Refused: g.refused, Cited: g.cited})
	}
	slices.SortFunc(s.Open, func(a, b openGroupState) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return json.Marshal(s)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (cu *Cumulative) UnmarshalJSON(b []byte) error {
	var s cumulativeState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("window: accumulator: %w", err)
	}
	if len(s.Ks) == 0 || len(s.Ks) > 32 || s.MinRuns < 1 {
		return fmt.Errorf("window: accumulator: k %v and groups of %d runs", s.Ks, s.MinRuns)
	}
	fresh := NewCumulative(s.Ks, s.MinRuns)
	if len(s.Counts) != fresh.l.nCnt || len(s.Sums) != fresh.l.nSums {
		return fmt.Errorf("window: accumulator: %d counts and %d sums, want %d and %d for k %v", len(s.Counts), len(s.Sums), fresh.l.nCnt, fresh.l.nSums, s.Ks)
	}
	for i, v := range s.Counts {
		if v < 0 {
			return fmt.Errorf("window: accumulator: count %d is %d", i, v)
		}
	}
	copy(fresh.c.cnt, s.Counts)
	for i, v := range s.Sums {
		fresh.c.sums[i] = fixedSum{hi: v[0], lo: v[1]}
	}
	if err := fresh.c.cited.load(s.Cited); err != nil {
		return fmt.Errorf("window: accumulator: cited ΔS: %w", err)
	}
	if err := fresh.c.ret.load(s.Ret); err != nil {
		return fmt.Errorf("window: accumulator: retrieved ΔS: %w", err)
	}
	lc := lamCounts{complete: s.Lambda[0], convergent: s.Lambda[1], flips: s.Lambda[2]}
	if lc.convergent < 0 || lc.flips < 0 || lc.convergent > lc.complete || lc.flips > lc.complete {
		return fmt.Errorf("window: accumulator: λ groups %v", s.Lambda)
	}
	fresh.lam = lc
	for _, g := range s.Open {
		if g.Runs < 1 || g.Runs >= int64(s.MinRuns) || g.Stated > g.Runs || g.NotArrow > g.Stated || g.Back > g.NotArrow || g.Refused > g.Runs || g.Stated < 0 || g.Back < 0 || g.Refused < 0 {
			return fmt.Errorf("window: accumulator: open λ group %+v", g)
		}
		fresh.open[g.Key] = &lamSum{mixed: g.Mixed, runs: g.Runs, stated: g.Stated, notArrow: g.NotArrow, back: g.Back, refused: g.Refused, cited: g.Cited}
	}
	*cu = *fresh
	return nil
}
