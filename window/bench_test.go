package window

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchStep is the event-time distance between consecutive observations:
// 1000 events/s, so a 10 s bucket holds 10 000 events over the 3000 qids
// and a 1 m bucket 60 000.
const benchStep = time.Millisecond

// bench is one warmed-up Windows shared by the Add benchmarks: an hour and
// a half of traffic has gone through it, so every slot has been allocated
// and rotated and the timings are of the steady state.
var bench struct {
	once sync.Once
	w    *Windows
	obs  []Observation
	i    atomic.Int64
}

func benchWindows(b *testing.B) (*Windows, []Observation) {
	bench.once.Do(func() {
		w, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		bench.w = w
		bench.obs = realistic(1<<14, 3000, 1)
		for k := 0; k < int(90*time.Minute/benchStep); k++ {
			benchAdd(b, w.Add, bench.obs, bench.i.Add(1))
		}
	})
	return bench.w, bench.obs
}

func benchAdd(b *testing.B, add func(*Observation, time.Time) error, obs []Observation, i int64) {
	o := &obs[i%int64(len(obs))]
	now := t0.Add(time.Duration(i) * benchStep)
	o.Time = now
	if err := add(o, now); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAdd: realistic observations (4 k's, 5 retrieved ΔS and a cited
// one, λ state, triage), 2 windows, 3000 qids, 2 arms, 4 types.
//
// Besides ns/op (wall time) it reports cpu-ns/op, the CPU time of the
// benchmark's thread per Add, which stays meaningful on a busy machine.
func BenchmarkAdd(b *testing.B) {
	w, obs := benchWindows(b)
	benchOneThread(b, w.Add, obs)
}

// BenchmarkWriterAdd is BenchmarkAdd through a Writer, as each ingest
// goroutine adds: one staged cell per observation instead of one per
// window, merged into the rings once per bucket.
func BenchmarkWriterAdd(b *testing.B) {
	w, obs := benchWindows(b)
	benchOneThread(b, w.NewWriter().Add, obs)
}

func benchOneThread(b *testing.B, add func(*Observation, time.Time) error, obs []Observation) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, ok := threadCPU()
	n := 0
	for b.Loop() {
		benchAdd(b, add, obs, bench.i.Add(1))
		n++
	}
	if cpu1, ok1 := threadCPU(); ok && ok1 && n > 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(n), "cpu-ns/op")
	}
}

// BenchmarkAddParallel: the same from GOMAXPROCS goroutines. Observations
// are shared read-only here; each goroutine sets its own event time, so a
// goroutine descheduled for long may find its event late: those are
// reported as late/op, not failed.
func BenchmarkAddParallel(b *testing.B) {
	w, _ := benchWindows(b)
	benchParallel(b, func() func(*Observation, time.Time) error { return w.Add })
}

func benchParallel(b *testing.B, adder func() func(*Observation, time.Time) error) {
	_, obs := benchWindows(b)
	b.ReportAllocs()
	b.ResetTimer()
	var late, total atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		add := adder()
		var o Observation
		for pb.Next() {
			i := bench.i.Add(1)
			o = obs[i%int64(len(obs))]
			now := t0.Add(time.Duration(i) * benchStep)
			o.Time = now
			total.Add(1)
			if err := add(&o, now); errors.Is(err, ErrLate) {
				late.Add(1)
			} else if err != nil {
				b.Error(err)
				return
			}
		}
	})
	if total.Load() > 0 {
		b.ReportMetric(float64(late.Load())/float64(total.Load()), "late/op")
	}
}

// BenchmarkSnapshot: one arm, all types, over both windows of the warmed-up
// Windows (about 1500 qids per arm in every bucket).
func BenchmarkSnapshot(b *testing.B) {
	w, _ := benchWindows(b)
	now := t0.Add(time.Duration(bench.i.Load()) * benchStep)
	for _, name := range []string{"5m", "1h"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := w.Snapshot("live", name, "", now); !ok {
					b.Fatal("no snapshot")
				}
			}
		})
	}
}

// BenchmarkWriterAddParallel is BenchmarkAddParallel with a Writer per
// goroutine.
func BenchmarkWriterAddParallel(b *testing.B) {
	w, _ := benchWindows(b)
	benchParallel(b, func() func(*Observation, time.Time) error { return w.NewWriter().Add })
}
