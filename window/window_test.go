package window

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// t0 is aligned to the hour, so to every default bucket.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newWindows(t testing.TB, cfg Config) *Windows {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// answer is an answered observation; the booleans are A, S, C, H.
func answer(qid string, a, s, c, h bool) *Observation {
	return &Observation{QID: qid, HasAnswer: true, Answerable: a, Shipped: s, Contained: c, Hit: h, Triage: -1,
		Lambda: LambdaRun{Refused: !s, Cited: CitedSetHash(nil)}}
}

func mustAdd(t testing.TB, w *Windows, o *Observation, now time.Time) {
	t.Helper()
	if err := w.Add(o, now); err != nil {
		t.Fatalf("Add(%+v): %v", o, err)
	}
}

func snapshot(t testing.TB, w *Windows, arm, window, typ string, now time.Time) map[string]Value {
	t.Helper()
	s, ok := w.Snapshot(arm, window, typ, now)
	if !ok {
		t.Fatalf("Snapshot(%q, %q, %q) not found", arm, window, typ)
	}
	return s.Metrics
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func checkValue(t *testing.T, m map[string]Value, name string, want Value) {
	t.Helper()
	got, ok := m[name]
	if !ok {
		t.Errorf("%s: missing", name)
		return
	}
	if got.Valid != want.Valid || got.Samples != want.Samples || !near(got.Value, want.Value, 1e-12) ||
		!near(got.Num, want.Num, 1e-9) || !near(got.Den, want.Den, 1e-9) {
		t.Errorf("%s = %+v, want %+v", name, got, want)
	}
}

func prop(num, den int64) Value {
	return Value{Value: float64(num) / float64(den), Valid: true, Samples: den, Num: float64(num), Den: float64(den)}
}

func meanV(sum float64, n int64) Value {
	return Value{Value: sum / float64(n), Valid: true, Samples: n, Num: sum, Den: float64(n)}
}

var (
	none     = Value{}
	refOne   = Value{Value: 1, Valid: true}
	zeroEmpt = Value{Value: 0, Valid: true}
)

func TestMetrics(t *testing.T) {
	retrieval := func(a bool, strict uint32, p, r []float64) *Observation {
		o := &Observation{QID: "r", Answerable: a, HasRetrieval: true, RecallStrict: strict, PrecisionAtK: p, Triage: -1}
		if r != nil {
			o.RecallAtK, o.HasRecallAtK = r, true
		}
		return o
	}
	with := func(o *Observation, f func(*Observation)) *Observation { f(o); return o }
	cases := []struct {
		name string
		obs  []*Observation
		want map[string]Value
	}{
		{
			name: "reference four",
			obs: []*Observation{
				answer("q1", true, true, true, true),   // S∩A, C, H
				answer("q2", true, true, false, true),  // S∩A, H only
				answer("q3", true, true, true, false),  // S∩A, C only
				answer("q4", false, true, false, true), // S∩U
				answer("q5", false, false, false, false),
				answer("q6", true, false, false, false), // R∩A
				// a retrieval-only half counts in none of the four
				{QID: "q7", HasRetrieval: true, PrecisionAtK: []float64{0, 0}, Answerable: true, Shipped: true, Contained: true, Hit: true, Triage: -1},
			},
			want: map[string]Value{
				"precision":     prop(1, 4),
				"chr":           prop(2, 4),
				"under_refusal": prop(1, 2),
				"over_refusal":  prop(1, 4),
			},
		},
		{
			name: "empty denominators",
			obs: []*Observation{
				{QID: "r", HasRetrieval: true, PrecisionAtK: []float64{0, 0}, Triage: -1},
			},
			want: map[string]Value{
				"precision": refOne, "chr": refOne,
				"under_refusal": zeroEmpt, "over_refusal": zeroEmpt,
				"recall_at_1": zeroEmpt, "recall_at_3": zeroEmpt,
				"mean_precision_at_1": meanV(0, 1), "mean_recall_at_1": none, "mean_recall_at_3": none,
				"coverage": none, "citation_accuracy": none, "anchor_proximity": none,
				"delta_s_median": none, "delta_s_p90": none,
				"delta_s_retrieved_median": none, "delta_s_retrieved_p90": none,
				"lambda_convergence": none, "lambda_flip_rate": none,
				"agreement": none, "kappa": none, "abstain_rate": none,
				"triage_ok": none, "triage_refusal_suspect": none,
			},
		},
		{
			name: "only refusals of unanswerables",
			obs:  []*Observation{answer("u", false, false, false, false), answer("u", false, false, false, false)},
			want: map[string]Value{
				"precision": refOne, "chr": refOne,
				"under_refusal": prop(0, 2), "over_refusal": zeroEmpt,
			},
		},
		{
			name: "retrieval",
			obs: []*Observation{
				retrieval(true, 0b10, []float64{1, 1.0 / 3}, []float64{0.5, 1}),
				retrieval(true, 0b11, []float64{1, 2.0 / 3}, []float64{1, 1}),
				retrieval(false, 0b11, []float64{0, 0}, nil), // U: vacuous strict recall, not in the denominator
				{QID: "a", HasAnswer: true, Answerable: true, Shipped: true, Triage: -1},
			},
			want: map[string]Value{
				"recall_at_1":         prop(1, 2),
				"recall_at_3":         prop(2, 2),
				"mean_precision_at_1": meanV(2, 3),
				"mean_precision_at_3": meanV(1, 3),
				"mean_recall_at_1":    meanV(1.5, 2),
				"mean_recall_at_3":    meanV(2, 2),
			},
		},
		{
			name: "coverage, citation accuracy, anchor",
			obs: []*Observation{
				with(answer("a", true, true, true, true), func(o *Observation) {
					o.CoverageEligible, o.Covered = true, true
					setCitationAccuracy(o, true, false)
					o.HasAnchorDistance, o.AnchorDistance = true, 0
				}),
				with(answer("b", true, true, true, true), func(o *Observation) {
					o.CoverageEligible = true
					setCitationAccuracy(o, true, true)
					o.HasAnchorDistance, o.AnchorDistance = true, 2
				}),
				with(answer("c", true, true, true, true), func(o *Observation) {
					o.CoverageEligible, o.Covered = true, true
					o.HasAnchorDistance, o.AnchorDistance = true, 3
				}),
				with(answer("d", true, true, true, true), func(o *Observation) {
					o.Covered = true // not eligible: ignored
				}),
			},
			want: map[string]Value{
				"coverage":          prop(2, 3),
				"citation_accuracy": prop(1, 2),
				"anchor_proximity":  meanV(5, 3),
			},
		},
		{
			name: "triage",
			obs: []*Observation{
				with(answer("a", true, true, true, true), func(o *Observation) { o.Triage = 0 }),
				with(answer("b", true, true, true, true), func(o *Observation) { o.Triage = 0 }),
				with(answer("c", true, true, true, true), func(o *Observation) { o.Triage = 1 }),
				with(answer("d", true, true, true, true), func(o *Observation) { o.Triage = 4 }),
				answer("e", true, true, true, true), // no label
			},
			want: map[string]Value{
				"triage_ok":               prop(2, 4),
				"triage_retrieval_drift":  prop(1, 4),
				"triage_generation_drift": prop(0, 4),
				"triage_refusal_ok":       prop(0, 4),
				"triage_refusal_suspect":  prop(1, 4),
			},
		},
		{
			name: "lambda",
			obs: []*Observation{
				// q1: 3 runs, all →: complete, convergent
				with(answer("q1", true, true, true, true), func(o *Observation) { o.Lambda.State = LambdaConvergent }),
				with(answer("q1", true, true, true, true), func(o *Observation) { o.Lambda.State = LambdaConvergent }),
				{QID: "q1", Lambda: LambdaRun{State: LambdaConvergent}, Triage: -1}, // retrieval-only run with a state
				// q2: 3 runs without state, decisions differ: flips
				answer("q2", true, true, true, true),
				answer("q2", true, false, false, false),
				answer("q2", true, true, true, true),
				// q3: 2 runs: incomplete
				answer("q3", true, true, true, true),
				answer("q3", true, true, true, true),
				// not a run: no answer, no state
				{QID: "q3", HasRetrieval: true, PrecisionAtK: []float64{0, 0}, Triage: -1},
			},
			want: map[string]Value{
				"lambda_convergence": prop(1, 2),
				"lambda_flip_rate":   prop(1, 2),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindows(t, Config{Ks: []int{1, 3}})
			for _, o := range tc.obs {
				mustAdd(t, w, o, t0)
			}
			for _, win := range []string{"5m", "1h"} {
				m := snapshot(t, w, "", win, "", t0)
				if len(m) != len(MetricNames([]int{1, 3})) {
					t.Errorf("%d metrics, want %d", len(m), len(MetricNames([]int{1, 3})))
				}
				for _, name := range MetricNames([]int{1, 3}) {
					if _, ok := m[name]; !ok {
						t.Errorf("metric %s missing", name)
					}
				}
				for name, want := range tc.want {
					checkValue(t, m, name, want)
				}
			}
		})
	}
}

func TestDeltaSSelection(t *testing.T) {
	w := newWindows(t, Config{})
	o := answer("a", true, true, true, true)
	o.HasDeltaSCited, o.DeltaSCited = true, 0.3
	o.DeltaSRetrieved = []float64{0.2, 0.4, -0.5, 1.5} // clamped to 0 and 1
	mustAdd(t, w, o, t0)
	r := answer("b", true, false, false, false) // refusal: its ΔS cited is not counted
	r.HasDeltaSCited, r.DeltaSCited = true, 0.9
	mustAdd(t, w, r, t0)
	h := &Observation{QID: "c", HasDeltaSCited: true, DeltaSCited: 0.9, Triage: -1} // no answer
	mustAdd(t, w, h, t0)
	m := snapshot(t, w, "live", "5m", "", t0)
	for _, name := range []string{"delta_s_median", "delta_s_p90"} {
		if v := m[name]; !v.Valid || v.Samples != 1 || !near(v.Value, 0.3, 0.003) {
			t.Errorf("%s = %+v, want 0.3 over 1", name, v)
		}
	}
	// sorted: 0, 0.2, 0.4, 1 → linear percentiles 0.3 and 0.82
	if v := m["delta_s_retrieved_median"]; !v.Valid || v.Samples != 4 || !near(v.Value, 0.3, 0.003) {
		t.Errorf("retrieved median = %+v, want 0.3", v)
	}
	if v := m["delta_s_retrieved_p90"]; !v.Valid || v.Samples != 4 || !near(v.Value, 0.82, 0.0082) {
		t.Errorf("retrieved p90 = %+v, want 0.82", v)
	}
	sk := w.DeltaS("live", "5m", "", t0)
	if sk == nil || sk.GetCount() != 1 {
		t.Fatalf("DeltaS sketch count = %v", sk)
	}
	if w.DeltaS("live", "2m", "", t0) != nil || w.DeltaS("nope", "5m", "", t0) != nil {
		t.Error("DeltaS of unknown window or arm is not nil")
	}
}

// percentile is numpy's default (linear) percentile of sorted xs.
func percentile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	frac := pos - float64(lo)
	return xs[lo] + (xs[lo+1]-xs[lo])*frac
}

func TestPercentileHelper(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}} {
		if got := percentile(xs, c.q); !near(got, c.want, 1e-12) {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestDeltaSQuantileAccuracy(t *testing.T) {
	dists := map[string]func(r *rand.Rand) float64{
		"uniform": func(r *rand.Rand) float64 { return r.Float64() },
		"skewed":  func(r *rand.Rand) float64 { x := r.Float64(); return x * x * x },
		"narrow":  func(r *rand.Rand) float64 { return 0.35 + 0.1*r.NormFloat64()*0.2 },
	}
	for name, gen := range dists {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			w := newWindows(t, Config{})
			const n = 100_000
			var cited, retrieved []float64
			now := t0.Add(4 * time.Minute)
			for i := 0; i < n/5; i++ {
				// 5 cited and 5 retrieved values per observation set, spread over 24 buckets
				ts := t0.Add(time.Duration(i) * 4 * time.Minute / (n / 5))
				for j := 0; j < 5; j++ {
					o := answer("q", true, true, true, true)
					o.Time = ts
					o.HasDeltaSCited, o.DeltaSCited = true, gen(r)
					if j == 0 {
						o.DeltaSRetrieved = []float64{gen(r), gen(r), gen(r), gen(r), gen(r)}
						retrieved = append(retrieved, o.DeltaSRetrieved...)
					}
					cited = append(cited, o.DeltaSCited)
					mustAdd(t, w, o, ts)
				}
			}
			m := snapshot(t, w, "live", "5m", "", now)
			slices.Sort(cited)
			slices.Sort(retrieved)
			for _, c := range []struct {
				metric string
				xs     []float64
				q      float64
			}{
				{"delta_s_median", cited, 0.5}, {"delta_s_p90", cited, 0.9},
				{"delta_s_retrieved_median", retrieved, 0.5}, {"delta_s_retrieved_p90", retrieved, 0.9},
			} {
				exact := percentile(c.xs, c.q)
				got := m[c.metric]
				if got.Samples != int64(len(c.xs)) || !got.Valid {
					t.Errorf("%s: samples %d, want %d", c.metric, got.Samples, len(c.xs))
				}
				if math.Abs(got.Value-exact) > 0.01*exact {
					t.Errorf("%s = %v, exact %v: relative error %.4f > 1%%", c.metric, got.Value, exact, math.Abs(got.Value-exact)/exact)
				}
			}
		})
	}
}

func TestSliding(t *testing.T) {
	w := newWindows(t, Config{})
	mustAdd(t, w, answer("q", true, true, true, true), t0.Add(5*time.Second)) // Time zero: now
	cases := []struct {
		at         time.Duration
		in5m, in1h bool
	}{
		{5 * time.Second, true, true},
		{4*time.Minute + 59*time.Second, true, true},
		{5 * time.Minute, false, true}, // its 10 s bucket has left the 5m window
		{59*time.Minute + 59*time.Second, false, true},
		{time.Hour, false, false},
	}
	for _, c := range cases {
		now := t0.Add(c.at)
		for win, in := range map[string]bool{"5m": c.in5m, "1h": c.in1h} {
			got := snapshot(t, w, "live", win, "", now)["precision"].Samples
			want := int64(0)
			if in {
				want = 1
			}
			if got != want {
				t.Errorf("at +%v window %s: %d samples, want %d", c.at, win, got, want)
			}
		}
	}
}

func TestBucketRotation(t *testing.T) {
	w := newWindows(t, Config{})
	// The 5m ring has 30 + 6 (max lateness) + 2 slots: 38 buckets later the
	// same slot is reused and must be reset.
	mustAdd(t, w, answer("q1", true, true, true, true), t0)
	later := t0.Add(38 * 10 * time.Second)
	mustAdd(t, w, answer("q2", false, true, false, false), later)
	m5 := snapshot(t, w, "live", "5m", "", later)
	checkValue(t, m5, "precision", prop(0, 1))
	checkValue(t, m5, "under_refusal", prop(1, 1))
	m1 := snapshot(t, w, "live", "1h", "", later)
	checkValue(t, m1, "precision", prop(1, 2))
	// 5m: one slot reset to q2; 1h: minutes 0 and 6 hold q1 and q2.
	if st := w.Stats(); st.LambdaEntries != 3 {
		t.Errorf("λ entries = %d, want 3", st.LambdaEntries)
	}
	if st := w.Stats(); st.Buckets != 38+63 {
		t.Errorf("buckets = %d, want %d", st.Buckets, 38+63)
	}
}

func TestSlotHoldingNewerBucket(t *testing.T) {
	w := newWindows(t, Config{})
	a := w.newArm()
	r := &a.rings[0]
	size := int64(len(r.slots))
	res := r.res
	if c := w.cellFor(r, 5*size*res, 0); c == nil {
		t.Fatal("no cell for a fresh slot")
	}
	if c := w.cellFor(r, 4*size*res, 0); c != nil {
		t.Error("an older bucket overwrote a newer one")
	}
	if c := w.cellFor(r, 6*size*res, 0); c == nil {
		t.Error("a newer bucket did not rotate the slot")
	}
}

func TestLateAndFuture(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	at := func(d time.Duration) *Observation {
		o := answer("q", true, true, true, true)
		o.Time = now.Add(d)
		return o
	}
	t.Run("future", func(t *testing.T) {
		w := newWindows(t, Config{})
		if err := w.Add(at(time.Minute), now); err != nil {
			t.Errorf("exactly MaxLateness ahead: %v", err)
		}
		if err := w.Add(at(time.Minute+1), now); !errors.Is(err, ErrFuture) {
			t.Errorf("beyond MaxLateness ahead: %v, want ErrFuture", err)
		}
		if err := w.AddPair(&PairObservation{Scholar: "VALID", Auditor: "VALID", Time: now.Add(2 * time.Minute)}, now); !errors.Is(err, ErrFuture) {
			t.Errorf("pair in the future: %v", err)
		}
		// the accepted future event becomes visible when now reaches it
		if s := snapshot(t, w, "live", "5m", "", now)["precision"].Samples; s != 0 {
			t.Errorf("future event visible before its time: %d", s)
		}
		if s := snapshot(t, w, "live", "5m", "", now.Add(time.Minute))["precision"].Samples; s != 1 {
			t.Errorf("future event not visible at its time: %d", s)
		}
	})
	t.Run("older than the longest window", func(t *testing.T) {
		w := newWindows(t, Config{})
		if err := w.Add(at(-time.Hour-time.Second), now); !errors.Is(err, ErrLate) {
			t.Errorf("1h1s old: %v, want ErrLate", err)
		}
		if err := w.Add(at(-59*time.Minute-30*time.Second), now); !errors.Is(err, ErrLate) {
			t.Errorf("in a bucket outside every window: %v, want ErrLate", err)
		}
		if len(w.Arms()) != 0 {
			t.Errorf("late events created arms %v", w.Arms())
		}
		if err := w.Add(at(-59*time.Minute), now); err != nil {
			t.Errorf("59m old, first event of the arm: %v", err)
		}
		if s := snapshot(t, w, "live", "1h", "", now)["precision"].Samples; s != 1 {
			t.Errorf("1h samples %d, want 1", s)
		}
		if s := snapshot(t, w, "live", "5m", "", now)["precision"].Samples; s != 0 {
			t.Errorf("5m samples %d, want 0", s)
		}
	})
	t.Run("watermark", func(t *testing.T) {
		w := newWindows(t, Config{})
		mustAdd(t, w, at(0), now)
		if err := w.Add(at(-time.Minute-time.Second), now); !errors.Is(err, ErrLate) {
			t.Errorf("61s behind the watermark: %v, want ErrLate", err)
		}
		if err := w.AddPair(&PairObservation{Scholar: "VALID", Auditor: "VALID", Time: now.Add(-2 * time.Minute)}, now); !errors.Is(err, ErrLate) {
			t.Errorf("pair behind the watermark: %v, want ErrLate", err)
		}
		if err := w.Add(at(-time.Minute), now); err != nil {
			t.Errorf("exactly MaxLateness behind: %v", err)
		}
		// other arms have their own watermark
		o := at(-10 * time.Minute)
		o.Arm = "shadow"
		if err := w.Add(o, now); err != nil {
			t.Errorf("first event of another arm: %v", err)
		}
		if s := snapshot(t, w, "live", "1h", "", now)["precision"].Samples; s != 2 {
			t.Errorf("samples %d, want 2 (late events must not count)", s)
		}
	})
	t.Run("replay in order", func(t *testing.T) {
		w := newWindows(t, Config{})
		n := 0
		for d := -50 * time.Minute; d <= 0; d += time.Second {
			if err := w.Add(at(d), now); err != nil {
				t.Fatalf("replay at %v: %v", d, err)
			}
			n++
		}
		if s := snapshot(t, w, "live", "1h", "", now)["precision"].Samples; s != int64(n) {
			t.Errorf("1h samples %d, want %d", s, n)
		}
	})
	t.Run("future events do not move the watermark past now", func(t *testing.T) {
		w := newWindows(t, Config{})
		mustAdd(t, w, at(time.Minute), now)
		if err := w.Add(at(-30*time.Second), now); err != nil {
			t.Errorf("30s old after a future event: %v", err)
		}
	})
}

func TestTypes(t *testing.T) {
	w := newWindows(t, Config{})
	add := func(typ string, a, s bool) {
		o := answer("q"+typ, a, s, true, true)
		o.Type = typ
		mustAdd(t, w, o, t0)
	}
	add("prose", true, true)
	add("", true, false) // default type: prose
	add("code", false, true)
	p := &PairObservation{Type: "code", Scholar: "VALID", Auditor: "REJECT"}
	if err := w.AddPair(p, t0); err != nil {
		t.Fatal(err)
	}
	if got := w.Types("live"); !slices.Equal(got, []string{"code", "prose"}) {
		t.Errorf("Types = %v", got)
	}
	prose := snapshot(t, w, "live", "5m", "prose", t0)
	checkValue(t, prose, "precision", prop(1, 1))
	checkValue(t, prose, "over_refusal", prop(1, 2))
	checkValue(t, prose, "agreement", none)
	code := snapshot(t, w, "live", "5m", "code", t0)
	checkValue(t, code, "under_refusal", prop(1, 1))
	checkValue(t, code, "precision", prop(0, 1))
	checkValue(t, code, "agreement", prop(0, 1))
	all := snapshot(t, w, "live", "5m", "", t0)
	checkValue(t, all, "precision", prop(1, 2))
	checkValue(t, all, "over_refusal", prop(1, 2))
	checkValue(t, all, "under_refusal", prop(1, 1))
	checkValue(t, all, "agreement", prop(0, 1))
	if _, ok := w.Snapshot("live", "5m", "table", t0); ok {
		t.Error("snapshot of an unseen type")
	}
	if _, ok := w.Snapshot("live", "10m", "", t0); ok {
		t.Error("snapshot of an unknown window")
	}
	if _, ok := w.Snapshot("canary", "5m", "", t0); ok {
		t.Error("snapshot of an unseen arm")
	}
	if s, ok := w.Snapshot("", "5m", "", t0); !ok || s.Arm != "live" || s.Window != "5m" || s.Type != "" {
		t.Errorf("snapshot of the default arm: %+v %v", s, ok)
	}
}

func TestCardinalityCaps(t *testing.T) {
	w := newWindows(t, Config{MaxArms: 2, MaxTypes: 2})
	for _, arm := range []string{"a", "b", "c", "d", "a"} {
		o := answer("q", true, true, true, true)
		o.Arm = arm
		mustAdd(t, w, o, t0)
	}
	if got := w.Arms(); !slices.Equal(got, []string{vocab.Other, "a", "b"}) {
		t.Errorf("Arms = %v", got)
	}
	if _, ok := w.Snapshot("c", "5m", "", t0); ok {
		t.Error("folded arm has its own snapshot")
	}
	checkValue(t, snapshot(t, w, vocab.Other, "5m", "", t0), "precision", prop(2, 2))
	checkValue(t, snapshot(t, w, "a", "5m", "", t0), "precision", prop(2, 2))
	for _, typ := range []string{"x", "y", "z", "w", "x"} {
		o := answer("q", true, true, true, true)
		o.Arm, o.Type = "b", typ
		mustAdd(t, w, o, t0)
	}
	if got := w.Types("b"); !slices.Equal(got, []string{vocab.Other, "prose", "x"}) {
		t.Errorf("Types = %v", got)
	}
	checkValue(t, snapshot(t, w, "b", "5m", vocab.Other, t0), "precision", prop(3, 3))
	checkValue(t, snapshot(t, w, "b", "5m", "x", t0), "precision", prop(2, 2))
	checkValue(t, snapshot(t, w, "b", "5m", "", t0), "precision", prop(6, 6))
	st := w.Stats()
	if st.FoldedArms != 2 || st.FoldedTypes != 3 || st.Arms != 3 {
		t.Errorf("Stats = %+v, want 3 arms, 2 folded arm events, 3 folded type events", st)
	}
}

func TestAgreement(t *testing.T) {
	// Expected values printed by seed 003's confusion_and_kappa under
	// Python 3.11 (repr of po, kappa, abstain_rate).
	cases := []struct {
		m                  [4][4]int64
		n                  int64
		pa, kappa, abstain float64
	}{
		{[4][4]int64{{10, 2, 0, 1}, {1, 5, 0, 0}, {0, 1, 3, 0}, {0, 0, 1, 2}}, 26, 0.7692307692307693, 0.6608695652173914, 0.11538461538461539},
		{[4][4]int64{{5, 0, 0, 0}}, 5, 1.0, 0.0, 0.0}, // pe = 1: kappa 0
		{[4][4]int64{{}, {}, {}, {3, 1, 0, 0}}, 4, 0.0, 0.0, 1.0},
		{[4][4]int64{{7, 3, 1, 0}, {2, 9, 0, 4}, {0, 1, 11, 2}, {1, 0, 3, 6}}, 50, 0.66, 0.5442359249329759, 0.2},
		{[4][4]int64{{0, 4, 0, 0}, {4, 0, 0, 0}}, 8, 0.0, -1.0, 0.0},
		{[4][4]int64{{1, 0, 0, 0}}, 1, 1.0, 0.0, 0.0},
		{[4][4]int64{{123, 17, 4, 9}, {11, 87, 6, 3}, {2, 5, 41, 7}, {8, 1, 2, 13}}, 339, 0.7787610619469026, 0.6716643421664342, 0.07079646017699115},
		// matrices where summing pe as Σ rs·cs / n², with fsum or in reverse
		// order gives another last digit of kappa (…075 and …623)
		{[4][4]int64{{1, 8, 30, 0}, {30, 23, 11, 27}, {12, 0, 17, 25}, {13, 11, 12, 18}}, 238, 0.24789915966386555, 0.011049723756906112, 0.226890756302521},
		{[4][4]int64{{27, 27, 22, 14}, {11, 30, 10, 16}, {4, 16, 5, 6}, {26, 11, 29, 27}}, 281, 0.3167259786476868, 0.09030822148782627, 0.3309608540925267},
	}
	for i, c := range cases {
		st := Agreement(c.m)
		if st.N != c.n || st.PercentAgreement != c.pa || st.Kappa != c.kappa || st.AbstainRate != c.abstain {
			t.Errorf("case %d: Agreement = %+v, want n=%d pa=%v kappa=%v abstain=%v", i, st, c.n, c.pa, c.kappa, c.abstain)
		}
		// the same through pairs in two buckets of the window
		w := newWindows(t, Config{})
		k := 0
		for s := 0; s < 4; s++ {
			for a := 0; a < 4; a++ {
				for j := int64(0); j < c.m[s][a]; j++ {
					k++
					ts := t0.Add(time.Duration(k%2) * 10 * time.Second)
					p := &PairObservation{Arm: "canary", Time: ts, Scholar: JudgementLabels[s], Auditor: JudgementLabels[a]}
					if err := w.AddPair(p, ts); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := w.AddPair(&PairObservation{Arm: "canary", Scholar: "valid", Auditor: "VALID"}, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("lower-case label: %v, want ErrInvalid", err)
		}
		m := snapshot(t, w, "canary", "5m", "", t0.Add(time.Minute))
		checkValue(t, m, "agreement", Value{Value: c.pa, Valid: true, Samples: c.n, Num: float64(st.Diagonal), Den: float64(c.n)})
		checkValue(t, m, "kappa", Value{Value: c.kappa, Valid: true, Samples: c.n})
		checkValue(t, m, "abstain_rate", Value{Value: c.abstain, Valid: true, Samples: c.n, Num: float64(st.ScholarAbstain), Den: float64(c.n)})
		if m["kappa"].Value != c.kappa {
			t.Errorf("case %d: kappa %v not bit-identical to %v", i, m["kappa"].Value, c.kappa)
		}
	}
	if st := Agreement([4][4]int64{}); st != (AgreementStats{}) {
		t.Errorf("empty matrix: %+v", st)
	}
}

func TestInvalid(t *testing.T) {
	w := newWindows(t, Config{Ks: []int{1, 3}})
	cases := map[string]func(o *Observation){
		"short P@k":       func(o *Observation) { o.HasRetrieval, o.PrecisionAtK = true, []float64{1} },
		"P@k > 1":         func(o *Observation) { o.HasRetrieval, o.PrecisionAtK = true, []float64{1, 1.5} },
		"NaN R@k":         func(o *Observation) { o.HasRecallAtK, o.RecallAtK = true, []float64{math.NaN(), 0} },
		"NaN ΔS":          func(o *Observation) { o.DeltaSRetrieved = []float64{math.NaN()} },
		"NaN ΔS cited":    func(o *Observation) { o.HasDeltaSCited, o.DeltaSCited = true, math.NaN() },
		"negative anchor": func(o *Observation) { o.HasAnchorDistance, o.AnchorDistance = true, -1 },
		"triage":          func(o *Observation) { o.Triage = len(TriageLabels) },
		"lambda state":    func(o *Observation) { o.Lambda.State = vocab.LambdaChaotic + 1 },
	}
	for name, f := range cases {
		o := answer("q", true, true, true, true)
		f(o)
		if err := w.Add(o, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if len(w.Arms()) != 0 {
		t.Errorf("invalid observations created arms %v", w.Arms())
	}
}

func TestConfig(t *testing.T) {
	w := newWindows(t, Config{})
	if got := w.Specs(); len(got) != 2 || got[0].Name != "5m" || got[1].Name != "1h" {
		t.Errorf("default windows %+v", got)
	}
	if !slices.Equal(w.Ks(), []int{1, 3, 5, 10}) {
		t.Errorf("default ks %v", w.Ks())
	}
	w = newWindows(t, Config{Windows: []Spec{{Length: 90 * time.Second, Resolution: 10 * time.Second}}})
	if got := w.Specs()[0].Name; got != "90s" {
		t.Errorf("derived name %q", got)
	}
	bad := map[string]Config{
		"k zero":          {Ks: []int{0}},
		"k twice":         {Ks: []int{5, 5}},
		"too many k":      {Ks: make([]int, 33)},
		"not a multiple":  {Windows: []Spec{{Length: time.Minute, Resolution: 7 * time.Second}}},
		"zero resolution": {Windows: []Spec{{Length: time.Minute}}},
		"same name":       {Windows: []Spec{{Length: time.Minute, Resolution: time.Second}, {Name: "1m", Length: time.Hour, Resolution: time.Minute}}},
		"negative":        {MaxLateness: -1},
		"min runs":        {LambdaMinRuns: -1},
	}
	for name, cfg := range bad {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCitedSetHash(t *testing.T) {
	a := CitedSetHash([]string{"p1#2", "p2#1"})
	if b := CitedSetHash([]string{"p2#1", "p1#2", "p2#1"}); a != b {
		t.Error("order or duplicates change the hash")
	}
	if CitedSetHash(nil) != CitedSetHash([]string{}) {
		t.Error("nil and empty differ")
	}
	for _, other := range [][]string{nil, {"p1#2"}, {"p1#2p2#1"}, {"p1#", "2p2#1"}, {"p1#2", "p2#1", "x"}} {
		if CitedSetHash(other) == a {
			t.Errorf("%q collides", other)
		}
	}
	// The short cuts for one and two ids hash as the general path does: a
	// set is the same set whatever its size.
	for _, set := range [][]string{{"p1#2"}, {"p1#2", "p1#2"}, {"p2#1", "p1#2"}, {"", "a"}, {"a", ""}, {""}} {
		three := append(slices.Clone(set), set[0]) // a duplicate: the general path
		if got, want := CitedSetHash(set), CitedSetHash(three); got != want {
			t.Errorf("%q: %x, as %q %x", set, got, three, want)
		}
	}
	ids := []string{"c", "a", "b", "a"}
	if n := testing.AllocsPerRun(100, func() { _ = CitedSetHash(ids) }); n != 0 {
		t.Errorf("CitedSetHash allocates %v", n)
	}
}

// realistic returns n observations like the sidecar's: 4 k's, 5 ΔS values.
func realistic(n, qids int, seed uint64) []Observation {
	r := rand.New(rand.NewPCG(seed, 7))
	types := []string{"prose", "code", "table", "figure"}
	obs := make([]Observation, n)
	for i := range obs {
		q := r.IntN(qids)
		o := &obs[i]
		o.Arm = []string{"live", "canary"}[r.IntN(2)]
		o.Type = types[q%4]
		o.QID = "q" + itoa(q)
		o.HasAnswer = r.IntN(10) > 0
		o.Answerable = q%5 > 0
		o.Shipped = r.IntN(8) > 0
		o.Contained = r.IntN(5) > 0
		o.Hit = r.IntN(6) > 0
		o.HasRetrieval = true
		o.RecallStrict = uint32(r.IntN(16))
		o.PrecisionAtK = []float64{r.Float64(), r.Float64(), r.Float64(), r.Float64()}
		o.HasRecallAtK = o.Answerable
		if o.HasRecallAtK {
			o.RecallAtK = []float64{r.Float64(), r.Float64(), r.Float64(), r.Float64()}
		}
		o.DeltaSRetrieved = []float64{r.Float64(), r.Float64(), r.Float64(), r.Float64(), r.Float64()}
		o.HasDeltaSCited, o.DeltaSCited = true, r.Float64()*0.8
		o.CoverageEligible, o.Covered = o.Answerable, r.IntN(4) > 0
		setCitationAccuracy(o, o.Answerable, r.IntN(10) > 0)
		o.HasAnchorDistance, o.AnchorDistance = true, r.IntN(4)
		o.Lambda = LambdaRun{State: LambdaState(r.IntN(4)), Refused: !o.Shipped, Cited: uint64(r.IntN(3))}
		o.Triage = r.IntN(len(TriageLabels)+1) - 1
	}
	return obs
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	for ; i > 0; i /= 10 {
		p--
		b[p] = digits[i%10]
	}
	return string(b[p:])
}

func TestMemoryBounded(t *testing.T) {
	w := newWindows(t, Config{})
	obs := realistic(4096, 1000, 3)
	const total = 1_000_000
	step := 7 * time.Millisecond // 1M events span 1h57m: every slot of both rings rotates
	var entriesHalf int
	var heapHalf uint64
	var ms runtime.MemStats
	for i := 0; i < total; i++ {
		o := &obs[i%len(obs)]
		now := t0.Add(time.Duration(i) * step)
		o.Time = now
		if err := w.Add(o, now); err != nil {
			t.Fatal(err)
		}
		if i == total/2 {
			entriesHalf = w.Stats().LambdaEntries
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heapHalf = ms.HeapAlloc
		}
	}
	st := w.Stats()
	const perArm = 38 + 63
	if st.Arms != 2 || st.Buckets != 2*perArm {
		t.Errorf("arms %d buckets %d, want 2 and %d", st.Arms, st.Buckets, 2*perArm)
	}
	// each (bucket, type) cell holds at most the distinct qids of its type
	if st.Cells > st.Buckets*4 || st.LambdaEntries > st.Buckets*1000 {
		t.Errorf("cells %d, λ entries %d over %d buckets", st.Cells, st.LambdaEntries, st.Buckets)
	}
	if st.LambdaEntries > entriesHalf*11/10+1000 {
		t.Errorf("λ entries grew from %d to %d", entriesHalf, st.LambdaEntries)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > heapHalf*3/2+1<<20 {
		t.Errorf("heap grew from %d to %d bytes", heapHalf, ms.HeapAlloc)
	}
	t.Logf("λ entries %d, cells %d, heap %d KiB", st.LambdaEntries, st.Cells, ms.HeapAlloc>>10)
}

// TestAddDoesNotAllocate: in steady state neither Windows.Add nor a
// Writer allocates.
func TestAddDoesNotAllocate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("long warm-up; the race detector allocates")
	}
	for _, through := range []string{"Windows.Add", "Writer.Add"} {
		t.Run(through, func(t *testing.T) {
			w := newWindows(t, Config{})
			addFn := w.Add
			if through == "Writer.Add" {
				addFn = w.NewWriter().Add
			}
			obs := realistic(4096, 3000, 5)
			step := 20 * time.Millisecond
			i := 0
			add := func() {
				o := &obs[i%len(obs)]
				now := t0.Add(time.Duration(i) * step)
				o.Time = now
				if err := addFn(o, now); err != nil {
					t.Fatal(err)
				}
				i++
			}
			for i < 2*3600*50 { // two hours of event time: every slot has been used and rotated
				add()
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const n = 200_000
			for k := 0; k < n; k++ {
				add()
			}
			runtime.ReadMemStats(&after)
			if per := float64(after.Mallocs-before.Mallocs) / n; per > 0.01 {
				t.Errorf("%.4f allocations per Add in steady state", per)
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	w := newWindows(t, Config{})
	obs := realistic(2000, 100, 9)
	var wg sync.WaitGroup
	const workers = 4
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(obs); i += workers {
				o := obs[i] // a copy: Time stays zero (now)
				if err := w.Add(&o, t0); err != nil {
					t.Error(err)
					return
				}
				if i%7 == 0 {
					if err := w.AddPair(&PairObservation{Arm: o.Arm, Scholar: "VALID", Auditor: "VALID"}, t0); err != nil {
						t.Error(err)
						return
					}
				}
				if i%50 == 0 {
					w.Snapshot(o.Arm, "5m", "", t0)
					w.Arms()
					w.Types(o.Arm)
					w.Stats()
				}
			}
		}(g)
	}
	wg.Wait()
	var want, got, pairs int64
	for i, o := range obs {
		if o.HasAnswer && o.Answerable {
			want++
		}
		if i%7 == 0 {
			pairs++
		}
	}
	for _, arm := range w.Arms() {
		m := snapshot(t, w, arm, "1h", "", t0)
		got += m["over_refusal"].Samples
		pairs -= m["agreement"].Samples
	}
	if got != want || pairs != 0 {
		t.Errorf("answerable samples %d, want %d; pairs off by %d", got, want, pairs)
	}
}

// TestSnapshotMatchesBruteForce recomputes the proportions of random
// observations, by bucket, for several values of now.
func TestSnapshotMatchesBruteForce(t *testing.T) {
	w := newWindows(t, Config{})
	obs := realistic(3000, 50, 11)
	type rec struct {
		o  *Observation
		ts time.Time
	}
	var recs []rec
	r := rand.New(rand.NewPCG(4, 4))
	for i := range obs {
		ts := t0.Add(time.Duration(i) * 2 * time.Second).Add(-time.Duration(r.IntN(50)) * time.Second)
		obs[i].Time = ts
		now := t0.Add(time.Duration(i) * 2 * time.Second)
		if err := w.Add(&obs[i], now); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		recs = append(recs, rec{&obs[i], ts})
		if i%500 != 499 {
			continue
		}
		for _, spec := range w.Specs() {
			res := int64(spec.Resolution)
			cur := floorDiv(now.UnixNano(), res)
			lo := cur - int64(spec.Length/spec.Resolution) + 1
			var ship, prec, retA int64
			recall := make([]int64, 4)
			for _, x := range recs {
				b := floorDiv(x.ts.UnixNano(), res)
				if x.o.Arm != "canary" || b < lo || b > cur {
					continue
				}
				if x.o.HasAnswer && x.o.Shipped {
					ship++
					if x.o.Answerable && x.o.Contained && x.o.Hit {
						prec++
					}
				}
				if x.o.HasRetrieval && x.o.Answerable {
					retA++
					for k := range recall {
						if x.o.RecallStrict&(1<<k) != 0 {
							recall[k]++
						}
					}
				}
			}
			m := snapshot(t, w, "canary", spec.Name, "", now)
			checkValue(t, m, "precision", prop(prec, ship))
			for k, kk := range []string{"1", "3", "5", "10"} {
				checkValue(t, m, "recall_at_"+kk, prop(recall[k], retA))
			}
		}
	}
}
