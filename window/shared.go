package window

import (
	"slices"
	"time"

	"github.com/DataDog/sketches-go/ddsketch/store"
)

// Shared is what the accumulators of the running analyses of one arm
// share. Every running analysis reads the same events of the arm, so
// accumulating an event into each of them would repeat the same work:
//
//   - tot counts every event of the arm once, since the table was made;
//     an attached accumulator is its own counts plus what tot gained since
//     it attached (mark), less the events it did not take (Exclude);
//   - the open λ groups sit in a table with a row per qid and a column per
//     accumulator, so an event's run reaches all of its groups in one row
//     of adjacent cache lines rather than one scattered slot each.
//
// A Cumulative has a private one-column table until AttachTo moves it to
// a Shared, and Detach moves it out again.
//
// Not safe for concurrent use; the accumulators sharing it share a lock.
type Shared struct {
	l   layout
	tot *cell // nil in an accumulator's private table
	n   int64 // events added
	vis visits
	LambdaTable
	// cols holds, by column, the attached accumulator and what an event
	// changes in it beside its λ group, so that giving an event to every
	// attached accumulator reads one row of groups and this slice and
	// touches none of the accumulators unless a group completes.
	cols []attachedCol
}

// attachedCol is an attached accumulator as its column sees it.
type attachedCol struct {
	cu      *Cumulative // nil: the column is free
	minRuns int
	// The minimum and maximum of the ΔS-cited values taken since cu last
	// folded (taken: any was); cu.fold moves them into cu.
	taken    bool
	min, max float64
	// The λ groups completed since cu last folded, kept here so that a
	// completion does not reach into cu; cu.fold moves them into cu.
	lam lamCounts
}

// attach records cu as the owner of its column.
func (sh *Shared) attach(cu *Cumulative) {
	if n := cu.col + 1; n > len(sh.cols) {
		sh.cols = slices.Grow(sh.cols, n-len(sh.cols))[:n]
	}
	sh.cols[cu.col] = attachedCol{cu: cu, minRuns: cu.minRuns}
}

// detach frees cu's column.
func (sh *Shared) detach(cu *Cumulative) {
	sh.cols[cu.col] = attachedCol{}
	sh.release(cu.col)
}

// AddAll gives a prepared observation to every attached accumulator: Add
// and AddRuns for all of them.
func (sh *Shared) AddAll(p *Prepared) {
	sh.Add(p)
	sh.giveAll(p.cited, p.citedVal, p.lambda, p.run, sh.rowOf(p))
}

// AddAllAccepted is AddAll for an observation that Windows.Add accepted
// with sh's cut-offs, counted straight from o as a window cell counts it,
// without digesting it first.
func (sh *Shared) AddAllAccepted(o *Observation, ns int64) {
	sh.n++
	sh.tot.addCounts(&sh.l, o)
	cited := citedCounted(o)
	if cited {
		sh.tot.cited.addIndex(mapIndex(o.DeltaSCited), o.DeltaSCited)
	}
	var hash uint64
	r := sh.rowFor(o.QIDKey, o.QID, &hash)
	var vi visitIncs
	e := matchEvent{set: o.eventCounters(), recall: o.RecallStrict, hit: o.HitAtK, triage: int8(o.Triage)}
	if cited {
		e.cited = 1 + citedBin(o.DeltaSCited)
	}
	sh.vis.step(&sh.l, r, ns, &e, &vi)
	vi.apply(sh.tot.cnt)
	sh.giveAll(cited, o.DeltaSCited, inLambda(o), o.Lambda, r)
}

// giveAll gives every attached accumulator an observation's ΔS-cited value
// (when cited) and λ run (when lambda, in the qid's row r): take over all
// columns, with what is the same for every column worked out once.
func (sh *Shared) giveAll(cited bool, citedVal float64, lambda bool, run LambdaRun, r int32) {
	cols := sh.cols
	if cited {
		v := max(0, min(citedVal, 1))
		for i := range cols {
			col := &cols[i]
			if col.cu == nil {
				continue
			}
			if !col.taken {
				col.min, col.max, col.taken = v, v, true
			} else {
				col.min, col.max = min(col.min, v), max(col.max, v)
			}
		}
	}
	if !lambda {
		return
	}
	groups := sh.sums[int(r)*sh.stride:][:len(cols)]
	d := runDelta(run)
	for i := range cols {
		col := &cols[i]
		if col.cu == nil {
			continue
		}
		g := &groups[i]
		g.addDelta(&d)
		if int(g.runs) >= col.minRuns {
			col.lam.count(g.eval(col.minRuns))
			*g = openGroup{}
		}
	}
}

// take gives column c the ΔS-cited bounds and the λ run (row r) of p.
func (sh *Shared) take(c int, r int32, p *Prepared) {
	col := &sh.cols[c]
	if p.cited {
		v := max(0, min(p.citedVal, 1))
		if !col.taken {
			col.min, col.max, col.taken = v, v, true
		} else {
			col.min, col.max = min(col.min, v), max(col.max, v)
		}
	}
	if p.lambda {
		g := sh.group(r, c)
		g.add(p.run)
		if int(g.runs) >= col.minRuns {
			col.lam.count(g.eval(col.minRuns))
			*g = openGroup{}
		}
	}
}

// NewShared returns the shared state of an arm's accumulators of the
// cut-offs ks.
func NewShared(ks []int) *Shared {
	l := newCumulativeLayout(len(ks))
	return &Shared{l: l, tot: newCell(&l), vis: newVisits(ks), LambdaTable: LambdaTable{byHash: map[uint64]int32{}}}
}

// SetVisitGap sets the span of a visit (visits.go).
func (sh *Shared) SetVisitGap(d time.Duration) { sh.vis.gap = int64(d) }

// SetUncounted leaves out of the visit sums the paired series named
// (UncountedSeries): their sums stay 0. Set before any event.
func (sh *Shared) SetUncounted(names []string) {
	cells := slices.Clone(sh.vis.cells)
	n := len(cells) - 1 // the ΔS-cited values', last, are always counted
	copy(cells, uncount(cells[:n], sh.vis.ks, names))
	sh.vis.cells = cells
}

// VisitGap is the span of a visit.
func (sh *Shared) VisitGap() time.Duration { return time.Duration(sh.vis.gap) }

// Add counts a prepared observation once for every attached accumulator;
// AddRuns then gives its λ run to those that take it, and Exclude takes it
// back out of those that do not.
func (sh *Shared) Add(p *Prepared) {
	sh.n++
	sh.visit(p)
	addCounts(sh.tot, p)
}

// visit works out what p changes in its visit's sums, into p.
func (sh *Shared) visit(p *Prepared) {
	e := matchEvent{set: p.set, recall: p.recall, hit: p.hit, triage: p.triage}
	if p.cited {
		e.cited = 1 + citedBin(p.citedVal)
	}
	sh.vis.step(&sh.l, sh.rowOf(p), p.ns, &e, &p.vinc)
}

// LambdaTable holds open λ groups: a row per qid, a column per accumulator.
type LambdaTable struct {
	stride int         // columns per row
	used   []bool      // per column
	hashes []uint64    // per row: the qid's hash (qidHash)
	sums   []openGroup // row*stride + column
	// A qid's row is found by its QIDKey through dense when the caller
	// numbers qids, else (and for groups restored from a checkpoint, until
	// their qid shows up) by its hash. byHash holds every row, so a
	// restored group meets the row its qid already has.
	dense  []int32 // QIDKey → row + 1
	byHash map[uint64]int32
}

// column takes a free column, widening every row when none is.
func (t *LambdaTable) column() int {
	if c := slices.Index(t.used, false); c >= 0 {
		t.used[c] = true
		return c
	}
	c := len(t.used)
	t.used = append(t.used, true)
	if c < t.stride {
		return c
	}
	wider := max(1, 2*t.stride)
	sums := make([]openGroup, len(t.hashes)*wider)
	for r := range t.hashes {
		copy(sums[r*wider:], t.sums[r*t.stride:(r+1)*t.stride])
	}
	t.stride, t.sums = wider, sums
	return c
}

// release empties column c and frees it for another accumulator.
func (t *LambdaTable) release(c int) {
	for r := range t.hashes {
		t.sums[r*t.stride+c] = openGroup{}
	}
	t.used[c] = false
}

// rowOf finds or makes the row of p's qid. The qid's hash is worked out
// only when its key does not find the row.
func (t *LambdaTable) rowOf(p *Prepared) int32 { return t.rowFor(p.qidKey, p.qid, &p.hash) }

// rowFor finds or makes the row of the qid numbered key; *hash is the
// qid's hash, worked out into it when 0 and needed.
func (t *LambdaTable) rowFor(key uint32, qid string, hash *uint64) int32 {
	if key != 0 && key < maxDenseQIDKey && int(key) < len(t.dense) && t.dense[key] != 0 {
		return t.dense[key] - 1
	}
	if *hash == 0 {
		*hash = qidHash(qid)
	}
	return t.row(key, *hash)
}

// row finds or makes the row of a qid.
func (t *LambdaTable) row(key uint32, hash uint64) int32 {
	dense := key != 0 && key < maxDenseQIDKey
	if dense && int(key) < len(t.dense) && t.dense[key] != 0 {
		return t.dense[key] - 1
	}
	r := t.rowByHash(hash)
	if dense {
		if int(key) >= len(t.dense) {
			t.dense = slices.Grow(t.dense, int(key)+1-len(t.dense))[:int(key)+1]
		}
		t.dense[key] = r + 1
	}
	return r
}

func (t *LambdaTable) rowByHash(hash uint64) int32 {
	r, ok := t.byHash[hash]
	if !ok {
		r = int32(len(t.hashes))
		t.hashes = append(t.hashes, hash)
		t.sums = append(t.sums, make([]openGroup, t.stride)...)
		t.byHash[hash] = r
	}
	return r
}

// group is column c's group in row r.
func (t *LambdaTable) group(r int32, c int) *openGroup {
	return &t.sums[int(r)*t.stride+c]
}

// open calls f with the hash and group of every open group of column c.
func (t *LambdaTable) open(c int, f func(hash uint64, g *openGroup)) {
	for r, h := range t.hashes {
		if g := &t.sums[r*t.stride+c]; g.runs > 0 {
			f(h, g)
		}
	}
}

// openGroup is an open λ group of an analysis: the runs of a qid since
// its last complete group, fewer than lambda.min_runs (at most
// maxGroupRuns), so 8-bit counts hold them and a table row of 8
// accumulators' groups fills two cache lines rather than five.
type openGroup struct {
	cited                                 uint64
	runs, stated, notArrow, back, refused uint8
	mixed                                 bool
}

func (g *openGroup) add(r LambdaRun) {
	d := runDelta(r)
	g.addDelta(&d)
}

// groupDelta is what one run adds to an open group's counts.
type groupDelta struct {
	cited                           uint64
	stated, notArrow, back, refused uint8
}

func runDelta(r LambdaRun) groupDelta {
	d := groupDelta{cited: r.Cited}
	if r.State != LambdaNone {
		d.stated = 1
		if r.State != LambdaConvergent {
			d.notArrow = 1
		}
		if r.State == LambdaDivergent {
			d.back = 1
		}
	}
	if r.Refused {
		d.refused = 1
	}
	return d
}

func (g *openGroup) addDelta(d *groupDelta) {
	if g.runs == 0 {
		g.cited = d.cited
	} else if d.cited != g.cited {
		g.mixed = true
	}
	g.runs++
	g.stated += d.stated
	g.notArrow += d.notArrow
	g.back += d.back
	g.refused += d.refused
}

func (g *openGroup) eval(minRuns int) (complete, convergent, flips bool) {
	return evalGroup(uint32(g.runs), uint32(g.stated), uint32(g.notArrow), uint32(g.back), uint32(g.refused), g.mixed, minRuns)
}

// sum is the group as the windows' λ summary.
func (g *openGroup) sum() lamSum {
	return lamSum{cited: g.cited, mixed: g.mixed, runs: uint32(g.runs), stated: uint32(g.stated),
		notArrow: uint32(g.notArrow), back: uint32(g.back), refused: uint32(g.refused)}
}

// openGroupOf is s as an open group; s has fewer than maxGroupRuns runs.
func openGroupOf(s lamSum) openGroup {
	return openGroup{cited: s.cited, mixed: s.mixed, runs: uint8(s.runs), stated: uint8(s.stated),
		notArrow: uint8(s.notArrow), back: uint8(s.back), refused: uint8(s.refused)}
}

// addCells adds (sign 1) or takes away (sign -1) src's counts, sums and
// ΔS-cited counts to or from dst. The cited minimum and maximum stay:
// they are not differences of anything.
func addCells(dst, src *cell, sign int64) {
	for i, v := range src.cnt {
		dst.cnt[i] += sign * v
	}
	for i, v := range src.sums {
		if sign > 0 {
			dst.sums[i].merge(v)
		} else {
			dst.sums[i].sub(v)
		}
	}
	d, o := &dst.cited, &src.cited
	d.n += sign * o.n
	d.zero += float64(sign) * o.zero
	if o.st != nil && !o.st.IsEmpty() {
		if d.st == nil {
			d.st = store.NewDenseStore()
		}
		o.st.ForEach(func(i int, c float64) bool {
			d.st.AddWithCount(i, float64(sign)*c)
			return false
		})
	}
}

// copyCounts makes c (allocated when nil) a copy of src's counts, sums and
// ΔS-cited counts, and returns it.
func (c *cell) copyCounts(src *cell) *cell {
	if c == nil {
		c = &cell{cnt: make([]int64, len(src.cnt)), sums: make([]fixedSum, len(src.sums))}
	}
	copy(c.cnt, src.cnt)
	copy(c.sums, src.sums)
	c.cited.reset()
	c.cited.n, c.cited.zero = src.cited.n, src.cited.zero
	if src.cited.st != nil && !src.cited.st.IsEmpty() {
		if c.cited.st == nil {
			c.cited.st = store.NewDenseStore()
		}
		c.cited.st.MergeWith(src.cited.st)
	}
	return c
}
