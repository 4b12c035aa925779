package window

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// Writer records observations for one ingest goroutine. It stages the
// observations of the newest bucket in cells of its own, and merges them
// into the shared rings when it moves on to the next bucket or when
// anything reads the windows. So an observation costs one cell update under
// a lock nobody else takes (rather than one per window under the arm's
// lock, which the ingest goroutines would fight over), and reads see every
// observation whose Add has returned. The numbers are the same as Add's:
// everything in a cell merges exactly.
//
// A Writer is safe for concurrent use, but is fastest when one goroutine
// owns it.
type Writer struct {
	w      *Windows
	mu     sync.Mutex // serialises stage creation
	stages atomic.Pointer[map[*arm]*stage]
}

// stage is a Writer's staged bucket of one arm.
type stage struct {
	mu    sync.Mutex
	a     *arm
	epoch int64           // staged bucket: time / Windows.stageRes
	n     int64           // observations staged
	cells []*cell         // by type index; nil until used
	types map[string]int  // content type → type index (folding counted per event)
	fold  map[string]bool // types folded into vocab.Other
}

// NewWriter returns a Writer adding to w.
func (w *Windows) NewWriter() *Writer {
	wr := &Writer{w: w}
	wr.stages.Store(&map[*arm]*stage{})
	return wr
}

// Add records one observation, with the results of Windows.Add. An
// observation every window accepts and that is not older than the bucket
// staged goes to the stage; any other takes Windows.Add's path.
func (wr *Writer) Add(o *Observation, now time.Time) error {
	w := wr.w
	t, nowNS, mask, err := w.admissible(o, now)
	if err != nil {
		return err
	}
	a := w.getArm(o.Arm)
	if mask != w.allRings {
		return w.add(a, o, t, nowNS, mask)
	}
	st := wr.stage(a)
	key := w.lamKey(o)
	b := floorDiv(t, w.stageRes)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.n > 0 && b != st.epoch {
		if b < st.epoch {
			return w.add(a, o, t, nowNS, mask)
		}
		w.flush(st)
	}
	if !w.admit(a, t) {
		return ErrLate
	}
	st.epoch = b
	cellAt(&st.cells, st.typeIndex(w, o.Type), &w.layout).add(&w.layout, o, nil, key)
	st.n++
	a.advance(t, nowNS)
	return nil
}

// stage returns wr's stage of a, creating and registering it on first use.
func (wr *Writer) stage(a *arm) *stage {
	if st, ok := (*wr.stages.Load())[a]; ok {
		return st
	}
	wr.mu.Lock()
	defer wr.mu.Unlock()
	m := *wr.stages.Load()
	if st, ok := m[a]; ok {
		return st
	}
	st := &stage{a: a, types: map[string]int{}, fold: map[string]bool{}}
	a.mu.Lock()
	a.stages = append(a.stages, st)
	a.mu.Unlock()
	nm := maps.Clone(m)
	nm[a] = st
	wr.stages.Store(&nm)
	return st
}

// typeIndex is Windows.typeIndex with the answers kept. A name folded
// into vocab.Other stays folded (types are never dropped), and each event of it
// is counted as folded, as there.
func (st *stage) typeIndex(w *Windows, name string) int {
	if i, ok := st.types[name]; ok {
		if st.fold[name] {
			w.foldedTypes.Add(1)
		}
		return i
	}
	key := name
	if key == "" {
		key = vocab.DefaultType
	}
	st.a.mu.Lock()
	i := w.typeIndex(st.a, name)
	_, kept := st.a.types.Index[key]
	st.a.mu.Unlock()
	st.types[name] = i
	if !kept {
		st.fold[name] = true
	}
	return i
}

// flush merges st into its arm's rings and empties it. st.mu is held.
// A ring whose slot has moved past the staged bucket no longer holds it
// in its window, so the bucket is not added there.
func (w *Windows) flush(st *stage) {
	if st.n == 0 {
		return
	}
	a := st.a
	t := st.epoch * w.stageRes
	a.mu.Lock()
	for ti, sc := range st.cells {
		if sc == nil || sc.empty() {
			continue
		}
		for i := range a.rings {
			if c := w.cellFor(&a.rings[i], t, ti); c != nil {
				c.merge(sc, true, true)
			}
		}
		sc.reset()
	}
	a.mu.Unlock()
	st.n = 0
}

// flushArm merges every Writer's stage of a into a's rings, so that a read
// that follows sees every observation added before it. a.mu is not held.
func (w *Windows) flushArm(a *arm) {
	a.mu.Lock()
	stages := a.stages
	a.mu.Unlock()
	for _, st := range stages {
		st.mu.Lock()
		w.flush(st)
		st.mu.Unlock()
	}
}
