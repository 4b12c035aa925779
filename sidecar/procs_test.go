package sidecar

import "testing"

// TestNextProcs: one processor after procsQuiet light seconds in a row,
// all of them at once when a second is busy, and no change in between.
func TestNextProcs(t *testing.T) {
	procs, quiet := 2, 0
	steps := []struct {
		events uint64
		want   int
	}{
		{1000, 2}, {1000, 2}, {1000, 2}, {1000, 2}, {1000, 2},
		{1000, 2}, {1000, 2}, {1000, 2}, {1000, 2}, {1000, 1}, // tenth light second
		{3000, 1}, // between the thresholds: stays
		{4001, 2}, // busy: every processor at once
		{1999, 2}, // light again: counting starts over
		{2500, 2}, // not light: the count resets
		{100, 2},  // 1
		{100, 2},  // 2
	}
	for i, s := range steps {
		procs, quiet = nextProcs(procs, 2, s.events, quiet)
		if procs != s.want {
			t.Fatalf("second %d (%d events): %d procs, want %d", i+1, s.events, procs, s.want)
		}
	}
	for range procsQuiet - 2 {
		procs, quiet = nextProcs(procs, 2, 100, quiet)
	}
	if procs != 1 {
		t.Fatalf("after %d light seconds in a row: %d procs, want 1", procsQuiet, procs)
	}
}
