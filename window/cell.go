package window

import (
	"math"
	"strconv"

	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// A cell's counts: the per-event counters of the registry (registry.go),
// the judgement pairs' 4×4 confusion matrix (Scholar-major), then the
// blocks laid out per cut-off k and per triage label.
const (
	cPairs = int(numEventCounters)
	cFixed = cPairs + nLabels*nLabels
)

// layout places the per-k and per-label counters after the fixed ones.
type layout struct {
	nk     int
	recall int // cnt[recall+i]: cRecallStrict at Ks[i]
	triage int // cnt[triage+j]: cTriageLabel of label j
	hit    int // cnt[hit+i]: cHitAtK at Ks[i]
	nCnt   int
	// sums[sum[b]+i]: block b at Ks[i] (or its one sum); the blocks from
	// firstMeanBlock on are Observation.Means, in order, from means.
	sum      [numSumBlocks]int
	means    int
	nSums    int
	nTriages int
	// Cumulative cells only: the visit sums (visits.go), nVisit counts
	// from visits, at the end of the counts.
	visits, nVisit int
}

// layouts are the layouts of 0 to 32 cut-offs, for the paths that need
// one per event (PrepareAccepted).
var layouts = func() (ls [33]layout) {
	for nk := range ls {
		ls[nk] = newLayout(nk)
	}
	return ls
}()

func newLayout(nk int) layout {
	l := layout{nk: nk, nTriages: len(TriageLabels)}
	l.recall = cFixed
	l.triage = l.recall + nk
	l.hit = l.triage + l.nTriages
	l.nCnt = l.hit + nk
	for b := sumPrecisionAtK; b < numSumBlocks; b++ {
		if b == firstMeanBlock {
			l.means = l.nSums
		}
		l.sum[b] = l.nSums
		if sumRows[b].Over == PerK {
			l.nSums += nk
		} else {
			l.nSums++
		}
	}
	return l
}

// index is where c, at k index or label index i for a block, is in a
// cell's counts; c.inCell().
func (l *layout) index(c Counter, i int) int {
	switch c {
	case cRecallStrict:
		return l.recall + i
	case cTriageLabel:
		return l.triage + i
	case cHitAtK:
		return l.hit + i
	}
	return int(c)
}

// sumIndex is where block b at k index i (0 for a Once row's) is in a
// cell's sums.
func (l *layout) sumIndex(b SumBlock, i int) int { return l.sum[b] + i }

// sumNames names every sum of a cell of layout l, for the cut-offs ks, in
// the cell's order: its row's metric name.
func (l *layout) sumNames(ks []int) []string {
	names := make([]string, l.nSums)
	for b := sumPrecisionAtK; b < numSumBlocks; b++ {
		r := sumRows[b]
		if r.Over != PerK {
			names[l.sum[b]] = r.Name
			continue
		}
		for i, k := range ks {
			names[l.sum[b]+i] = r.Name + strconv.Itoa(k)
		}
	}
	return names
}

// cell is what one bucket knows of one content type of one arm. Everything
// in it merges by addition, except the λ summaries, which merge by qid.
type cell struct {
	cnt    []int64
	sums   []fixedSum
	cited  dist             // ΔS cited of shipped answers
	ret    dist             // ΔS of retrieved items
	lamIdx map[uint32]int32 // λ group key → index in lam
	lam    []lamSum
}

func newCell(l *layout) *cell {
	return &cell{
		cnt:    make([]int64, l.nCnt),
		sums:   make([]fixedSum, l.nSums),
		lamIdx: map[uint32]int32{},
	}
}

// reset empties c and keeps its memory for the next bucket.
func (c *cell) reset() {
	clear(c.cnt)
	clear(c.sums)
	c.cited.reset()
	c.ret.reset()
	clear(c.lamIdx)
	c.lam = c.lam[:0]
}

// empty reports whether nothing was added since the last reset.
func (c *cell) empty() bool {
	if len(c.lam) > 0 || c.cited.n > 0 || c.ret.n > 0 {
		return false
	}
	for _, v := range c.cnt {
		if v != 0 {
			return false
		}
	}
	for _, v := range c.sums {
		if v != (fixedSum{}) {
			return false
		}
	}
	return true
}

// merge adds what o holds into c: the counts and sums, and the ΔS
// distributions and λ summaries when dists and lam say so.
func (c *cell) merge(o *cell, dists, lam bool) {
	for i, v := range o.cnt {
		c.cnt[i] += v
	}
	for i, v := range o.sums {
		c.sums[i].merge(v)
	}
	if dists {
		c.cited.merge(&o.cited)
		c.ret.merge(&o.ret)
	}
	if !lam {
		return
	}
	for j := range o.lam {
		x := &o.lam[j]
		k, ok := c.lamIdx[x.key]
		if !ok {
			k = int32(len(c.lam))
			c.lam = append(c.lam, lamSum{key: x.key})
			c.lamIdx[x.key] = k
		}
		c.lam[k].merge(x)
	}
}

// add records o, whose λ group key is key (Windows.lamKey). idx holds the
// sketch indexes of o's ΔS values (see arm.sketchIndexes), or is nil when
// the cell must map them itself.
func (c *cell) add(l *layout, o *Observation, idx []int, key uint32) {
	c.addCounts(l, o)
	if idx != nil {
		if citedCounted(o) {
			c.cited.addIndex(idx[0], o.DeltaSCited)
		}
		for i, v := range o.DeltaSRetrieved {
			c.ret.addIndex(idx[i+1], v)
		}
	} else {
		if citedCounted(o) {
			c.cited.addIndex(mapIndex(o.DeltaSCited), o.DeltaSCited)
		}
		for _, v := range o.DeltaSRetrieved {
			c.ret.addIndex(mapIndex(v), v)
		}
	}
	if inLambda(o) {
		j, ok := c.lamIdx[key]
		if !ok {
			j = int32(len(c.lam))
			c.lam = append(c.lam, lamSum{key: key})
			c.lamIdx[key] = j
		}
		c.lam[j].add(o.Lambda)
	}
}

// addCounts records the counters and sums of o: all but its ΔS values and
// its λ run.
func (c *cell) addCounts(l *layout, o *Observation) {
	set := countEvent(c.cnt, l, o)
	if o.HasRetrieval {
		sp := c.sums[l.sum[sumPrecisionAtK] : l.sum[sumPrecisionAtK]+l.nk]
		for i, v := range o.PrecisionAtK {
			sp[i].add(v)
		}
	}
	if o.HasRecallAtK {
		sr := c.sums[l.sum[sumRecallAtK] : l.sum[sumRecallAtK]+l.nk]
		for i, v := range o.RecallAtK {
			sr[i].add(v)
		}
	}
	if len(o.Means) > 0 {
		at := 0
		for _, b := range meanBlocks {
			w := b.width(l.nk)
			if set.Has(b.den) {
				s := c.sums[l.means+at : l.means+at+w]
				for i, v := range o.Means[at : at+w] {
					s[i].add(v)
				}
			}
			at += w
		}
	}
}

// inLambda says whether o counts in its qid's λ group.
func inLambda(o *Observation) bool { return o.HasAnswer || o.Lambda.State != LambdaNone }

// zeroIndex marks a ΔS counted as 0.
const zeroIndex = math.MinInt

// sketchMapping is the index mapping of every ΔS sketch: DDSketch's
// cubically interpolated mapping, as accurate as the logarithmic one with a
// few more bins, and several times cheaper to compute (no math.Log).
var sketchMapping = func() *mapping.CubicallyInterpolatedMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(RelativeAccuracy)
	if err != nil {
		panic(err)
	}
	return m
}()

// mapIndex maps a ΔS value, clamped to [0,1], to its sketch bin.
func mapIndex(v float64) int {
	if v < MinDeltaS {
		return zeroIndex
	}
	return sketchMapping.Index(min(v, 1))
}

// citedCounted: ΔS cited counts for shipped answers only.
func citedCounted(o *Observation) bool {
	return o.HasDeltaSCited && o.HasAnswer && o.Shipped
}

// dist is a bucket's share of a ΔS distribution: a DDSketch positive store
// (the mapping is shared by all), the values counted as 0, and the exact
// count, minimum and maximum.
type dist struct {
	st       *store.DenseStore // nil until the first positive value
	zero     float64
	n        int64
	min, max float64
}

func (d *dist) reset() {
	if d.st != nil {
		d.st.Clear()
	}
	d.zero, d.n, d.min, d.max = 0, 0, 0, 0
}

// addIndex counts value v (clamped to [0,1]) whose sketch index is i.
func (d *dist) addIndex(i int, v float64) {
	v = max(0, min(v, 1))
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	if i == zeroIndex {
		d.zero++
		return
	}
	if d.st == nil {
		d.st = store.NewDenseStore()
	}
	d.st.Add(i)
}

// merge adds o into d; d.st is allocated when needed.
func (d *dist) merge(o *dist) {
	if o.n == 0 {
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	d.zero += o.zero
	if o.st != nil && !o.st.IsEmpty() {
		if d.st == nil {
			d.st = store.NewDenseStore()
		}
		d.st.MergeWith(o.st)
	}
}

// lamSum is the mergeable summary of the runs of one qid: enough to apply
// the rule of checks.LambdaGroup to the union of several summaries.
//
// Counts are 32-bit: a qid would need four billion runs in one window to
// overflow them, and the analyses keep one summary per qid per arm, which
// the smaller size keeps in cache.
type lamSum struct {
	key      uint32 // the qid's (Windows.lamKey)
	mixed    bool   // not all runs cite the set hashed in cited
	runs     uint32
	stated   uint32 // runs with a λ state
	notArrow uint32 // stated runs whose state is not →
	back     uint32 // runs in state ←
	refused  uint32 // runs whose claim is a refusal
	cited    uint64
}

func (s *lamSum) add(r LambdaRun) {
	if s.runs == 0 {
		s.cited = r.Cited
	} else if r.Cited != s.cited {
		s.mixed = true
	}
	s.runs++
	if r.State != LambdaNone {
		s.stated++
		if r.State != LambdaConvergent {
			s.notArrow++
		}
		if r.State == LambdaDivergent {
			s.back++
		}
	}
	if r.Refused {
		s.refused++
	}
}

func (s *lamSum) merge(o *lamSum) {
	if o.runs == 0 {
		return
	}
	if s.runs == 0 {
		key := s.key
		*s = *o
		s.key = key
		return
	}
	if o.mixed || o.cited != s.cited {
		s.mixed = true
	}
	s.runs += o.runs
	s.stated += o.stated
	s.notArrow += o.notArrow
	s.back += o.back
	s.refused += o.refused
}

// eval is checks.LambdaGroup on the summarised runs.
func (s *lamSum) eval(minRuns int) (complete, convergent, flips bool) {
	return evalGroup(s.runs, s.stated, s.notArrow, s.back, s.refused, s.mixed, minRuns)
}

// evalGroup judges a λ group from its counts (lamSum, openGroup).
func evalGroup(runs, stated, notArrow, back, refused uint32, mixed bool, minRuns int) (complete, convergent, flips bool) {
	complete = int64(runs) >= int64(minRuns)
	if runs == 0 {
		return complete, false, false
	}
	allArrow := notArrow == 0
	anyBack := back > 0
	if stated == runs {
		return complete, allArrow, anyBack
	}
	sameDecision := refused == 0 || refused == runs
	return complete, sameDecision && !mixed && allArrow, !sameDecision || anyBack
}
