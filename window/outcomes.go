package window

import (
	"sync"
	"time"
)

// Outcome is what became of one incoming event (SPEC §6).
type Outcome int

// The outcomes, in the order of Outcomes.
const (
	Scored Outcome = iota
	Unlabeled
	Rejected
	Duplicate
	Late
	JoinTimeout
	numOutcomes
)

// Outcomes names the outcomes, as labels and JSON keys.
var Outcomes = [numOutcomes]string{"scored", "unlabeled", "rejected", "duplicate", "late", "join_timeout"}

func (o Outcome) String() string { return Outcomes[o] }

// OutcomeCounts are events by outcome over one window.
type OutcomeCounts [numOutcomes]int64

// OutcomeCounter counts events by arm and outcome over the same sliding
// windows as the metrics, by arrival time (a rejected event has no event
// time to trust). Memory is buckets × arms.
type OutcomeCounter struct {
	specs []Spec
	mu    sync.Mutex
	arms  map[string][]outcomeRing // per arm, one ring per window
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
	return &OutcomeCounter{specs: specs, arms: make(map[string][]outcomeRing)}
}

// Count records one event of arm with outcome o arriving at now. A time
// older than a window's span is not counted in that window (a replay may
// count at the times events first arrived).
func (c *OutcomeCounter) Count(arm string, o Outcome, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rings, ok := c.arms[arm]
	if !ok {
		rings = make([]outcomeRing, len(c.specs))
		for i, s := range c.specs {
			rings[i] = outcomeRing{res: int64(s.Resolution), slots: make([]outcomeSlot, s.Length/s.Resolution)}
			for j := range rings[i].slots {
				rings[i].slots[j].bucket = -1
			}
		}
		c.arms[arm] = rings
	}
	t := now.UnixNano()
	for i := range rings {
		r := &rings[i]
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
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum OutcomeCounts
	rings, ok := c.arms[arm]
	if !ok {
		return sum
	}
	for i, s := range c.specs {
		if s.Name != window {
			continue
		}
		r := &rings[i]
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
	m := make(map[string]int64, numOutcomes)
	for o, n := range oc {
		m[Outcomes[o]] = n
	}
	return m
}
