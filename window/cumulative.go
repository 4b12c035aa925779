package window

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

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
	c       *cell // its own counts; see Shared for an attached one
	// λ: each qid's group still short of minRuns runs, in column col of
	// sh's table: a private one, or the arm's Shared once attached.
	sh  *Shared
	col int
	lam lamCounts
	// Attached only: sh.tot when last folded in (mark), and the events of
	// tot not taken since (ex).
	mark, ex *cell
	// The events taken, and (attached) sh.n when last folded in and the
	// events of it not taken since.
	events, markN, exN int64
}

// maxGroupRuns caps the runs of an analysis' λ group (lambda.min_runs):
// an open group has fewer, which its 8-bit counts hold.
const maxGroupRuns = MaxLambdaMinRuns

// MaxLambdaMinRuns is the largest lambda.min_runs.
const MaxLambdaMinRuns = 255

// maxDenseQIDKey bounds the QIDKeys looked up through a slice; larger ones
// (no gold store numbers that many qids) go through the map.
const maxDenseQIDKey = 1 << 22

// NewCumulative returns an empty accumulator for the cut-offs ks and
// groups of minRuns runs (at least 1).
func NewCumulative(ks []int, minRuns int) *Cumulative {
	l := newCumulativeLayout(len(ks))
	own := &Shared{l: l, vis: newVisits(ks), LambdaTable: LambdaTable{byHash: map[uint64]int32{}}}
	return &Cumulative{l: l, ks: slices.Clone(ks), minRuns: min(max(minRuns, 1), maxGroupRuns), c: newCell(&l), sh: own, col: own.column()}
}

// attached reports whether cu follows an arm's Shared.
func (cu *Cumulative) attached() bool { return cu.sh != nil && cu.sh.tot != nil }

// AttachTo makes cu follow sh, the arm's shared state (same cut-offs):
// from now on an event reaches it through sh (Shared.Add, AddRuns,
// Exclude), and its open λ groups move into a column of sh's table.
func (cu *Cumulative) AttachTo(sh *Shared) {
	if cu.sh == sh {
		return
	}
	cu.Detach()
	own, ownCol := cu.sh, cu.col
	cu.sh, cu.col = sh, sh.column()
	own.open(ownCol, func(hash uint64, g *openGroup) { *sh.group(sh.rowByHash(hash), cu.col) = *g })
	cu.mark, cu.ex = cu.mark.copyCounts(sh.tot), nil
	cu.markN, cu.exN = sh.n, 0
	sh.attach(cu)
}

// Detach folds in what cu gained through its Shared and leaves it: its
// open λ groups move to a table of its own, and its column is given back.
func (cu *Cumulative) Detach() {
	if !cu.attached() {
		return
	}
	cu.fold()
	own := &Shared{l: cu.l, vis: newVisits(cu.ks), LambdaTable: LambdaTable{byHash: map[uint64]int32{}}}
	own.vis.gap, own.vis.cells = cu.sh.vis.gap, cu.sh.vis.cells
	col := own.column()
	cu.sh.open(cu.col, func(hash uint64, g *openGroup) { *own.group(own.rowByHash(hash), col) = *g })
	cu.sh.detach(cu)
	cu.sh, cu.col, cu.mark, cu.ex = own, col, nil, nil
}

// fold brings c up to date: what sh.tot gained since the mark, less the
// excluded events. Every read folds first.
func (cu *Cumulative) fold() {
	if !cu.attached() {
		return
	}
	// The bounds first: whether c had a ΔS-cited value before is its
	// count before the fold.
	col := &cu.sh.cols[cu.col]
	if col.taken {
		d := &cu.c.cited
		if d.n == 0 {
			d.min, d.max = col.min, col.max
		} else {
			d.min, d.max = min(d.min, col.min), max(d.max, col.max)
		}
		col.taken = false
	}
	cu.lam.complete += col.lam.complete
	cu.lam.convergent += col.lam.convergent
	cu.lam.flips += col.lam.flips
	col.lam = lamCounts{}
	// sh.tot changes only with sh.n, and exclusions only with events
	// added since the mark: with no event since, there is nothing to
	// fold, and every accessor folds first.
	if cu.sh.n == cu.markN {
		return
	}
	cu.events += cu.sh.n - cu.markN - cu.exN
	cu.markN, cu.exN = cu.sh.n, 0
	tot, mark := cu.sh.tot, cu.mark
	addCells(cu.c, tot, 1)
	addCells(cu.c, mark, -1)
	if cu.ex != nil {
		addCells(cu.c, cu.ex, -1)
		cu.ex.reset()
	}
	cu.mark = mark.copyCounts(tot)
}

// Prepared is an observation checked and digested once, to be added to
// several accumulators of the same cut-offs (one per running analysis):
// the counters it adds to, its sums in fixed point, its ΔS sketch index
// and its qid's hash are worked out once, not once per accumulator.
type Prepared struct {
	// What the visit sums read (visits.go): the event's counters, its time
	// (Unix ns; callers that know it better set it), and what it changes.
	set    CounterSet
	recall uint32
	hit    uint32
	triage int8
	ns     int64
	vinc   visitIncs

	lambda   bool
	run      LambdaRun
	qidKey   uint32
	qid      string
	hash     uint64 // of qid, worked out when first needed (qidHashOf)
	cited    bool
	citedIdx int
	citedVal float64
	anchor   int64
	nInc     int
	nSum     int
	inc      [maxEventIncs]uint16 // counts to add 1 to
	sumIdx   [maxSums]uint16
	sumAdd   [maxSums]uint64 // fixed-point units (fixedSum)
}

// maxSums bounds the sums of a cell: every block at 32 cut-offs.
const maxSums = int(numSumBlocks) * 32

// MaxCutoffs is the most cut-offs an accumulator counts at.
const MaxCutoffs = 32

// Prepare checks o for accumulators with nk cut-offs and digests it into p.
func Prepare(o *Observation, nk int, p *Prepared) error {
	if err := validate(o, nk); err != nil {
		return err
	}
	return PrepareAccepted(o, nk, p)
}

// PrepareAccepted is Prepare for an observation that Windows.Add accepted
// with nk cut-offs, which checks it as Prepare does: the check is not
// repeated.
func PrepareAccepted(o *Observation, nk int, p *Prepared) error {
	if nk > MaxCutoffs {
		return invalidf("%d cut-offs, at most %d", nk, MaxCutoffs)
	}
	// Field by field: the lists are read only up to their lengths, and
	// clearing them would cost more than the rest.
	p.lambda, p.run, p.qidKey, p.qid, p.hash = inLambda(o), o.Lambda, o.QIDKey, o.QID, 0
	p.set, p.recall, p.hit, p.triage, p.ns, p.vinc.n = o.eventCounters(), o.RecallStrict, o.HitAtK, int8(o.Triage), 0, 0
	if !o.Time.IsZero() {
		p.ns = o.Time.UnixNano()
	}
	p.cited, p.citedIdx, p.citedVal, p.anchor, p.nInc, p.nSum = false, 0, 0, 0, 0, 0
	// The counts of cell.addCounts, as a list.
	l := &layouts[nk]
	p.nInc = eventIncs(p.inc[:], l, o)
	sum := func(i int, v float64) {
		p.sumIdx[p.nSum] = uint16(i)
		p.sumAdd[p.nSum] = uint64(v * fixedOne)
		p.nSum++
	}
	if o.HasRetrieval {
		for i, v := range o.PrecisionAtK {
			sum(l.sum[sumPrecisionAtK]+i, v)
		}
	}
	if o.HasRecallAtK {
		for i, v := range o.RecallAtK {
			sum(l.sum[sumRecallAtK]+i, v)
		}
	}
	if len(o.Means) > 0 {
		at := 0
		for _, b := range meanBlocks {
			w := b.width(nk)
			if p.set.Has(b.den) {
				for i, v := range o.Means[at : at+w] {
					sum(l.means+at+i, v)
				}
			}
			at += w
		}
	}
	if o.HasAnchorDistance {
		p.anchor = int64(o.AnchorDistance)
	}
	if p.cited = citedCounted(o); p.cited {
		p.citedVal = o.DeltaSCited
		p.citedIdx = mapIndex(o.DeltaSCited)
	}
	return nil
}

// SetTime sets the event time p is counted at (Unix ns), when it is not
// the observation's own.
func (p *Prepared) SetTime(ns int64) { p.ns = ns }

// Add records one observation; an invalid one is refused (ErrInvalid) and
// nothing is recorded. The arm and time of o are the caller's business.
func (cu *Cumulative) Add(o *Observation) error {
	var p Prepared
	if err := Prepare(o, cu.l.nk, &p); err != nil {
		return err
	}
	cu.AddPrepared(&p)
	return nil
}

// AddPrepared records a prepared observation (of cu's cut-offs). The
// accumulator keeps no retrieved ΔS: no analysis judges its quantiles, and
// its sketch is the dearest part of an event.
func (cu *Cumulative) AddPrepared(p *Prepared) {
	cu.fold() // an attached one's own cited bounds need its folded count
	cu.sh.visit(p)
	cu.addCounts(p)
	cu.events++
	if p.lambda {
		cu.addRun(cu.sh.rowOf(p), p)
	}
}

// AddRuns completes Shared.Add for the accumulators of cus that take the
// observation, all attached to that Shared: each gets its λ run (the qid's
// row is found once for all) and its ΔS-cited bounds.
func AddRuns(cus []*Cumulative, p *Prepared) {
	if len(cus) == 0 {
		return
	}
	sh := cus[0].sh
	var r int32
	if p.lambda {
		r = sh.rowOf(p)
	}
	for _, cu := range cus {
		sh.take(cu.col, r, p)
	}
}

// Exclude takes an observation added to cu's Shared back out of cu, which
// does not take it (it falls before cu's analysis began).
func (cu *Cumulative) Exclude(p *Prepared) {
	if !cu.attached() {
		return
	}
	if cu.ex == nil {
		cu.ex = newCell(&cu.l)
	}
	addCounts(cu.ex, p)
	cu.exN++
}

// ExcludeVisit takes what an observation added to cu's Shared's visit sums
// back out of cu, which takes the observation but not its visit (one that
// may have begun before cu's analysis: visits.go).
func (cu *Cumulative) ExcludeVisit(p *Prepared) {
	if !cu.attached() || p.vinc.n == 0 {
		return
	}
	if cu.ex == nil {
		cu.ex = newCell(&cu.l)
	}
	p.vinc.apply(cu.ex.cnt)
}

// VisitGap is the span of cu's visits.
func (cu *Cumulative) VisitGap() time.Duration { return time.Duration(cu.sh.vis.gap) }

func (cu *Cumulative) addCounts(p *Prepared) { addCounts(cu.c, p) }

// addCounts adds a prepared observation's counts, sums and ΔS-cited value
// to c.
func addCounts(c *cell, p *Prepared) {
	cnt := c.cnt
	for _, i := range p.inc[:p.nInc] {
		cnt[i]++
	}
	cnt[cAnchorSum] += p.anchor
	for j, i := range p.sumIdx[:p.nSum] {
		c.sums[i].addUnits(p.sumAdd[j])
	}
	if p.cited {
		c.cited.addIndex(p.citedIdx, p.citedVal)
	}
	p.vinc.apply(cnt)
}

// addRun adds the observation's run to cu's group in row r, and judges the
// group once it has minRuns runs.
func (cu *Cumulative) addRun(r int32, p *Prepared) {
	g := cu.sh.group(r, cu.col)
	g.add(p.run)
	if int(g.runs) >= cu.minRuns {
		s := g.sum()
		cu.lam.count(s.eval(cu.minRuns))
		*g = openGroup{}
	}
}

// qidHash keys a qid's λ group in checkpoints: a 64-bit FNV-1a of the qid
// (a collision merges two qids' runs, at odds of about n²/2⁶⁵ for n qids).
// Not the caller's QIDKey: a numbering of qids lives only as long as its
// process, and a checkpoint's open groups must be found again in the next.
func qidHash(qid string) uint64 {
	h := uint64(14695981039346656037) // inline: hash/fnv would allocate
	for i := 0; i < len(qid); i++ {
		h ^= uint64(qid[i])
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

// Events is how many observations cu took.
func (cu *Cumulative) Events() int64 {
	cu.fold()
	return cu.events
}

// SetEvents sets the count Events gives, for an accumulator restored from
// a checkpoint that keeps it apart.
func (cu *Cumulative) SetEvents(n int64) {
	cu.fold()
	cu.events = n
}

// Metrics computes every metric of MetricNames over what was added.
func (cu *Cumulative) Metrics() map[string]Value {
	cu.fold()
	return computeMetrics(&cu.l, cu.ks, cu.c, cu.lam)
}

// CitedCount is the number of ΔS-cited values added.
func (cu *Cumulative) CitedCount() int64 {
	cu.fold()
	return cu.c.cited.n
}

// CitedOrderStat estimates the i-th smallest ΔS-cited value (0-based,
// clamped to [0, CitedCount()-1]) within the sketch's relative accuracy;
// 0 when there is none.
func (cu *Cumulative) CitedOrderStat(i float64) float64 {
	cu.fold()
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
	cu.fold()
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
	cu.fold()
	o.fold()
	cu.events += o.events
	cu.c.merge(o.c, true, false)
	cu.lam.complete += o.lam.complete
	cu.lam.convergent += o.lam.convergent
	cu.lam.flips += o.lam.flips
	o.sh.open(o.col, func(hash uint64, og *openGroup) {
		g := cu.sh.group(cu.sh.rowByHash(hash), cu.col)
		s, os := g.sum(), og.sum()
		s.merge(&os)
		if int(s.runs) >= cu.minRuns {
			cu.lam.count(s.eval(cu.minRuns))
			s = lamSum{}
		}
		*g = openGroupOf(s)
	})
	return nil
}

// cumulativeState is the serialised form of a Cumulative.
type cumulativeState struct {
	Ks      []int   `json:"ks"`
	MinRuns int     `json:"min_runs"`
	Events  int64   `json:"events,omitempty"` // observations taken
	Counts  []int64 `json:"counts"`
	// CountNames names Counts one for one. A checkpoint without them (an
	// older one) has Counts in this build's order.
	CountNames []string    `json:"count_names,omitempty"`
	Sums       [][2]uint64 `json:"sums"`
	// SumNames names Sums one for one. A checkpoint without them has the
	// sums of P@k and R@k alone, in that order, or this build's.
	SumNames []string  `json:"sum_names,omitempty"`
	Cited    distState `json:"cited"`
	Ret      distState `json:"retrieved"`
	Lambda   [3]int64  `json:"lambda"` // complete, convergent, flips
	// Open packs the groups still short of minRuns runs, openGroupSize
	// bytes each (little-endian: qid hash, cited-set hash, then runs,
	// stated, not →, ←, refused as 32 bits, mixed), in order of hash: one
	// per qid seen, so it is the bulk of a checkpoint and kept compact.
	Open []byte `json:"open,omitempty"`
}

const openGroupSize = 8 + 8 + 5*4 + 1

type distState struct {
	N    int64           `json:"n"`
	Zero float64         `json:"zero,omitempty"`
	Min  float64         `json:"min,omitempty"`
	Max  float64         `json:"max,omitempty"`
	Bins map[int]float64 `json:"bins,omitempty"` // sketch index → count
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
func (cu *Cumulative) MarshalJSON() ([]byte, error) { return cu.marshal(true) }

// MarshalWithoutOpenGroups writes the accumulator without the λ groups
// still short of minRuns runs: a checkpoint too large for its store keeps
// everything else, and those runs start new groups after a restart.
func (cu *Cumulative) MarshalWithoutOpenGroups() ([]byte, error) { return cu.marshal(false) }

func (cu *Cumulative) marshal(open bool) ([]byte, error) {
	cu.fold()
	s := cumulativeState{Ks: cu.ks, MinRuns: cu.minRuns, Events: cu.events, Counts: cu.c.cnt, CountNames: cu.l.countNames(cu.ks), SumNames: cu.l.sumNames(cu.ks), Cited: cu.c.cited.state(), Ret: cu.c.ret.state(),
		Lambda: [3]int64{cu.lam.complete, cu.lam.convergent, cu.lam.flips}}
	for _, v := range cu.c.sums {
		s.Sums = append(s.Sums, [2]uint64{v.hi, v.lo})
	}
	if open {
		var slots []lamSlot
		cu.sh.open(cu.col, func(hash uint64, g *openGroup) { slots = append(slots, lamSlot{hash, g.sum()}) })
		slices.SortFunc(slots, func(a, b lamSlot) int { return cmp.Compare(a.hash, b.hash) })
		s.Open = make([]byte, 0, len(slots)*openGroupSize)
		for _, g := range slots {
			s.Open = binary.LittleEndian.AppendUint64(s.Open, g.hash)
			s.Open = binary.LittleEndian.AppendUint64(s.Open, g.cited)
			for _, v := range []uint32{g.runs, g.stated, g.notArrow, g.back, g.refused} {
				s.Open = binary.LittleEndian.AppendUint32(s.Open, v)
			}
			mixed := byte(0)
			if g.mixed {
				mixed = 1
			}
			s.Open = append(s.Open, mixed)
		}
	}
	return json.Marshal(s)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (cu *Cumulative) UnmarshalJSON(b []byte) error {
	var s cumulativeState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("window: accumulator: %w", err)
	}
	if len(s.Ks) == 0 || len(s.Ks) > 32 || s.MinRuns < 1 || s.MinRuns > maxGroupRuns {
		return fmt.Errorf("window: accumulator: k %v and groups of %d runs", s.Ks, s.MinRuns)
	}
	fresh := NewCumulative(s.Ks, s.MinRuns)
	if s.CountNames != nil {
		counts, err := byName("count", s.CountNames, s.Counts, fresh.l.countNames(s.Ks))
		if err != nil {
			return fmt.Errorf("window: accumulator: %w", err)
		}
		s.Counts = counts
	}
	if s.SumNames == nil && len(s.Sums) == 2*len(s.Ks) {
		s.SumNames = fresh.l.sumNames(s.Ks)[:len(s.Sums)]
	}
	if s.SumNames != nil {
		sums, err := byName("sum", s.SumNames, s.Sums, fresh.l.sumNames(s.Ks))
		if err != nil {
			return fmt.Errorf("window: accumulator: %w", err)
		}
		s.Sums = sums
	}
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
	if s.Events < 0 {
		return fmt.Errorf("window: accumulator: %d events", s.Events)
	}
	fresh.events = s.Events
	if len(s.Open)%openGroupSize != 0 {
		return fmt.Errorf("window: accumulator: %d bytes of open λ groups, not a multiple of %d", len(s.Open), openGroupSize)
	}
	for b := s.Open; len(b) > 0; b = b[openGroupSize:] {
		le := binary.LittleEndian
		g := lamSlot{hash: le.Uint64(b), lamSum: lamSum{cited: le.Uint64(b[8:]), runs: le.Uint32(b[16:]), stated: le.Uint32(b[20:]),
			notArrow: le.Uint32(b[24:]), back: le.Uint32(b[28:]), refused: le.Uint32(b[32:]), mixed: b[36] != 0}}
		if g.runs < 1 || int64(g.runs) >= int64(s.MinRuns) || g.stated > g.runs || g.notArrow > g.stated || g.back > g.notArrow || g.refused > g.runs || b[36] > 1 {
			return fmt.Errorf("window: accumulator: open λ group %+v", g)
		}
		if _, dup := fresh.sh.byHash[g.hash]; dup {
			return fmt.Errorf("window: accumulator: open λ group %d twice", g.hash)
		}
		*fresh.sh.group(fresh.sh.rowByHash(g.hash), fresh.col) = openGroupOf(g.lamSum)
	}
	if cu.attached() { // stay attached, from the restored state
		sh := cu.sh
		sh.detach(cu)
		fresh.AttachTo(sh)
	}
	*cu = *fresh
	if cu.attached() {
		cu.sh.attach(cu) // the column's owner is cu, not the fresh copy
	}
	return nil
}

// byName puts counts (or sums: what) named by names in the order of
// want. A count this build does not have is refused: restoring without it
// would lose what it counted. One this build has and the checkpoint does
// not starts at 0.
func byName[T any](what string, names []string, counts []T, want []string) ([]T, error) {
	if len(names) != len(counts) {
		return nil, fmt.Errorf("%d %s names for %d %ss", len(names), what, len(counts), what)
	}
	at := make(map[string]int, len(want))
	for i, n := range want {
		at[n] = i
	}
	out := make([]T, len(want))
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		j, ok := at[n]
		if !ok {
			return nil, fmt.Errorf("%s %q is not one this build keeps", what, n)
		}
		if seen[n] {
			return nil, fmt.Errorf("%s %q twice", what, n)
		}
		seen[n] = true
		out[j] = counts[i]
	}
	return out, nil
}

// lamSlot is one qid's open group, keyed for checkpoints by its qid's hash.
type lamSlot struct {
	hash uint64
	lamSum
}
