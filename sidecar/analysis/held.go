package analysis

import (
	"sync"
	"unsafe"

	"github.com/shadoweval/shadoweval/window"
)

// heldBatch is how many accepted observations wait before they are
// counted: enough to keep the tables warm (256 saved no more CPU through
// NATS), few enough that a read which finds them held counts them in
// tens of microseconds.
const heldBatch = 64

// accLock is the lock over every analysis' state. An observation the
// windows accepted (so that counting it cannot fail) is not counted when
// it comes, but held, copied, and counted with the ones held before it
// once heldBatch of them wait or anyone else takes the lock: Lock counts
// them first, so every reader, and every other change, finds them counted
// in the order they came, as if each had been counted on arrival. Counted
// in a batch, the events find the pairing and accumulator tables still in
// the caches the previous one warmed, where one at a time, between NATS
// messages, each would find them cold.
type accLock struct {
	mu sync.Mutex
	m  *Manager
	held
}

// Lock takes the lock and counts what is held.
func (l *accLock) Lock() {
	l.mu.Lock()
	l.countHeldLocked()
}

func (l *accLock) Unlock() { l.mu.Unlock() }

// held is the observations waiting, with their lists and strings copied
// into memory of its own: the caller's are reused after Observe returns.
type held struct {
	list  []heldObservation
	nums  []float64
	bytes []byte
}

type heldObservation struct {
	o          window.Observation
	ns, period int64
	r          *armRoute
}

// hold keeps o, at event time ns in narrowing period period, for route r,
// and counts the batch once it is full. The caller holds l.mu.
func (l *accLock) hold(o *window.Observation, ns, period int64, r *armRoute) {
	l.list = append(l.list, heldObservation{o: *o, ns: ns, period: period, r: r})
	// What the analyses read of it is copied; what they do not (the arm
	// is r's, and they keep no type or retrieved ΔS) is left out.
	c := &l.list[len(l.list)-1].o
	c.Arm, c.Type, c.QID, c.RequestID = "", "", l.str(o.QID), l.str(o.RequestID)
	c.PrecisionAtK, c.RecallAtK, c.Means, c.DeltaSRetrieved = l.floats(o.PrecisionAtK), l.floats(o.RecallAtK), l.floats(o.Means), nil
	if len(l.list) >= heldBatch {
		l.countHeldLocked()
	}
}

// countHeldLocked counts the held observations in the order they came.
func (l *accLock) countHeldLocked() {
	if len(l.list) == 0 {
		return
	}
	for i := range l.list {
		h := &l.list[i]
		// Accepted, with at most window.MaxCutoffs cut-offs (observe):
		// counting it does not fail.
		_ = l.m.observeLocked(&h.o, h.ns, h.period, h.r, true)
	}
	clear(l.list)
	l.list, l.nums, l.bytes = l.list[:0], l.nums[:0], l.bytes[:0]
	// The Prepared may name a held string, whose bytes are reused next.
	l.m.prepared = window.Prepared{}
}

// floats copies s into l's own memory; nil stays nil.
func (l *held) floats(s []float64) []float64 {
	if s == nil {
		return nil
	}
	if cap(l.nums)-len(l.nums) < len(s) {
		// A new array: the copies made into the old one stay valid.
		l.nums = make([]float64, 0, max(2*cap(l.nums), len(s), 1024))
	}
	start := len(l.nums)
	l.nums = append(l.nums, s...)
	return l.nums[start:len(l.nums):len(l.nums)]
}

// str copies s into l's own memory.
func (l *held) str(s string) string {
	if s == "" {
		return ""
	}
	if cap(l.bytes)-len(l.bytes) < len(s) {
		l.bytes = make([]byte, 0, max(2*cap(l.bytes), len(s), 4096))
	}
	start := len(l.bytes)
	l.bytes = append(l.bytes, s...)
	return unsafe.String(&l.bytes[start], len(s))
}
