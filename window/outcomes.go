package window

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// OutcomeCounts are events by outcome over one window.
type OutcomeCounts [vocab.NumOutcomes]int64

// OutcomeCounter counts events by arm and outcome over the same sliding
// windows as the metrics, by arrival time (a rejected event has no event
// time to trust). Memory is buckets × arms. Every event is counted here,
// from several goroutines, so each arm has its own lock and finding an
// arm takes none.
type OutcomeCounter struct {
	specs []Spec
	mu    sync.Mutex                               // serialises adding an arm
	arms  atomic.Pointer[map[string]*outcomeRings] // replaced whole when an arm is added
}

type outcomeRings struct {
	mu    sync.Mutex
	rings []outcomeRing // one per window
}

type outcomeRing struct {
	res   int64 // resolution in ns
	slots []outcomeSlot
}

type outcomeSlot struct {
	bucket int64
	counts OutcomeCounts
}

// NewOutcomeCounter returns a counter over specs (as validated by New).
func NewOutcomeCounter(specs []Spec) *OutcomeCounter {
	c := &OutcomeCounter{specs: specs}
	c.arms.Store(&map[string]*outcomeRings{})
	return c
}

// arm is the rings of arm, made on first use.
func (c *OutcomeCounter) arm(arm string) *outcomeRings {
	if r, ok := (*c.arms.Load())[arm]; ok {
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.arms.Load()
	if r, ok := old[arm]; ok {
		return r
	}
	r := &outcomeRings{rings: make([]outcomeRing, len(c.specs))}
	for i, s := range c.specs {
		r.rings[i] = outcomeRing{res: int64(s.Resolution), slots: make([]outcomeSlot, s.Length/s.Resolution)}
		for j := range r.rings[i].slots {
			r.rings[i].slots[j].bucket = -1
		}
	}
	next := make(map[string]*outcomeRings, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[arm] = r
	c.arms.Store(&next)
	return r
}

// Count records one event of arm with outcome o arriving at now. A time
// older than a window's span is not counted in that window (a replay may
// count at the times events first arrived).
func (c *OutcomeCounter) Count(arm string, o vocab.Outcome, now time.Time) {
	a := c.arm(arm)
	t := now.UnixNano()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.rings {
		r := &a.rings[i]
		b := t / r.res
		s := &r.slots[b%int64(len(r.slots))]
		if s.bucket > b {
			continue // older than this window: its slot holds a newer bucket
		}
		if s.bucket != b {
			*s = outcomeSlot{bucket: b}
		}
		s.counts[o]++
	}
}

// Counts sums the events of arm over the window named window at now.
func (c *OutcomeCounter) Counts(arm, window string, now time.Time) OutcomeCounts {
	var sum OutcomeCounts
	a, ok := (*c.arms.Load())[arm]
	if !ok {
		return sum
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range c.specs {
		if s.Name != window {
			continue
		}
		r := &a.rings[i]
		cur := now.UnixNano() / r.res
		n := int64(len(r.slots))
		for _, slot := range r.slots {
			if slot.bucket > cur-n && slot.bucket <= cur {
				for o := range sum {
					sum[o] += slot.counts[o]
				}
			}
		}
	}
	return sum
}

// Map returns the counts keyed by outcome name.
func (oc OutcomeCounts) Map() map[string]int64 {
	m := make(map[string]int64, vocab.NumOutcomes)
	for o, n := range oc {
		m[vocab.Outcomes[o]] = n
	}
	return m
}
