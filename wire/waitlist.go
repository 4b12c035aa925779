package wire

import "time"

// Waitlist holds values by key, in arrival order, for at most a TTL and at
// most a number of them: what waits for a partner (the halves of a split
// event, the first of two judgements). Every operation is O(1) per value it
// touches; it has no goroutines or timers (the caller passes the time and
// calls Expire) and is not safe for concurrent use.
//
// Times should come from one monotonic clock; a time earlier than the
// newest value's is taken as that value's, so arrival order is age order.
type Waitlist[K comparable, V any] struct {
	ttl        time.Duration
	max        int
	byKey      map[K]*waiting[K, V]
	head, tail *waiting[K, V] // oldest, newest
	free       *waiting[K, V] // recycled entries, linked by next
	nfree      int
}

type waiting[K comparable, V any] struct {
	key        K
	val        V
	since      time.Time
	prev, next *waiting[K, V] // arrival order: prev is older
}

// Gone is a value that left a Waitlist without being taken.
type Gone[K comparable, V any] struct {
	Key   K
	Value V
	Since time.Time // when it was put
}

// maxFree bounds the entries a Waitlist keeps for reuse.
const maxFree = 1024

// NewWaitlist makes a Waitlist holding values for ttl, at most max (≥ 1)
// of them.
func NewWaitlist[K comparable, V any](ttl time.Duration, max int) *Waitlist[K, V] {
	return &Waitlist[K, V]{ttl: ttl, max: max, byKey: make(map[K]*waiting[K, V])}
}

// Len is the number of values waiting.
func (w *Waitlist[K, V]) Len() int { return len(w.byKey) }

// Get is the value waiting under k and when it was put.
func (w *Waitlist[K, V]) Get(k K) (v V, since time.Time, ok bool) {
	e, ok := w.byKey[k]
	if !ok {
		return v, time.Time{}, false
	}
	return e.val, e.since, true
}

// Clock is now as the Waitlist counts it: not before the newest value's
// time.
func (w *Waitlist[K, V]) Clock(now time.Time) time.Time {
	if w.tail != nil && now.Before(w.tail.since) {
		return w.tail.since
	}
	return now
}

// Expired says whether a value put at since has waited longer than the
// TTL at now.
func (w *Waitlist[K, V]) Expired(since, now time.Time) bool {
	return now.Sub(since) > w.ttl
}

// Take removes the value waiting under k, if any.
func (w *Waitlist[K, V]) Take(k K) (v V, since time.Time, ok bool) {
	e, ok := w.byKey[k]
	if !ok {
		return v, time.Time{}, false
	}
	g := w.remove(e)
	return g.Value, g.Since, true
}

// Put makes v wait under k from now: a value already under k is replaced
// (and returned as replaced, its wait restarted by v's); when more than
// the maximum wait, the oldest leave (overflow).
func (w *Waitlist[K, V]) Put(k K, v V, now time.Time) (replaced *Gone[K, V], overflow []Gone[K, V]) {
	now = w.Clock(now)
	if e, ok := w.byKey[k]; ok {
		replaced = &Gone[K, V]{Key: k, Value: e.val, Since: e.since}
		e.val, e.since = v, now
		w.unlink(e)
		w.pushBack(e)
		return replaced, nil
	}
	e := w.alloc()
	e.key, e.val, e.since = k, v, now
	w.byKey[k] = e
	w.pushBack(e)
	for len(w.byKey) > w.max {
		overflow = append(overflow, w.remove(w.head))
	}
	return nil, overflow
}

// Expire removes and returns, oldest first, the values that have waited
// longer than the TTL at now.
func (w *Waitlist[K, V]) Expire(now time.Time) []Gone[K, V] {
	var out []Gone[K, V]
	for w.head != nil && w.Expired(w.head.since, now) {
		out = append(out, w.remove(w.head))
	}
	return out
}

// NextExpiry is when the oldest value times out (Expire at any later time
// returns it); ok is false when nothing waits.
func (w *Waitlist[K, V]) NextExpiry() (t time.Time, ok bool) {
	if w.head == nil {
		return time.Time{}, false
	}
	return w.head.since.Add(w.ttl), true
}

func (w *Waitlist[K, V]) remove(e *waiting[K, V]) Gone[K, V] {
	g := Gone[K, V]{Key: e.key, Value: e.val, Since: e.since}
	delete(w.byKey, e.key)
	w.unlink(e)
	w.release(e)
	return g
}

func (w *Waitlist[K, V]) pushBack(e *waiting[K, V]) {
	e.prev, e.next = w.tail, nil
	if w.tail != nil {
		w.tail.next = e
	} else {
		w.head = e
	}
	w.tail = e
}

func (w *Waitlist[K, V]) unlink(e *waiting[K, V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		w.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		w.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (w *Waitlist[K, V]) alloc() *waiting[K, V] {
	if e := w.free; e != nil {
		w.free, e.next = e.next, nil
		w.nfree--
		return e
	}
	return new(waiting[K, V])
}

// release recycles e, dropping its references so its value can be
// collected.
func (w *Waitlist[K, V]) release(e *waiting[K, V]) {
	if w.nfree >= maxFree {
		return
	}
	*e = waiting[K, V]{next: w.free}
	w.free = e
	w.nfree++
}
