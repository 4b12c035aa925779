package window

import (
	"slices"

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
	tot *cell // nil in an accumulator's private table
	LambdaTable
}

// NewShared returns the shared state of an arm's accumulators of the
// cut-offs ks.
func NewShared(ks []int) *Shared {
	l := newLayout(len(ks))
	return &Shared{tot: newCell(&l), LambdaTable: LambdaTable{byHash: map[uint64]int32{}}}
}

// Add counts a prepared observation once for every attached accumulator;
// AddRuns then gives its λ run to those that take it, and Exclude takes it
// back out of those that do not.
func (sh *Shared) Add(p *Prepared) {
	addCounts(sh.tot, p)
}

// LambdaTable holds open λ groups: a row per qid, a column per accumulator.
type LambdaTable struct {
	stride int      // columns per row
	used   []bool   // per column
	hashes []uint64 // per row: the qid's hash (qidHash)
	sums   []lamSum // row*stride + column
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
	sums := make([]lamSum, len(t.hashes)*wider)
	for r := range t.hashes {
		copy(sums[r*wider:], t.sums[r*t.stride:(r+1)*t.stride])
	}
	t.stride, t.sums = wider, sums
	return c
}

// release empties column c and frees it for another accumulator.
func (t *LambdaTable) release(c int) {
	for r := range t.hashes {
		t.sums[r*t.stride+c] = lamSum{}
	}
	t.used[c] = false
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
		t.sums = append(t.sums, make([]lamSum, t.stride)...)
		t.byHash[hash] = r
	}
	return r
}

// group is column c's group in row r.
func (t *LambdaTable) group(r int32, c int) *lamSum {
	return &t.sums[int(r)*t.stride+c]
}

// open calls f with the hash and group of every open group of column c.
func (t *LambdaTable) open(c int, f func(hash uint64, g *lamSum)) {
	for r, h := range t.hashes {
		if g := &t.sums[r*t.stride+c]; g.runs > 0 {
			f(h, g)
		}
	}
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
