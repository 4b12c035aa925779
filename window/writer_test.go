package window

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// errClass names what an Add returned, for comparing two paths.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrLate):
		return "late"
	case errors.Is(err, ErrFuture):
		return "future"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	}
	return err.Error()
}

// sameValue is == with NaN equal to NaN.
func sameValue(a, b Value) bool {
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	return a.Valid == b.Valid && a.Samples == b.Samples && eq(a.Value, b.Value) && eq(a.Num, b.Num) && eq(a.Den, b.Den)
}

// sameWindows reports the first difference between every snapshot of ref
// and got at now: every arm, window and type, and all types together.
func sameWindows(ref, got *Windows, now time.Time) error {
	if a, b := fmt.Sprint(ref.Arms()), fmt.Sprint(got.Arms()); a != b {
		return fmt.Errorf("arms %s, want %s", b, a)
	}
	for _, arm := range ref.Arms() {
		types := append([]string{""}, ref.Types(arm)...)
		if a, b := fmt.Sprint(ref.Types(arm)), fmt.Sprint(got.Types(arm)); a != b {
			return fmt.Errorf("arm %s: types %s, want %s", arm, b, a)
		}
		for _, spec := range ref.Specs() {
			for _, typ := range types {
				want, _ := ref.Snapshot(arm, spec.Name, typ, now)
				have, ok := got.Snapshot(arm, spec.Name, typ, now)
				if !ok {
					return fmt.Errorf("%s/%s/%q: no snapshot", arm, spec.Name, typ)
				}
				for name, v := range want.Metrics {
					if !sameValue(v, have.Metrics[name]) {
						return fmt.Errorf("%s/%s/%q %s = %+v, want %+v", arm, spec.Name, typ, name, have.Metrics[name], v)
					}
				}
			}
		}
	}
	// A stage flushed after its bucket left a ring's window is not added
	// to that ring, so fewer cells may have been allocated.
	a, b := ref.Stats(), got.Stats()
	if b.Cells > a.Cells {
		return fmt.Errorf("stats %+v, want at most %d cells", b, a.Cells)
	}
	if b.Cells = a.Cells; a != b {
		return fmt.Errorf("stats %+v, want %+v", b, a)
	}
	return nil
}

// TestWriterMatchesAdd feeds the same observations to Windows.Add and to
// Writers (several, in turn, as the ingest goroutines would), through
// bucket changes, late, future and out-of-order events, new arms and types
// folded into Other, with reads in between that flush the stages; every
// Add must return the same and every snapshot must be equal.
func TestWriterMatchesAdd(t *testing.T) {
	configs := map[string]Config{
		"default":        {},
		"aligned odd":    {Windows: []Spec{{Length: 90 * time.Second, Resolution: 15 * time.Second}, {Length: 10 * time.Minute, Resolution: time.Minute}}},
		"misaligned":     {Windows: []Spec{{Length: time.Minute, Resolution: 10 * time.Second}, {Length: 3 * time.Minute, Resolution: 15 * time.Second}}},
		"one window":     {Windows: []Spec{{Length: 2 * time.Minute, Resolution: 20 * time.Second}}},
		"type cap":       {MaxTypes: 2, MaxArms: 2},
		"short lateness": {MaxLateness: 5 * time.Second},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 4; seed++ {
				ref, got := newWindows(t, cfg), newWindows(t, cfg)
				writers := []*Writer{got.NewWriter(), got.NewWriter(), got.NewWriter()}
				r := rand.New(rand.NewPCG(seed, 21))
				obs := realistic(6000, 40, seed)
				keys := map[string]uint32{}
				arms := []string{"live", "canary", "shadow", ""}
				now := t0
				for i := range obs {
					o := &obs[i]
					o.Arm = arms[r.IntN(len(arms))]
					now = now.Add(time.Duration(r.IntN(400)) * time.Millisecond)
					if r.IntN(500) == 0 {
						now = now.Add(time.Duration(r.IntN(200)) * time.Second) // a quiet spell
					}
					switch k := r.IntN(100); {
					case k < 70:
						o.Time = now.Add(-time.Duration(r.IntN(1000)) * time.Millisecond)
					case k < 85:
						o.Time = now.Add(-time.Duration(r.IntN(90)) * time.Second) // late, within or beyond lateness
					case k < 90:
						o.Time = now.Add(-time.Duration(r.IntN(2*3600)) * time.Second) // far behind
					case k < 95:
						o.Time = now.Add(time.Duration(r.IntN(90)) * time.Second) // ahead
					default:
						o.Time = time.Time{} // no ts: now
					}
					// ref numbers the qids itself; got, for even seeds, is
					// given keys by the caller, in an order of its own.
					o.QIDKey = 0
					want := errClass(ref.Add(o, now))
					if seed%2 == 0 {
						o.QIDKey = callerKey(keys, o.QID)
					}
					have := errClass(writers[i%len(writers)].Add(o, now))
					if have != want {
						t.Fatalf("seed %d, event %d (t %v, now %v): writer %s, Add %s", seed, i, o.Time, now, have, want)
					}
					if r.IntN(300) == 0 {
						if err := sameWindows(ref, got, now); err != nil {
							t.Fatalf("seed %d, after event %d: %v", seed, i, err)
						}
					}
				}
				for _, d := range []time.Duration{0, 30 * time.Second, 5 * time.Minute, time.Hour} {
					if err := sameWindows(ref, got, now.Add(d)); err != nil {
						t.Fatalf("seed %d, end + %v: %v", seed, d, err)
					}
				}
			}
		})
	}
}

// callerKey numbers qids as a caller of Observation.QIDKey would: one key
// per qid, here counting down from an arbitrary start.
func callerKey(keys map[string]uint32, qid string) uint32 {
	k, ok := keys[qid]
	if !ok {
		k = 1_000_000 - uint32(len(keys))
		keys[qid] = k
	}
	return k
}

// TestQIDKeyBound: keys from MaxQIDKey up are the windows' own.
func TestQIDKeyBound(t *testing.T) {
	w := newWindows(t, Config{})
	o := realistic(1, 1, 1)[0]
	o.Time = t0
	for key, want := range map[uint32]string{1: "ok", MaxQIDKey - 1: "ok", MaxQIDKey: "invalid", math.MaxUint32: "invalid"} {
		o.QIDKey = key
		if got := errClass(w.Add(&o, t0)); got != want {
			t.Errorf("QIDKey %d: %s, want %s", key, got, want)
		}
		if got := errClass(w.NewWriter().Add(&o, t0)); got != want {
			t.Errorf("QIDKey %d through a Writer: %s, want %s", key, got, want)
		}
	}
}

// TestWriterConcurrent: writers on their own goroutines, one shared by
// two, Windows.Add and reads at the same time (run with -race); the total
// must be every observation.
func TestWriterConcurrent(t *testing.T) {
	w := newWindows(t, Config{})
	obs := realistic(4000, 100, 13)
	shared := w.NewWriter()
	var wg sync.WaitGroup
	const workers = 5
	for g := range workers {
		wr := w.NewWriter()
		switch g {
		case 0:
			wr = nil // Windows.Add
		case 1, 2:
			wr = shared
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(obs); i += workers {
				o := obs[i] // a copy: Time stays zero (now)
				add := w.Add
				if wr != nil {
					add = wr.Add
				}
				if err := add(&o, t0); err != nil {
					t.Error(err)
					return
				}
				if i%97 == 0 {
					w.Snapshot(o.Arm, "5m", "", t0)
					w.Stats()
				}
			}
		}()
	}
	wg.Wait()
	var want, got int64
	for _, o := range obs {
		if o.HasAnswer && o.Answerable {
			want++
		}
	}
	for _, arm := range w.Arms() {
		got += snapshot(t, w, arm, "1h", "", t0)["over_refusal"].Samples
	}
	if got != want {
		t.Errorf("answerable samples %d, want %d", got, want)
	}
}
