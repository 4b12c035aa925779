package sidecar

import (
	"context"
	"runtime"
	"time"
)

// The sidecar runs on one processor (GOMAXPROCS 1) while its traffic is
// light, and on every one the runtime found once it is not. A message that
// arrives while the sidecar sleeps wakes the goroutine of its subscription
// on one processor, and with a second one idle the runtime wakes that too
// to look for work: at a thousand events a second that costs more CPU than
// the events themselves (BENCHMARKS.md, live ingest). On one processor the
// goroutine runs where the network poller woke, and nothing else spins.
const (
	// procsUp: events in a second past which every processor is used.
	procsUp = 4000
	// procsDown: events per second below which, for procsQuiet seconds in
	// a row, one processor is used.
	procsDown  = 2000
	procsQuiet = 10
)

// nextProcs is the processor count for the next second: one or all, from
// the count now, the events of the last second and the seconds in a row
// below procsDown so far (returned updated).
func nextProcs(procs, all int, events uint64, quiet int) (int, int) {
	if events >= procsDown {
		quiet = 0
	} else {
		quiet++
	}
	switch {
	case procs < all && events > procsUp:
		return all, quiet
	case procs > 1 && quiet >= procsQuiet:
		return 1, quiet
	}
	return procs, quiet
}

// procsLoop adapts GOMAXPROCS to the event rate until ctx ends, then puts
// back the count it started with.
func (a *App) procsLoop(ctx context.Context) {
	all := runtime.GOMAXPROCS(0)
	if all < 2 {
		return
	}
	defer runtime.GOMAXPROCS(all)
	procs, quiet := all, 0
	last := a.ingest.handled.Load()
	every(ctx, time.Second, func() {
		n := a.ingest.handled.Load()
		next, q := nextProcs(procs, all, n-last, quiet)
		if next != procs {
			runtime.GOMAXPROCS(next)
			a.log.Debug("GOMAXPROCS adapted to the event rate", "procs", next, "events_last_second", n-last)
			procs = next
		}
		last, quiet = n, q
	})
}
