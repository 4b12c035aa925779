package gates

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// fakeSource serves metric values set by the test.
type fakeSource struct {
	mu    sync.Mutex
	arms  []string
	snaps map[[2]string]map[string]window.Value
}

func newFake(arms ...string) *fakeSource {
	return &fakeSource{arms: arms, snaps: map[[2]string]map[string]window.Value{}}
}

func (f *fakeSource) set(arm, win, metric string, v window.Value) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{arm, win}
	if f.snaps[k] == nil {
		f.snaps[k] = map[string]window.Value{}
	}
	f.snaps[k][metric] = v
}

func (f *fakeSource) Snapshot(arm, win, typ string, now time.Time) (window.Snapshot, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.snaps[[2]string{arm, win}]
	if !ok {
		return window.Snapshot{}, false
	}
	cp := make(map[string]window.Value, len(m))
	for k, v := range m {
		cp[k] = v
	}
	return window.Snapshot{Arm: arm, Window: win, Type: typ, Metrics: cp}, true
}

func (f *fakeSource) DeltaS(arm, win, typ string, now time.Time) *ddsketch.DDSketch { return nil }

func (f *fakeSource) Arms() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.arms)
}

func prop(num, den float64) window.Value {
	if den == 0 {
		return window.Value{Value: 1, Valid: true}
	}
	return window.Value{Value: num / den, Valid: true, Samples: int64(den), Num: num, Den: den}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func gate(name, metric, op string, thr float64, forDur time.Duration, arms ...string) config.Gate {
	return config.Gate{Name: name, Metric: metric, Op: op, Threshold: thr, Window: "5m", MinSamples: 100, For: config.Duration(forDur), Arms: arms, Severity: "warning"}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Inconclusive: "inconclusive", OK: "ok", Pending: "pending", Firing: "firing", Resolved: "resolved", 9: "state(9)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
	var s State
	if err := s.UnmarshalText([]byte("firing")); err != nil || s != Firing {
		t.Errorf("UnmarshalText(firing) = %v, %v", s, err)
	}
	if err := s.UnmarshalText([]byte("nope")); err == nil {
		t.Error("UnmarshalText(nope): no error")
	}
}

// TestStateMachine walks every transition of the package documentation
// with an explicit clock.
func TestStateMachine(t *testing.T) {
	const (
		good = 0.9
		bad  = 0.7
		none = -1.0 // no value
		few  = -2.0 // too few samples
	)
	type step struct {
		at     time.Duration // since t0
		value  float64
		want   State
		change bool          // a transition is returned
		active time.Duration // want ActiveAt − t0; -1: zero
	}
	cases := []struct {
		name  string
		for_  time.Duration
		steps []step
	}{
		{"for 5m", 5 * time.Minute, []step{
			{0, none, Inconclusive, false, -1},                       // inconclusive stays, no transition
			{10 * time.Second, good, OK, true, -1},                   // inconclusive → ok
			{20 * time.Second, good, OK, false, -1},                  // ok stays
			{30 * time.Second, bad, Pending, true, 30 * time.Second}, // ok → pending
			{2 * time.Minute, bad, Pending, false, 30 * time.Second}, // not yet for
			{3 * time.Minute, good, OK, true, -1},                    // pending → ok, never fired
			{4 * time.Minute, bad, Pending, true, 4 * time.Minute},   // ok → pending again: new ActiveAt
			{6 * time.Minute, few, Pending, false, 4 * time.Minute},  // inconclusive keeps pending
			{8 * time.Minute, none, Pending, false, 4 * time.Minute}, // even past for: fires only when broken
			{9 * time.Minute, bad, Firing, true, 4 * time.Minute},    // pending ≥ for → firing
			{10 * time.Minute, bad, Firing, false, 4 * time.Minute},  // firing stays
			{11 * time.Minute, none, Firing, false, 4 * time.Minute}, // missing data never resolves
			{12 * time.Minute, good, Resolved, true, 4 * time.Minute},
			{13 * time.Minute, good, OK, true, -1}, // resolved lasts one evaluation
			{14 * time.Minute, none, Inconclusive, true, -1},
			{15 * time.Minute, bad, Pending, true, 15 * time.Minute}, // inconclusive → pending
			{20 * time.Minute, bad, Firing, true, 15 * time.Minute},  // exactly for → firing
			{21 * time.Minute, good, Resolved, true, 15 * time.Minute},
			{22 * time.Minute, bad, Pending, true, 22 * time.Minute}, // resolved → pending
			{23 * time.Minute, good, OK, true, -1},
			{24 * time.Minute, bad, Pending, true, 24 * time.Minute},
			{25 * time.Minute, bad, Pending, false, 24 * time.Minute},
			{28*time.Minute + 59*time.Second, bad, Pending, false, 24 * time.Minute}, // 1s short of for
			{29 * time.Minute, good, OK, true, -1},
		}},
		{"for 0", 0, []step{
			{0, bad, Firing, true, 0}, // inconclusive → firing directly
			{time.Minute, few, Firing, false, 0},
			{2 * time.Minute, good, Resolved, true, 0},
			{3 * time.Minute, none, Inconclusive, true, -1}, // resolved → inconclusive
			{4 * time.Minute, good, OK, true, -1},
			{5 * time.Minute, bad, Firing, true, 5 * time.Minute}, // ok → firing directly
			{6 * time.Minute, good, Resolved, true, 5 * time.Minute},
			{7 * time.Minute, bad, Firing, true, 7 * time.Minute}, // resolved → firing
			{8 * time.Minute, none, Firing, false, 7 * time.Minute},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newFake("canary")
			e := New([]config.Gate{gate("g", "precision", ">=", 0.8, c.for_)}, src)
			prev := Inconclusive
			var since time.Time
			for i, s := range c.steps {
				switch s.value {
				case none:
					src.set("canary", "5m", "precision", window.Value{})
				case few:
					src.set("canary", "5m", "precision", prop(5, 10))
				default:
					src.set("canary", "5m", "precision", prop(s.value*1000, 1000))
				}
				now := t0.Add(s.at)
				trs := e.Evaluate(now)
				rs := e.Results("canary", "5m")
				if len(rs) != 1 {
					t.Fatalf("step %d: %d results", i, len(rs))
				}
				r := rs[0]
				if r.State != s.want {
					t.Fatalf("step %d (%v, value %v): state %v, want %v (%s)", i, s.at, s.value, r.State, s.want, r.Reason)
				}
				if got := len(trs) == 1; got != s.change || len(trs) > 1 {
					t.Fatalf("step %d: transitions %+v, want change=%v", i, trs, s.change)
				}
				if s.change {
					tr := trs[0]
					if tr.From != prev || tr.State != s.want || !tr.At.Equal(now) || !tr.Since.Equal(now) || tr.Gate != "g" || tr.Arm != "canary" {
						t.Fatalf("step %d: transition %+v, want %v → %v at %v", i, tr, prev, s.want, now)
					}
					since = now
				}
				if !r.Since.Equal(since) {
					t.Fatalf("step %d: since %v, want %v", i, r.Since, since)
				}
				wantActive := time.Time{}
				if s.active >= 0 {
					wantActive = t0.Add(s.active)
				}
				if !r.ActiveAt.Equal(wantActive) {
					t.Fatalf("step %d: active_at %v, want %v", i, r.ActiveAt, wantActive)
				}
				if want := verdictOf(s.want); r.Verdict != want {
					t.Fatalf("step %d: verdict %v, want %v", i, r.Verdict, want)
				}
				prev = s.want
			}
		})
	}
}

func TestMinSamples(t *testing.T) {
	src := newFake("canary")
	g := gate("g", "precision", ">=", 0.8, 0)
	g0 := g
	g0.Name, g0.MinSamples = "g0", 0
	e := New([]config.Gate{g, g0}, src)
	check := func(v window.Value, want, want0 State) {
		t.Helper()
		src.set("canary", "5m", "precision", v)
		e.Evaluate(t0)
		rs := e.Results("canary", "")
		if rs[0].State != want || rs[1].State != want0 {
			t.Errorf("value %+v: states %v, %v; want %v, %v (%s | %s)", v, rs[0].State, rs[1].State, want, want0, rs[0].Reason, rs[1].Reason)
		}
	}
	check(prop(99, 99), Inconclusive, OK)
	check(prop(100, 100), OK, OK)
	check(prop(0, 99), Inconclusive, Firing)
	// No shipped answer: precision is the reference 1 on zero samples. It
	// never passes, even with min_samples 0.
	check(prop(0, 0), Inconclusive, Firing) // firing keeps firing
	src.set("canary", "5m", "precision", prop(100, 100))
	e.Evaluate(t0)
	check(prop(0, 0), Inconclusive, Inconclusive)
	if r := e.Results("canary", "")[1]; r.Samples != 0 || r.Reason == "" {
		t.Errorf("zero samples result: %+v", r)
	}
}

func TestConfidence(t *testing.T) {
	src := newFake("canary")
	g := gate("g", "precision", ">=", 0.8, 0)
	g.Confidence = 0.95
	g.MinSamples = 10
	below := gate("below", "under_refusal", "<=", 0.05, 0)
	below.Confidence = 0.95
	below.MinSamples = 10
	e := New([]config.Gate{g, below}, src)
	cases := []struct {
		v        window.Value
		want     State
		lo, hi   float64
		wantVerd Verdict
	}{
		{prop(82, 100), Inconclusive, 0.7333, 0.8830, VerdictInconclusive}, // point passes, interval straddles
		{prop(8200, 10000), OK, 0.8124, 0.8274, VerdictPass},
		{prop(78, 100), Inconclusive, 0.6893, 0.8500, VerdictInconclusive}, // point fails, interval straddles
		{prop(700, 1000), Firing, 0.6709, 0.7275, VerdictFail},
	}
	for _, c := range cases {
		src.set("canary", "5m", "precision", c.v)
		e.Evaluate(t0)
		r := e.Results("canary", "5m")[0]
		if r.State != c.want || r.Verdict != c.wantVerd {
			t.Errorf("%v/%v: state %v verdict %v, want %v %v (%s)", c.v.Num, c.v.Den, r.State, r.Verdict, c.want, c.wantVerd, r.Reason)
		}
		if r.Interval == nil || !near(r.Interval[0], c.lo, 1e-4) || !near(r.Interval[1], c.hi, 1e-4) {
			t.Errorf("%v/%v: interval %v, want [%v, %v]", c.v.Num, c.v.Den, r.Interval, c.lo, c.hi)
		}
		if r.Value == nil || *r.Value != c.v.Value || r.Samples != int64(c.v.Den) {
			t.Errorf("%v/%v: value %v samples %d", c.v.Num, c.v.Den, r.Value, r.Samples)
		}
	}
	// A gate whose passing side is below: under_refusal 1/100 is
	// [0.0018, 0.0545]: straddles 0.05; 1/1000 is all below.
	for _, c := range []struct {
		v    window.Value
		want State
	}{{prop(1, 100), Inconclusive}, {prop(1, 1000), OK}, {prop(120, 1000), Firing}} {
		src.set("canary", "5m", "under_refusal", c.v)
		e.Evaluate(t0)
		if r := e.Results("canary", "5m")[1]; r.State != c.want {
			t.Errorf("under_refusal %v/%v: %v, want %v (%s)", c.v.Num, c.v.Den, r.State, c.want, r.Reason)
		}
	}
}

func TestOpsAndStrictness(t *testing.T) {
	for _, c := range []struct {
		op   string
		x    float64
		pass bool
	}{
		{">=", 0.8, true}, {">", 0.8, false}, {"<=", 0.8, true}, {"<", 0.8, false},
		{">=", 0.79, false}, {">", 0.81, true}, {"<=", 0.81, false}, {"<", 0.79, true},
	} {
		if got := passes(c.op, c.x, 0.8); got != c.pass {
			t.Errorf("%v %s 0.8 = %v, want %v", c.x, c.op, got, c.pass)
		}
	}
	src := newFake("canary")
	src.set("canary", "5m", "precision", prop(900, 1000))
	e := New([]config.Gate{gate("bad_op", "precision", "==", 0.8, 0)}, src)
	e.Evaluate(t0)
	if r := e.Results("", "")[0]; r.State != Inconclusive {
		t.Errorf("unknown op: %v", r.State)
	}
}

func TestArmsApplied(t *testing.T) {
	src := newFake("canary", "live", "shadow", vocab.Other)
	all := gate("all", "precision", ">=", 0.8, 0)
	listed := gate("listed", "precision", ">=", 0.8, 0, "canary", "blue")
	cmp := gate("cmp", "recall_at_5", ">=", -0.02, 0)
	cmp.CompareTo = "live"
	cmpListed := gate("cmp_listed", "recall_at_5", ">=", -0.02, 0, "live", "canary")
	cmpListed.CompareTo = "live"
	e := New([]config.Gate{all, listed, cmp, cmpListed}, src)
	e.Evaluate(t0)
	got := map[string][]string{}
	for _, r := range e.Results("", "") {
		got[r.Gate] = append(got[r.Gate], r.Arm)
	}
	want := map[string][]string{
		"all":        {"canary", "live", "shadow"}, // not _other
		"listed":     {"blue", "canary"},           // blue: listed, no data yet
		"cmp":        {"canary", "shadow"},         // never the reference arm
		"cmp_listed": {"canary"},
	}
	for g, arms := range want {
		if !slices.Equal(got[g], arms) {
			t.Errorf("gate %s applies to %v, want %v", g, got[g], arms)
		}
	}
	if rs := e.Results("blue", ""); len(rs) != 1 || rs[0].State != Inconclusive || rs[0].Reason != "no data for arm blue in window 5m" {
		t.Errorf("blue: %+v", rs)
	}
}

func TestCompareToProportion(t *testing.T) {
	src := newFake("canary", "live")
	g := gate("recall_vs_live", "recall_at_5", ">=", -0.02, 0)
	g.CompareTo = "live"
	gc := g
	gc.Name, gc.Confidence = "recall_vs_live_95", 0.95
	e := New([]config.Gate{g, gc}, src)
	cases := []struct {
		arm, live       window.Value
		point, withConf State
	}{
		{prop(900, 1000), prop(930, 1000), Firing, Inconclusive}, // −0.03: Newcombe straddles −0.02
		{prop(9000, 10000), prop(9300, 10000), Firing, Firing},   // −0.03, tight
		{prop(930, 1000), prop(930, 1000), Resolved, Firing},     // [−0.023, 0.023] straddles: inconclusive keeps firing
		{prop(9300, 10000), prop(9300, 10000), OK, Resolved},     // [−0.007, 0.007] all ≥ −0.02
		{prop(90, 99), prop(930, 1000), Inconclusive, Inconclusive},
		{prop(900, 1000), prop(93, 99), Inconclusive, Inconclusive}, // reference below min_samples
	}
	for i, c := range cases {
		src.set("canary", "5m", "recall_at_5", c.arm)
		src.set("live", "5m", "recall_at_5", c.live)
		e.Evaluate(t0.Add(time.Duration(i) * time.Minute))
		rs := e.Results("canary", "5m")
		if rs[0].State != c.point || rs[1].State != c.withConf {
			t.Errorf("case %d: %v / %v, want %v / %v (%s | %s)", i, rs[0].State, rs[1].State, c.point, c.withConf, rs[0].Reason, rs[1].Reason)
		}
		if c.arm.Samples >= 100 && c.live.Samples >= 100 {
			if d := c.arm.Value - c.live.Value; rs[0].Value == nil || !near(*rs[0].Value, d, 1e-12) {
				t.Errorf("case %d: value %v, want %v", i, rs[0].Value, d)
			}
			lo, hi := Newcombe(c.arm.Num, c.arm.Den, c.live.Num, c.live.Den, 0.95)
			if iv := rs[1].Interval; iv == nil || iv[0] != lo || iv[1] != hi {
				t.Errorf("case %d: interval %v, want [%v, %v]", i, iv, lo, hi)
			}
		}
		if want := min(c.arm.Samples, c.live.Samples); rs[0].Samples != want {
			t.Errorf("case %d: samples %d, want %d", i, rs[0].Samples, want)
		}
	}
	if len(e.Results("live", "")) != 0 {
		t.Error("a compare_to gate judged its reference arm")
	}
}

// newWindows returns real windows for tests that need ΔS sketches.
func newWindows(t testing.TB) *window.Windows {
	w, err := window.New(window.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func addShipped(t testing.TB, w *window.Windows, arm string, ds float64, at time.Time) {
	o := &window.Observation{
		Arm: arm, QID: "q", Time: at, HasAnswer: true, Answerable: true, Shipped: true,
		Contained: true, Hit: true, HasDeltaSCited: true, DeltaSCited: ds,
	}
	if err := w.Add(o, at); err != nil {
		t.Fatal(err)
	}
}

func TestCompareToDeltaS(t *testing.T) {
	mk := func(name string, thr float64) config.Gate {
		g := gate(name, "delta_s_median", "<=", thr, 0)
		g.CompareTo = "live"
		return g
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// uniform is windows with 300 events on each arm, ΔS uniform over
	// [liveLo, liveLo+0.3) on live and [canaryLo, canaryLo+0.3) on canary.
	uniform := func(t *testing.T, liveLo, canaryLo float64) *window.Windows {
		w := newWindows(t)
		for i := 0; i < 300; i++ {
			addShipped(t, w, "live", liveLo+0.3*rng.Float64(), t0)
			addShipped(t, w, "canary", canaryLo+0.3*rng.Float64(), t0)
		}
		return w
	}
	t.Run("shifted", func(t *testing.T) {
		w := uniform(t, 0.1, 0.2)
		e := New([]config.Gate{mk("tight", 0.05), mk("loose", 0.2)}, w)
		e.Evaluate(t0)
		rs := e.Results("canary", "5m")
		if rs[0].State != Firing {
			t.Errorf("canary ΔS +0.1 vs tolerance 0.05: %v (%s)", rs[0].State, rs[0].Reason)
		}
		if rs[1].State != OK {
			t.Errorf("canary ΔS +0.1 vs tolerance 0.2: %v (%s)", rs[1].State, rs[1].Reason)
		}
		if rs[0].Value == nil || !near(*rs[0].Value, 0.1, 0.03) || rs[0].Samples != 300 {
			t.Errorf("value %v samples %d", rs[0].Value, rs[0].Samples)
		}
	})
	t.Run("median jumps, distributions alike", func(t *testing.T) {
		// Bimodal: live 50×0.2 + 50×0.5, canary 49×0.2 + 51×0.5. The
		// medians are 0.35 and 0.5 (+0.15 > 0.05) but the samples are alike:
		// the test does not back the point difference.
		w := newWindows(t)
		for i := 0; i < 100; i++ {
			addShipped(t, w, "live", []float64{0.2, 0.5}[i%2], t0)
			v := 0.5
			if i < 49 {
				v = 0.2
			}
			addShipped(t, w, "canary", v, t0)
		}
		e := New([]config.Gate{mk("tight", 0.05)}, w)
		e.Evaluate(t0)
		r := e.Results("canary", "5m")[0]
		if r.State != Inconclusive || r.Value == nil || *r.Value < 0.1 {
			t.Errorf("state %v value %v (%s)", r.State, r.Value, r.Reason)
		}
	})
	t.Run("better canary", func(t *testing.T) {
		// Canary significantly better but the gate asks ΔS to go down by
		// 0.3: the point difference fails and the test is in the passing
		// direction: inconclusive, not broken.
		w := uniform(t, 0.3, 0.2)
		e := New([]config.Gate{mk("improve", -0.3)}, w)
		e.Evaluate(t0)
		if r := e.Results("canary", "5m")[0]; r.State != Inconclusive {
			t.Errorf("state %v (%s)", r.State, r.Reason)
		}
	})
	t.Run("higher is better", func(t *testing.T) {
		// A `>=` gate on a ΔS difference fails in the other direction.
		w := uniform(t, 0.3, 0.2)
		g := mk("ge", 0)
		g.Op = ">="
		e := New([]config.Gate{g}, w)
		e.Evaluate(t0)
		if r := e.Results("canary", "5m")[0]; r.State != Firing {
			t.Errorf("state %v (%s)", r.State, r.Reason)
		}
	})
	t.Run("few samples", func(t *testing.T) {
		w := newWindows(t)
		for i := 0; i < 300; i++ {
			addShipped(t, w, "live", 0.1, t0)
		}
		for i := 0; i < 50; i++ {
			addShipped(t, w, "canary", 0.9, t0)
		}
		e := New([]config.Gate{mk("tight", 0.05)}, w)
		e.Evaluate(t0)
		if r := e.Results("canary", "5m")[0]; r.State != Inconclusive || r.Samples != 50 {
			t.Errorf("state %v samples %d (%s)", r.State, r.Samples, r.Reason)
		}
	})
}

func TestRealWindowsProportion(t *testing.T) {
	// Wilson on the counts the real windows report.
	w := newWindows(t)
	for i := 0; i < 263; i++ {
		o := &window.Observation{Arm: "canary", QID: fmt.Sprint(i), HasAnswer: true, Answerable: true, Shipped: true, Hit: true, Contained: i < 81}
		if err := w.Add(o, t0); err != nil {
			t.Fatal(err)
		}
	}
	g := gate("p", "precision", ">=", 0.25, 0)
	g.Confidence = 0.95
	e := New([]config.Gate{g}, w)
	e.Evaluate(t0)
	r := e.Results("canary", "5m")[0]
	if r.State != OK || r.Interval == nil || !near(r.Interval[0], 0.2553, 5e-5) || !near(r.Interval[1], 0.3662, 5e-5) {
		t.Errorf("%+v", r)
	}
	if e.DefaultWindow() != "5m" {
		t.Errorf("DefaultWindow = %q", e.DefaultWindow())
	}
}

func TestVerdictAggregation(t *testing.T) {
	src := newFake("canary")
	gs := []config.Gate{
		gate("a", "precision", ">=", 0.8, 0),
		gate("b", "chr", ">=", 0.75, 10*time.Minute),
		gate("c", "coverage", ">=", 0.7, 0),
	}
	h := gs[2]
	h.Name, h.Window = "hour", "1h"
	gs = append(gs, h)
	e := New(gs, src)
	if v, rs := e.Verdict("canary", "5m"); v != VerdictInconclusive || len(rs) != 0 {
		t.Errorf("before any evaluation: %v %v", v, rs)
	}
	set := func(p, chr, cov window.Value) {
		src.set("canary", "5m", "precision", p)
		src.set("canary", "5m", "chr", chr)
		src.set("canary", "5m", "coverage", cov)
	}
	good, bad, few := prop(900, 1000), prop(100, 1000), prop(5, 10)
	cases := []struct {
		p, chr, cov window.Value
		want        Verdict
	}{
		{good, good, good, VerdictPass},
		{good, good, few, VerdictInconclusive},
		{good, bad, few, VerdictFail}, // pending counts as fail
		{bad, bad, good, VerdictFail},
		{good, good, good, VerdictPass}, // resolved and ok pass
		{few, few, few, VerdictInconclusive},
	}
	for i, c := range cases {
		set(c.p, c.chr, c.cov)
		e.Evaluate(t0.Add(time.Duration(i) * time.Minute))
		v, rs := e.Verdict("canary", "5m")
		if v != c.want || len(rs) != 3 {
			t.Errorf("case %d: %v (%d gates), want %v: %+v", i, v, len(rs), c.want, rs)
		}
		if v2 := Aggregate(rs); v2 != v {
			t.Errorf("Aggregate = %v, Verdict = %v", v2, v)
		}
	}
	// The 1h window has no data: inconclusive; all windows together too.
	if v, rs := e.Verdict("canary", "1h"); v != VerdictInconclusive || len(rs) != 1 {
		t.Errorf("1h: %v %d", v, len(rs))
	}
	if v, rs := e.Verdict("canary", ""); v != VerdictInconclusive || len(rs) != 4 {
		t.Errorf("all windows: %v %d", v, len(rs))
	}
	if v, rs := e.Verdict("nobody", "5m"); v != VerdictInconclusive || len(rs) != 0 {
		t.Errorf("unknown arm: %v %d", v, len(rs))
	}
	if v, _ := e.Verdict("canary", "7m"); v != VerdictInconclusive {
		t.Errorf("unknown window: %v", v)
	}
	// Results are copies.
	rs := e.Results("canary", "5m")
	*rs[0].Value = 42
	if r := e.Results("canary", "5m")[0]; *r.Value == 42 {
		t.Error("Results shares its values with the engine")
	}
}

func TestNoValueAndUnknownMetric(t *testing.T) {
	src := newFake("canary")
	src.set("canary", "5m", "coverage", window.Value{})
	src.set("canary", "5m", "precision", window.Value{Value: math.NaN(), Valid: true, Samples: 500})
	e := New([]config.Gate{
		gate("cov", "coverage", ">=", 0.7, 0),
		gate("nan", "precision", ">=", 0.7, 0),
		gate("unknown", "bogus", ">=", 0.7, 0),
	}, src)
	e.Evaluate(t0)
	for _, r := range e.Results("canary", "") {
		if r.State != Inconclusive || r.Verdict != VerdictInconclusive || r.Reason == "" {
			t.Errorf("%s: %+v", r.Gate, r)
		}
	}
}

func TestEvaluated(t *testing.T) {
	e := New(nil, newFake())
	if !e.Evaluated().IsZero() {
		t.Errorf("never evaluated: Evaluated = %v", e.Evaluated())
	}
	e.Evaluate(t0)
	if !e.Evaluated().Equal(t0) {
		t.Errorf("Evaluated = %v", e.Evaluated())
	}
}

// TestConcurrent runs Evaluate, Verdict, Results and window updates at the
// same time; run with -race.
func TestConcurrent(t *testing.T) {
	w := newWindows(t)
	gs := config.DefaultGates()
	e := New(gs, w)
	var wg sync.WaitGroup
	const n = 200
	for _, arm := range []string{"live", "canary", "shadow"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				addShipped(t, w, arm, float64(i%10)/10, t0.Add(time.Duration(i)*time.Second))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n/4; i++ {
			e.Evaluate(t0.Add(time.Duration(i) * 4 * time.Second))
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/2; i++ {
				_, rs := e.Verdict("canary", "5m")
				for _, x := range rs {
					_ = x.State.String()
				}
				_ = e.Results("", "")
				_ = e.Evaluated()
			}
		}()
	}
	wg.Wait()
	e.Evaluate(t0.Add(n * time.Second))
	if len(e.Results("canary", "5m")) == 0 {
		t.Error("no results")
	}
}

func TestTransitionJSON(t *testing.T) {
	src := newFake("canary")
	src.set("canary", "5m", "precision", prop(100, 1000))
	e := New([]config.Gate{gate("g", "precision", ">=", 0.8, 0)}, src)
	trs := e.Evaluate(t0)
	if len(trs) != 1 {
		t.Fatalf("%d transitions", len(trs))
	}
	b, err := json.Marshal(trs[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"gate": "g", "arm": "canary", "state": "firing", "from": "inconclusive", "verdict": "fail", "at": "2026-03-01T12:00:00Z", "value": 0.1} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, m[k], v, b)
		}
	}
	if _, ok := m["compare_to"]; ok {
		t.Errorf("compare_to present: %s", b)
	}
}
