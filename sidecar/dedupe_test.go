package sidecar

import (
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/wire"
)

func TestDeduper(t *testing.T) {
	d := newDeduper(time.Hour, time.Minute, time.Minute)
	t0 := time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)
	check := func(what string, got, want dedupeResult) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("first", d.check(wire.KindTrace, "live", "e1", 0, t0, t0), dedupeNew)
	check("again", d.check(wire.KindTrace, "live", "e1", 0, t0, t0), dedupeDuplicate)
	check("other arm", d.check(wire.KindTrace, "canary", "e1", 0, t0, t0), dedupeNew)
	check("other kind", d.check(wire.KindAnswer, "live", "e1", 0, t0, t0), dedupeNew)
	// JetStream: the same message again is a redelivery; the same id in
	// another message a duplicate; no id, the sequence is the key.
	check("js first", d.check(wire.KindTrace, "live", "e2", 7, t0, t0), dedupeNew)
	check("js redelivery", d.check(wire.KindTrace, "live", "e2", 7, t0, t0), dedupeRedelivery)
	check("js duplicate", d.check(wire.KindTrace, "live", "e2", 8, t0, t0), dedupeDuplicate)
	check("seq first", d.check(wire.KindTrace, "live", "", 9, t0, t0), dedupeNew)
	check("seq redelivery", d.check(wire.KindTrace, "live", "", 9, t0, t0), dedupeRedelivery)
	check("seq other", d.check(wire.KindTrace, "live", "", 10, t0, t0), dedupeNew)
	if n := d.len(); n != 6 {
		t.Errorf("len %d, want 6", n)
	}
	// Event times the windows refuse are never recorded: too old, or
	// further ahead than max lateness.
	check("too old", d.check(wire.KindTrace, "live", "old", 0, t0.Add(-2*time.Hour), t0), dedupeNew)
	check("too old again", d.check(wire.KindTrace, "live", "old", 0, t0.Add(-2*time.Hour), t0), dedupeNew)
	check("future", d.check(wire.KindTrace, "live", "fut", 0, t0.Add(2*time.Minute), t0), dedupeNew)
	check("future again", d.check(wire.KindTrace, "live", "fut", 0, t0.Add(2*time.Minute), t0), dedupeNew)
	check("ahead within lateness", d.check(wire.KindTrace, "live", "soon", 0, t0.Add(time.Minute), t0), dedupeNew)
	if n := d.len(); n != 7 {
		t.Errorf("len %d, want 7", n)
	}
	// Kept while inside the longest window and a bucket, then forgotten.
	check("59m later", d.check(wire.KindTrace, "live", "e1", 0, t0, t0.Add(59*time.Minute)), dedupeDuplicate)
	check("late event", d.check(wire.KindTrace, "live", "e3", 0, t0.Add(62*time.Minute), t0.Add(62*time.Minute)), dedupeNew)
	if n := d.len(); n != 2 {
		t.Errorf("after an hour: len %d, want 2 (soon and e3)", n)
	}
	check("e1 forgotten", d.check(wire.KindTrace, "live", "e1", 0, t0.Add(62*time.Minute), t0.Add(62*time.Minute)), dedupeNew)
}

// TestDeduperBounded: a steady stream of distinct ids holds at most the
// longest window's worth of keys.
func TestDeduperBounded(t *testing.T) {
	d := newDeduper(5*time.Minute, 10*time.Second, time.Minute)
	t0 := time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)
	peak := 0
	for i := 0; i < 60*60; i++ { // an hour, one event a second
		now := t0.Add(time.Duration(i) * time.Second)
		d.check(wire.KindTrace, "live", "e"+itoa(i), 0, now, now)
		peak = max(peak, d.len())
	}
	if peak > 5*60+2*10 { // the window, the spare bucket and the partial one
		t.Errorf("peak %d keys for 5m of one event a second", peak)
	}
	if n := len(d.buckets); n > 32 {
		t.Errorf("%d buckets held", n)
	}
}

// BenchmarkDedupe: the cost of the idempotency key of a new event (here a
// JetStream sequence), the set growing to an hour of events at 1000/s.
func BenchmarkDedupe(b *testing.B) {
	d := newDeduper(time.Hour, time.Minute, time.Minute)
	t0 := time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		d.check(wire.KindTrace, "live", "", uint64(i+1), now, now)
		i++
	}
	b.ReportMetric(float64(d.len()), "keys")
}
