package statuspage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/testenv"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestHistoryKeepsTheLastPoints(t *testing.T) {
	h := NewHistory(5)
	for i := range 12 {
		h.Record(t0.Add(time.Duration(i)*time.Second), "live", "5m", map[string]Value{
			"precision": {Value: float64(i), Valid: true, Samples: int64(100 + i)},
		})
	}
	got := h.Series("live", "5m", "precision")
	if len(got) != 5 {
		t.Fatalf("%d points, want 5", len(got))
	}
	for j, p := range got {
		i := 7 + j
		if !p.Valid || p.Value != float64(i) || p.Samples != int64(100+i) || !p.T.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Errorf("point %d = %+v, want value %d at +%ds", j, p, i, i)
		}
	}
	if s := h.Series("live", "1h", "precision"); s != nil {
		t.Errorf("unknown window: %v", s)
	}
	if s := h.Series("live", "5m", "chr"); s != nil {
		t.Errorf("unknown metric: %v", s)
	}
	if s := h.Series("shadow", "5m", "precision"); s != nil {
		t.Errorf("unknown arm: %v", s)
	}
}

func TestHistoryPartialAndMissing(t *testing.T) {
	h := NewHistory(4)
	h.Record(t0, "live", "5m", map[string]Value{"a": {Value: 1, Valid: true, Samples: 3}})
	// b appears later; a is missing from the second record; c has no value
	h.Record(t0.Add(time.Second), "live", "5m", map[string]Value{"b": {Value: 2, Valid: true}, "c": {Value: 9, Valid: false, Samples: 7}})
	a := h.Series("live", "5m", "a")
	if len(a) != 2 || !a[0].Valid || a[0].Value != 1 || a[1].Valid || a[1].Samples != 0 {
		t.Errorf("a = %+v", a)
	}
	b := h.Series("live", "5m", "b")
	if len(b) != 2 || b[0].Valid || !b[1].Valid || b[1].Value != 2 {
		t.Errorf("b = %+v", b)
	}
	c := h.Series("live", "5m", "c")
	if len(c) != 2 || c[1].Valid || c[1].Value != 0 || c[1].Samples != 7 {
		t.Errorf("c = %+v", c)
	}
}

func TestHistoryIgnoresOldAndTooFrequentRecords(t *testing.T) {
	h := NewHistory(10)
	h.SetResolution("1h", time.Minute)
	rec := func(d time.Duration, win string) {
		h.Record(t0.Add(d), "live", win, map[string]Value{"p": {Value: d.Seconds(), Valid: true}})
	}
	rec(0, "5m")
	rec(0, "5m")            // same time: ignored
	rec(-time.Second, "5m") // clock went back: ignored
	rec(time.Second, "5m")
	if n := len(h.Series("live", "5m", "p")); n != 2 {
		t.Errorf("5m: %d points, want 2", n)
	}
	for _, d := range []time.Duration{0, 10 * time.Second, 50 * time.Second, 55 * time.Second, 105 * time.Second, 120 * time.Second} {
		rec(d, "1h")
	}
	var got []float64
	for _, p := range h.Series("live", "1h", "p") {
		got = append(got, p.Value)
	}
	// 55 s is within the 10 % jitter allowance; 105 s is only 50 s after it
	if fmt.Sprint(got) != "[0 55 120]" {
		t.Errorf("1h points at %v s, want [0 55 120]", got)
	}
}

func TestHistoryMemoryIsBounded(t *testing.T) {
	h := NewHistory(3)
	vals := map[string]Value{}
	for i := range MaxMetrics + 10 {
		vals[fmt.Sprint("m", i)] = Value{Value: 1, Valid: true}
	}
	for i := range MaxSeries + 5 {
		h.Record(t0, fmt.Sprint("arm", i), "5m", vals)
	}
	for i := 1; i < 50; i++ {
		h.Record(t0.Add(time.Duration(i)*time.Second), "arm0", "5m", vals)
	}
	series, values := h.Len()
	if series != MaxSeries {
		t.Errorf("%d series, want the cap %d", series, MaxSeries)
	}
	if values != MaxSeries*MaxMetrics*3 {
		t.Errorf("%d values held, want %d (points × series × metrics)", values, MaxSeries*MaxMetrics*3)
	}
	if n := len(h.Series("arm0", "5m", "m0")); n > 3 {
		t.Errorf("%d points, want ≤ 3", n)
	}
	if NewHistory(0).Points() != DefaultPoints {
		t.Error("NewHistory(0) does not use DefaultPoints")
	}
}

func TestHistoryCollect(t *testing.T) {
	src := newFakeSource()
	h := NewHistory(10)
	h.Collect(t0, src)
	h.Collect(t0.Add(10*time.Second), src)
	for _, arm := range []string{"live", "canary"} {
		for _, w := range []string{"5m", "1h"} {
			if n := len(h.Series(arm, w, "precision")); n != 2 {
				t.Errorf("%s %s: %d points, want 2", arm, w, n)
			}
		}
	}
}

func TestHistoryConcurrent(t *testing.T) {
	h := NewHistory(16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			h.Record(t0.Add(time.Duration(i)), "live", "5m", map[string]Value{"p": {Value: 1, Valid: true}})
		}
	}()
	for range 2000 {
		h.Series("live", "5m", "p")
	}
	<-done
}

func TestHistoryRun(t *testing.T) {
	src := newFakeSource()
	h := NewHistory(10)
	var ticks int64
	now := func() time.Time {
		ticks++
		return t0.Add(time.Duration(ticks) * time.Second)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx, time.Millisecond, src, now)
	}()
	testenv.Eventually(t, 10*time.Second, "Run to record 3 points", func() bool { return len(h.Series("canary", "1h", "chr")) >= 3 })
	cancel()
	<-done
}
