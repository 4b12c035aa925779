package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// quality is one arm's per-event probabilities in the tests.
type quality struct {
	prec   float64 // P(contained ∧ hit | shipped answerable)
	deltaS float64 // mean cited ΔS
}

var healthy = quality{prec: 0.85, deltaS: 0.30}

// feed adds n events of arm with quality q to m at t.
func feed(t *testing.T, m *Manager, rng *rand.Rand, arm string, q quality, n int, at time.Time) {
	t.Helper()
	for i := range n {
		good := rng.Float64() < q.prec
		o := window.Observation{
			Arm: arm, QID: "q" + string(rune('a'+i%26)), Time: at, HasAnswer: true, Answerable: true, Shipped: true,
			Hit: good, Contained: good, Triage: -1,
			HasDeltaSCited: true, DeltaSCited: min(1, max(0, q.deltaS+0.1*rng.NormFloat64())),
			Lambda: window.LambdaRun{State: window.LambdaConvergent},
		}
		if err := m.Observe(&o, at); err != nil {
			t.Fatal(err)
		}
	}
}

func onlyChecks(names ...string) map[string][]config.AnalysisCheck {
	sets := config.DefaultCheckSets()
	var kept []config.AnalysisCheck
	for _, c := range sets[config.CanaryCheckSet] {
		for _, n := range names {
			if c.Name == n {
				kept = append(kept, c)
			}
		}
	}
	sets["some"] = kept
	return sets
}

func newTestManager(sets map[string][]config.AnalysisCheck) *Manager {
	cfg := config.Default().Analysis
	if sets != nil {
		cfg.Checks = sets
	}
	return NewManager(Options{Config: cfg, Ks: []int{1, 3, 5, 10}, MinRuns: 3})
}

func checkOf(t *testing.T, r Result, name string) CheckResult {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", name, r.Checks)
	return CheckResult{}
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name           string
		cand           quality
		nCand, nBase   int
		verdict        Verdict
		prec, deltaP90 Verdict
	}{
		{"healthy with plenty", healthy, 20000, 80000, Pass, Pass, Pass},
		{"precision 10 points worse", quality{prec: 0.75, deltaS: 0.30}, 4000, 16000, Fail, Fail, Pass},
		{"ΔS 0.1 worse", quality{prec: 0.85, deltaS: 0.40}, 4000, 16000, Fail, Inconclusive, Fail},
		{"too few samples", healthy, 50, 200, Inconclusive, Inconclusive, Inconclusive},
		{"no candidate yet", healthy, 0, 2000, Inconclusive, Inconclusive, Inconclusive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestManager(onlyChecks("precision", "delta_s_p90", "agreement"))
			if _, created, err := m.Start(StartRequest{ID: "a", Checks: "some"}, t0); err != nil || !created {
				t.Fatalf("start: %v %v", created, err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			feed(t, m, rng, "canary", c.cand, c.nCand, t0)
			feed(t, m, rng, "live", healthy, c.nBase, t0)
			an, _ := m.Get("a")
			r := an.Result()
			if r.Verdict != c.verdict {
				t.Errorf("verdict %s (%s), want %s", r.Verdict, r.Reason, c.verdict)
			}
			if p := checkOf(t, r, "precision"); p.Verdict != c.prec {
				t.Errorf("precision %s (%s), want %s", p.Verdict, p.Reason, c.prec)
			}
			if d := checkOf(t, r, "delta_s_p90"); d.Verdict != c.deltaP90 {
				t.Errorf("delta_s_p90 %s (%s), want %s", d.Verdict, d.Reason, c.deltaP90)
			}
			// No judgement pair flowed: agreement has no data and is left
			// out, so m is 2 and each side holds at 1 − α/2.
			ag := checkOf(t, r, "agreement")
			if ag.Verdict != NoData || ag.Estimate != nil || ag.Interval != nil {
				t.Errorf("agreement %+v, want no_data without numbers", ag)
			}
			if p := checkOf(t, r, "precision"); math.Abs(p.Level-(1-0.01/2)) > 1e-12 {
				t.Errorf("level %v, want 1 − 0.01/2", p.Level)
			}
			if r.Events != (Samples{Arm: int64(c.nCand), Baseline: int64(c.nBase)}) {
				t.Errorf("events %+v", r.Events)
			}
			if r.Verdict != Pass && r.Reason == "" {
				t.Error("no reason for a verdict other than pass")
			}
		})
	}
}

// A check's passing side holds at 1 − α whatever the other checks, its
// failing side at 1 − α/m: judged alone or among the canary set, precision
// (higher is better: its lower bound passes) has the same lower bound,
// delta_s_p90 (lower is better) the same upper bound, and the other
// sides widen with m.
func TestPassSideLevel(t *testing.T) {
	results := map[string]Result{}
	for _, set := range []string{"some", config.CanaryCheckSet} {
		m := newTestManager(onlyChecks("precision", "delta_s_p90"))
		if _, _, err := m.Start(StartRequest{ID: "a", Checks: set}, t0); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(9, 9))
		feed(t, m, rng, "canary", healthy, 3000, t0)
		feed(t, m, rng, "live", healthy, 12000, t0)
		an, _ := m.Get("a")
		results[set] = an.Result()
	}
	for _, name := range []string{"precision", "delta_s_p90"} {
		alone, among := checkOf(t, results["some"], name), checkOf(t, results[config.CanaryCheckSet], name)
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
		if !near(alone.PassLevel, 0.99) || !near(among.PassLevel, 0.99) || !near(alone.Level, 1-0.01/2) || !(among.Level > alone.Level) {
			t.Errorf("%s: levels alone %v/%v, among the canary set %v/%v; want pass 0.99 and fail 1 − α/m", name, alone.PassLevel, alone.Level, among.PassLevel, among.Level)
		}
		pass, fail := 0, 1
		if among.LowerIsBetter {
			pass, fail = 1, 0
		}
		if alone.Interval[pass] != among.Interval[pass] {
			t.Errorf("%s: passing side %v alone, %v among the canary set", name, alone.Interval[pass], among.Interval[pass])
		}
		if math.Abs(among.Interval[fail]-*among.Estimate) <= math.Abs(alone.Interval[fail]-*alone.Estimate) {
			t.Errorf("%s: failing side %v among the canary set no wider than %v alone", name, among.Interval, alone.Interval)
		}
	}
}

// The interval of a comparison contains its estimate, and the check is
// judged against the tolerance on the metric's failing side.
func TestDecide(t *testing.T) {
	cmp := config.AnalysisCheck{Metric: "precision", Tolerance: 0.02}
	for _, c := range []struct {
		lowerBetter bool
		lo, hi      float64
		want        Verdict
	}{
		{false, -0.01, 0.01, Pass},
		{false, -0.03, 0.01, Inconclusive},
		{false, -0.08, -0.03, Fail},
		{false, -0.02, 0.0, Inconclusive}, // touching the tolerance is not a pass
		{true, -0.01, 0.01, Pass},
		{true, 0.01, 0.05, Inconclusive},
		{true, 0.03, 0.05, Fail},
	} {
		if got, why := decide(cmp, c.lowerBetter, confseqInterval(c.lo, c.hi)); got != c.want {
			t.Errorf("%+v: %s (%s)", c, got, why)
		}
	}
	for _, c := range []struct {
		op     string
		lo, hi float64
		want   Verdict
	}{
		{">=", 0.71, 0.8, Pass}, {">=", 0.7, 0.8, Pass}, {">=", 0.6, 0.69, Fail}, {">=", 0.65, 0.75, Inconclusive},
		{">", 0.7, 0.8, Inconclusive}, {">", 0.6, 0.7, Fail},
		{"<=", 0.3, 0.4, Pass}, {"<=", 0.41, 0.5, Fail}, {"<", 0.3, 0.4, Inconclusive}, {"<", 0.4, 0.5, Fail},
	} {
		abs := config.AnalysisCheck{Metric: "coverage", Op: c.op, Threshold: 0.7}
		if c.op[0] == '<' {
			abs.Threshold = 0.4
		}
		if got, why := decide(abs, false, confseqInterval(c.lo, c.hi)); got != c.want {
			t.Errorf("%+v: %s (%s)", c, got, why)
		}
	}
}

func TestEligibility(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "e", Arm: "shadow", Checks: config.EligibilityCheckSet}, t0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	feed(t, m, rng, "shadow", healthy, 5000, t0)
	an, _ := m.Get("e")
	r := an.Result()
	// ΔS median 0.30 ± noise: well under 0.40; the sample has no coverage
	// or citation-accuracy eligibility, so those are no_data.
	if c := checkOf(t, r, "delta_s_median"); c.Verdict != Pass || c.Kind != KindAbsolute || c.Threshold == nil || *c.Threshold != 0.40 {
		t.Errorf("delta_s_median %+v", c)
	}
	if c := checkOf(t, r, "coverage"); c.Verdict != NoData {
		t.Errorf("coverage %+v, want no_data", c)
	}
	// recall_at_5 compares with the baseline, which has no data: no_data
	// only when neither arm has any; the shadow arm has no retrieval either.
	if c := checkOf(t, r, "recall_at_5"); c.Verdict != NoData {
		t.Errorf("recall_at_5 %+v", c)
	}
}

func TestManagerLifecycle(t *testing.T) {
	m := newTestManager(nil)
	m.cfg.MaxActive = 2
	if _, created, err := m.Start(StartRequest{ID: "a"}, t0); err != nil || !created {
		t.Fatalf("first start: %v %v", created, err)
	}
	r, created, err := m.Start(StartRequest{ID: "a", Arm: "other"}, t0.Add(time.Minute))
	if err != nil || created || r.Arm != "canary" || !r.Since.Equal(t0) {
		t.Errorf("same id again: created %v, %+v, %v; want the existing analysis", created, r, err)
	}
	for _, c := range []struct {
		req  StartRequest
		want error
		msg  string
	}{
		{StartRequest{ID: "b", Checks: "nope"}, ErrBadRequest, `unknown check set "nope"`},
		{StartRequest{ID: "b c"}, ErrBadRequest, `id "b c" has ' '`},
		{StartRequest{ID: "b", Arm: "can.ary"}, ErrBadRequest, `arm "can.ary" has '.'`},
		{StartRequest{ID: strings.Repeat("x", 129)}, ErrBadRequest, "at most 128"},
		{StartRequest{ID: "b", Arm: "live"}, ErrBadRequest, `arm and baseline are both "live"`},
		{StartRequest{ID: "b", Baseline: "\x00"}, ErrBadRequest, "baseline"},
	} {
		_, _, err := m.Start(c.req, t0)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %v with %q", c.req, err, c.want, c.msg)
		}
	}
	if _, _, err := m.Start(StartRequest{ID: "b"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Start(StartRequest{ID: "c"}, t0); !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "max_active 2") {
		t.Errorf("third start: %v, want ErrTooMany", err)
	}
	// Ending one frees its place; it stays readable.
	if _, ok := m.End("a", t0.Add(time.Minute)); !ok {
		t.Fatal("end a")
	}
	if _, _, err := m.Start(StartRequest{ID: "c"}, t0.Add(time.Minute)); err != nil {
		t.Fatalf("start after end: %v", err)
	}
	if an, ok := m.Get("a"); !ok || an.Running() || an.Result().Ended == nil {
		t.Error("ended analysis not readable as ended")
	}
	// Observations before an analysis' start or after its end are not
	// its; the ended one takes nothing.
	rng := rand.New(rand.NewPCG(2, 2))
	feed(t, m, rng, "canary", healthy, 10, t0.Add(-time.Second))
	feed(t, m, rng, "canary", healthy, 7, t0.Add(2*time.Minute))
	for id, want := range map[string]int64{"a": 0, "b": 7, "c": 7} {
		an, _ := m.Get(id)
		if got := an.Result().Events.Arm; got != want {
			t.Errorf("analysis %s took %d events, want %d", id, got, want)
		}
	}
	// max_duration ends b and c; retention forgets a first.
	maxDur, keep := time.Duration(m.cfg.MaxDuration), time.Duration(m.cfg.Retention)
	_, forgotten := m.Tick(t0.Add(maxDur))
	if b, _ := m.Get("b"); b.Running() || b.Result().EndReason != "max_duration" || len(forgotten) != 0 {
		t.Errorf("after max_duration: b running %v (%s), forgotten %v", b.Running(), b.Result().EndReason, forgotten)
	}
	if _, forgotten = m.Tick(t0.Add(time.Minute + keep)); len(forgotten) != 1 || forgotten[0] != "a" {
		t.Errorf("retention: forgot %v, want [a]", forgotten)
	}
	if m.Active() != 0 || len(m.List()) != 2 {
		t.Errorf("active %d, listed %d", m.Active(), len(m.List()))
	}
}

// Tick reports a verdict when it changes, not a new analysis' first
// inconclusive, and records the history.
func TestTickChanges(t *testing.T) {
	m := newTestManager(onlyChecks("precision"))
	if _, _, err := m.Start(StartRequest{ID: "a", Checks: "some"}, t0); err != nil {
		t.Fatal(err)
	}
	if ch, _ := m.Tick(t0); len(ch) != 0 {
		t.Errorf("first inconclusive reported: %+v", ch)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	feed(t, m, rng, "canary", quality{prec: 0.6}, 3000, t0)
	feed(t, m, rng, "live", healthy, 12000, t0)
	ch, _ := m.Tick(t0.Add(time.Minute))
	if len(ch) != 1 || ch[0].Verdict != Fail || ch[0].Analysis != "a" {
		t.Errorf("changes %+v, want a to fail", ch)
	}
	if ch, _ := m.Tick(t0.Add(2 * time.Minute)); len(ch) != 0 {
		t.Errorf("unchanged verdict reported: %+v", ch)
	}
	an, _ := m.Get("a")
	h := an.History()
	if len(h) != 3 || !h[1].Checks[0].Valid || h[1].Verdict != Fail || h[0].Checks[0].Valid {
		t.Errorf("history %+v", h)
	}
	// The history stays bounded, keeping the whole span at a coarser step.
	for i := range 3 * maxHistory {
		m.Tick(t0.Add(time.Duration(3+i) * time.Minute))
	}
	h = an.History()
	if len(h) >= maxHistory || !h[0].At.Equal(t0) {
		t.Errorf("history of %d points from %v", len(h), h[0].At)
	}
}

// A checkpoint restores the same judgement; one without accumulators only
// the spec.
func TestSaveRestore(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a"}, t0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	feed(t, m, rng, "canary", healthy, 3000, t0)
	feed(t, m, rng, "live", healthy, 9000, t0)
	m.Tick(t0)
	an, _ := m.Get("a")
	want := an.Result()
	for _, mode := range []SaveMode{SaveAll, SaveClosedGroups, SaveSpec} {
		data := mustEncode(t, an, mode)
		back, err := DecodeSaved(data)
		if err != nil {
			t.Fatal(err)
		}
		m2 := newTestManager(nil)
		if err := m2.Restore(back); err != nil {
			t.Fatal(err)
		}
		an2, _ := m2.Get("a")
		got := an2.Result()
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		switch mode {
		case SaveAll, SaveClosedGroups:
			// The open groups do not count yet: the judgement is the same
			// without them.
			if string(gj) != string(wj) || len(an2.History()) != 1 {
				t.Errorf("restored (mode %d):\n%s\nwant:\n%s", mode, gj, wj)
			}
		case SaveSpec:
			if got.Events != (Samples{}) || !got.Since.Equal(t0) || got.Arm != "canary" {
				t.Errorf("spec-only restore: %+v", got)
			}
		}
		if mode == SaveClosedGroups && len(data) >= len(mustEncode(t, an, SaveAll)) {
			t.Errorf("without open groups the checkpoint is %d bytes, not smaller than with them", len(data))
		}
	}
	if _, err := DecodeSaved([]byte(`{"spec":{}}`)); err == nil {
		t.Error("a checkpoint that is not gzip was accepted")
	}
	bad := Saved{Spec: Spec{ID: "x", Arm: "canary", Baseline: "live", CheckSet: "gone", Start: t0}}
	if err := m.Restore(bad); err == nil || !strings.Contains(err.Error(), `check set "gone"`) {
		t.Errorf("restore with an unknown set: %v", err)
	}
}

// Judgement pairs reach the agreement and kappa checks.
func TestPairs(t *testing.T) {
	m := newTestManager(onlyChecks("agreement", "kappa"))
	if _, _, err := m.Start(StartRequest{ID: "a", Checks: "some"}, t0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, arm := range []string{"canary", "live", "live", "live"} {
		for range 2000 {
			s, a := "VALID", "VALID"
			if rng.Float64() < 0.3 {
				s, a = "REJECT", "REJECT"
			}
			if rng.Float64() < 0.03 {
				a = "NOT_IN_CONTEXT"
			}
			if err := m.ObservePair(&window.PairObservation{Arm: arm, Scholar: s, Auditor: a}, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.ObservePair(&window.PairObservation{Arm: "canary", Scholar: "MAYBE", Auditor: "VALID"}, t0); err == nil {
		t.Error("unknown label accepted")
	}
	an, _ := m.Get("a")
	r := an.Result()
	ag, k := checkOf(t, r, "agreement"), checkOf(t, r, "kappa")
	if ag.Samples != (Samples{Arm: 2000, Baseline: 6000}) || ag.Verdict != Pass || k.Verdict == Fail {
		t.Errorf("agreement %+v\nkappa %+v", ag, k)
	}
	if !(k.Interval[0] < *k.Estimate && *k.Estimate < k.Interval[1]) {
		t.Errorf("kappa estimate %v outside %v", *k.Estimate, *k.Interval)
	}
}

// TestEndedAnalysisJudgedOnce: the tick judges an ended analysis once
// more after its end, then answers that judgement: nothing it holds
// changes, and it stays for analysis.retention.
func TestEndedAnalysisJudgedOnce(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	rng := rand.New(rand.NewPCG(7, 7))
	feed(t, m, rng, "canary", healthy, 2000, t0)
	feed(t, m, rng, "live", healthy, 8000, t0)
	running, _ := recordNow(an, t0.Add(time.Minute))
	feed(t, m, rng, "canary", healthy, 500, t0.Add(30*time.Second))
	if r, _ := recordNow(an, t0.Add(2*time.Minute)); r.Events.Arm != running.Events.Arm+500 {
		t.Fatalf("a running analysis' record has %d canary events, want %d", r.Events.Arm, running.Events.Arm+500)
	}
	if _, ok := m.End("a", t0.Add(3*time.Minute)); !ok {
		t.Fatal("end a")
	}
	ended, _ := recordNow(an, t0.Add(3*time.Minute))
	feed(t, m, rng, "canary", healthy, 500, t0.Add(time.Minute))
	again, changed := recordNow(an, t0.Add(4*time.Minute))
	fresh := an.Result()
	asJSON := func(r Result) string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if changed || asJSON(again) != asJSON(ended) || asJSON(again) != asJSON(fresh) {
		t.Errorf("ended analysis recorded\n%s\nthen\n%s (changed %v); judged anew\n%s", asJSON(ended), asJSON(again), changed, asJSON(fresh))
	}
	if allocs := testing.AllocsPerRun(5, func() { recordNow(an, t0.Add(5*time.Minute)) }); allocs != 0 {
		t.Errorf("recording an ended analysis allocates %v times: judged anew", allocs)
	}
}

func confseqInterval(lo, hi float64) confseq.Interval { return confseq.Interval{Lo: lo, Hi: hi} }

// Each check's sequence is intersected with its earlier readings, taken
// at every new minute of event time: a bound once reached stays reached,
// whatever the estimate does after, and the intersection survives a
// checkpoint.
func TestRunningIntersection(t *testing.T) {
	m := newTestManager(onlyChecks("precision"))
	if _, _, err := m.Start(StartRequest{ID: "a", Checks: "some"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	rng := rand.New(rand.NewPCG(11, 11))
	// Minute 1: a canary as good as live, plenty of both.
	feed(t, m, rng, "canary", healthy, 20000, t0)
	feed(t, m, rng, "live", healthy, 80000, t0)
	passed := an.Result()
	if passed.Verdict != Pass {
		t.Fatalf("healthy canary: %s (%s)", passed.Verdict, passed.Reason)
	}
	if an.run[0].Set {
		t.Fatal("narrowed before any minute ended")
	}
	// Minute 2's first event narrows with minute 1's sequence; then a
	// stretch 3 points worse moves the estimate, not far enough to fail.
	feed(t, m, rng, "canary", quality{prec: 0.82, deltaS: 0.3}, 20000, t0.Add(time.Minute))
	r := an.Result()
	c := checkOf(t, r, "precision")
	if !an.run[0].Set || c.Interval[0] < an.run[0].Lo || c.Interval[1] > an.run[0].Hi {
		t.Fatalf("interval %v not within the running bound %+v", *c.Interval, an.run[0])
	}
	if c.Interval[0] != passed.Checks[0].Interval[0] || r.Verdict != Pass {
		t.Errorf("the lower bound reached in minute 1 was given up: %v, then %v (%s)", *passed.Checks[0].Interval, *c.Interval, r.Verdict)
	}
	// Judged alone, the sequence now no longer passes.
	res, v, _ := judge(an.checks, &arms{cand: an.cand, base: an.base, candM: an.cand.Metrics(), baseM: an.base.Metrics()}, an.alpha, nil)
	if v == Pass {
		t.Errorf("the fixture does not test anything: the sequence alone passes too: %v", res[0].Interval)
	}
	// A checkpoint keeps the running bounds.
	s, err := an.Save(SaveAll)
	if err != nil {
		t.Fatal(err)
	}
	m2 := newTestManager(onlyChecks("precision"))
	if err := m2.Restore(s); err != nil {
		t.Fatal(err)
	}
	an2, _ := m2.Get("a")
	if an2.Result().Verdict != Pass || an2.run[0] != an.run[0] || an2.lastPeriod != an.lastPeriod {
		t.Errorf("restored: %s, bound %+v, want pass and %+v", an2.Result().Verdict, an2.run[0], an.run[0])
	}
	// A canary that then falls far below live fails: the bounds no longer
	// meet, and the sequence now decides.
	feed(t, m, rng, "canary", quality{prec: 0.5, deltaS: 0.3}, 60000, t0.Add(2*time.Minute))
	if r := an.Result(); r.Verdict != Fail {
		t.Errorf("after a collapse: %s (%s)", r.Verdict, r.Reason)
	}
}

// A canary that degrades after its analysis passed moves its unpaired
// sequence at once, while its paired one still reads the visits that
// closed before (a visit closes only once no late run can join it): the
// two no longer meet, and the check must not keep the pass its running
// bound reached before, but fail on the sequence that sees the change.
func TestPassNotKeptWhenOneSequenceMoves(t *testing.T) {
	m := newTestManager(onlyChecks("precision"))
	if _, _, err := m.Start(StartRequest{ID: "a", Checks: "some"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	rng := rand.New(rand.NewPCG(13, 13))
	feed(t, m, rng, "canary", healthy, 20000, t0)
	feed(t, m, rng, "live", healthy, 80000, t0)
	if r := an.Result(); r.Verdict != Pass {
		t.Fatalf("healthy canary: %s (%s)", r.Verdict, r.Reason)
	}
	// A minute later the canary collapses, on 2,000 questions asked a few
	// times each: their visits stay open. The first of these events
	// narrows the running bound with the passing sequence.
	at := t0.Add(time.Minute)
	for i := range 40000 {
		arm, good := "live", rng.Float64() < healthy.prec
		if i%2 == 1 {
			arm, good = "canary", rng.Float64() < 0.5
		}
		o := window.Observation{Arm: arm, QID: fmt.Sprintf("d%d", i/2%2000), Time: at, HasAnswer: true, Answerable: true, Shipped: true,
			Hit: good, Contained: good, Triage: -1}
		if err := m.Observe(&o, at); err != nil {
			t.Fatal(err)
		}
	}
	if !an.run[0].Set {
		t.Fatal("the running bound was never narrowed: the fixture tests nothing")
	}
	c := checkOf(t, an.Result(), "precision")
	if c.PairedInterval == nil || c.UnpairedInterval == nil {
		t.Fatalf("precision unpaired: %+v", c)
	}
	p, u := *c.PairedInterval, *c.UnpairedInterval
	if !(u[1] < -c.Tolerance) || !(u[1] < p[0]) {
		t.Fatalf("the fixture tests nothing: unpaired %v is not past the tolerance and below paired %v", u, p)
	}
	// The two sequences do not meet: the one on the failing side decides.
	if c.Verdict != Fail || *c.Interval != u {
		t.Errorf("precision of a collapsed canary: %s on %v (%s), want fail on the unpaired %v (paired %v, running bound %+v)", c.Verdict, *c.Interval, c.Reason, u, p, an.run[0])
	}
}

func mustEncode(t testing.TB, an *Analysis, mode SaveMode) []byte {
	t.Helper()
	s, err := an.Save(mode)
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A checkpoint read back from the KV bucket is untrusted: decoding and
// restoring it never panics.
func FuzzDecodeSaved(f *testing.F) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a"}, t0); err != nil {
		f.Fatal(err)
	}
	feed(&testing.T{}, m, rand.New(rand.NewPCG(1, 2)), "canary", healthy, 200, t0)
	an, _ := m.Get("a")
	for _, mode := range []SaveMode{SaveAll, SaveSpec} {
		f.Add(mustEncode(f, an, mode))
	}
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSaved(data)
		if err != nil {
			return
		}
		m := newTestManager(nil)
		if m.Restore(s) == nil {
			if an, ok := m.Get(s.Spec.ID); ok {
				an.Result()
			}
		}
	})
}

// The history's JSON keys are lower case like every other key of the API,
// and a checkpoint written with the capitalised keys of earlier versions
// still reads back.
func TestCheckPointJSON(t *testing.T) {
	cp := CheckPoint{Estimate: -0.01, Lo: -0.03, Hi: 0.02, Valid: true, Verdict: Inconclusive}
	data, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"estimate":-0.01,"lo":-0.03,"hi":0.02,"valid":true,"verdict":"inconclusive"}`; string(data) != want {
		t.Errorf("CheckPoint JSON %s, want %s", data, want)
	}
	var old CheckPoint
	if err := json.Unmarshal([]byte(`{"Estimate":-0.01,"Lo":-0.03,"Hi":0.02,"Valid":true,"Verdict":"inconclusive"}`), &old); err != nil || old != cp {
		t.Errorf("capitalised CheckPoint read as %+v, %v; want %+v", old, err, cp)
	}
}

// Comparison checks of the ranking means: equal rankings pass, a ranking
// 0.1 worse fails, and a question's runs retrieving alike within a visit
// widen the interval (the variance takes visits as clusters).
func TestRankingComparison(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	sets := map[string][]config.AnalysisCheck{"rank": {
		{Name: "ndcg_at_10", Metric: "ndcg_at_10", Tolerance: 0.05, MinSamples: 100},
		{Name: "mrr", Metric: "mrr", Tolerance: 0.05, MinSamples: 100},
	}}
	// feedRanked adds n ranked events of each arm, the two arms' events
	// in turn: question i%400 (its nDCG and RR a value of its own, the
	// canary's less shift), runs events in a row of one question at once
	// (one visit), half a second between visits.
	feedRanked := func(t *testing.T, m *Manager, n, runs int, shift float64) {
		for i := range n {
			q := (i / runs) % 400
			for _, arm := range []string{"canary", "live"} {
				v := float64(q%10)/10 + 0.05
				if arm == "canary" {
					v = max(0, v-shift)
				}
				o := window.Observation{Arm: arm, QID: fmt.Sprintf("q%d", q), Time: t0.Add(time.Duration(i/runs) * time.Second / 2),
					HasRetrieval: true, PrecisionAtK: make([]float64, len(ks)), Triage: -1, Means: make([]float64, window.MeansLen(len(ks)))}
				o.Counters.Set(window.CountRanked)
				o.Means[window.MeanIndex(window.SumNDCGAtK, 3, len(ks))] = v
				o.Means[window.MeanIndex(window.SumRR, 0, len(ks))] = v
				if err := m.Observe(&o, o.Time); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	run := func(t *testing.T, runs int, shift float64) Result {
		cfg := config.Default().Analysis
		cfg.Checks = sets
		m := NewManager(Options{Config: cfg, Ks: ks, MinRuns: 3})
		if _, _, err := m.Start(StartRequest{ID: "a", Checks: "rank"}, t0); err != nil {
			t.Fatal(err)
		}
		feedRanked(t, m, 8000, runs, shift)
		an, _ := m.Get("a")
		return an.Result()
	}
	if r := run(t, 1, 0); r.Verdict != Pass {
		t.Errorf("equal rankings: %s (%s), want pass", r.Verdict, r.Reason)
	}
	r := run(t, 1, 0.1)
	for _, name := range []string{"ndcg_at_10", "mrr"} {
		if c := checkOf(t, r, name); c.Verdict != Fail {
			t.Errorf("ranking 0.1 worse: %s %s (%s), want fail", name, c.Verdict, c.Reason)
		}
	}
	width := func(r Result) float64 {
		c := checkOf(t, r, "ndcg_at_10")
		if c.Interval == nil {
			t.Fatalf("no interval: %+v", c)
		}
		return c.Interval[1] - c.Interval[0]
	}
	one, four := width(run(t, 1, 0)), width(run(t, 4, 0))
	t.Logf("interval widths: %.4f with 1 run a visit, %.4f with 4", one, four)
	if !(four > 1.5*one) {
		t.Errorf("interval %v with 4 alike runs a visit, %v with 1: the visits do not count", four, one)
	}
}

// recordNow is what Manager.Tick does for an at now, alone.
func recordNow(an *Analysis, now time.Time) (Result, bool) {
	an.mu.Lock()
	defer an.mu.Unlock()
	return an.recordLocked(now, nil)
}
