package sidecar

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Events that go unscored (rejected, late, unlabeled) are counted in
// Prometheus, but someone trying the sidecar for the first time reads its
// log: the first such event of each kind is logged at once with what is
// wrong with it, and while they keep coming, one line per kind every
// noticeEvery says how many more there were. After a quiet interval the
// next one is logged in full again. The event path only reads a flag and
// adds to a counter.

// noticeEvery is how often a kind of trouble that goes on is summed up.
const noticeEvery = time.Minute

type notices struct {
	log   *slog.Logger
	mu    sync.Mutex                         // serialises additions to kinds
	kinds atomic.Pointer[map[string]*notice] // replaced whole on an addition
}

type notice struct {
	level  slog.Level
	what   string      // the summary's subject: "events rejected (invalid_json)"
	logged atomic.Bool // one was logged in full since the last quiet interval
	more   atomic.Int64
}

func newNotices(log *slog.Logger) *notices {
	n := &notices{log: log}
	n.kinds.Store(&map[string]*notice{})
	return n
}

// kind returns the notice of key, made with level and what on first use.
func (n *notices) kind(key string, level slog.Level, what string) *notice {
	if k, ok := (*n.kinds.Load())[key]; ok {
		return k
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old := *n.kinds.Load()
	if k, ok := old[key]; ok {
		return k
	}
	next := make(map[string]*notice, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	k := &notice{level: level, what: what}
	next[key] = k
	n.kinds.Store(&next)
	return k
}

// first reports whether an event of key is the first since the last
// quiet interval, to be logged in full by the caller (at the level the
// kind was made with); otherwise it counts the event for the next
// summary. what names the events of key in the summary.
func (n *notices) first(key string, level slog.Level, what string) bool {
	k := n.kind(key, level, what)
	if !k.logged.Load() && k.logged.CompareAndSwap(false, true) {
		return true
	}
	k.more.Add(1)
	return false
}

// flush logs the summary of every kind that had more events since the
// last flush, and marks the quiet ones so that their next event is logged
// in full.
func (n *notices) flush(interval time.Duration) {
	for _, k := range *n.kinds.Load() {
		if more := k.more.Swap(0); more > 0 {
			n.log.Log(context.Background(), k.level, k.what+": more in the last "+interval.String(), "count", more)
			continue
		}
		k.logged.Store(false)
	}
}

// loop flushes every interval until ctx ends.
func (n *notices) loop(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() { n.flush(interval) })
}
