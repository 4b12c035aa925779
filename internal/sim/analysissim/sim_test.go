package analysissim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/sim/gatesim"
	"github.com/shadoweval/shadoweval/internal/sim/testbed"
	"github.com/shadoweval/shadoweval/window"
)

// The shipped analysis never fails a healthy canary and always fails a
// 10-point precision drop, fast. A quick version of TestSimulation.
func TestAnalysisQuick(t *testing.T) {
	runs := 20
	if raceEnabled || testing.Short() {
		runs = 4
	}
	cfg := config.Default()
	js := []Judge{AnalysisJudge("canary analysis", cfg)}
	healthy := Scenarios()[0]
	healthy.Horizon = Horizon
	res, err := Run(runs, 1, DefaultTraffic, healthy, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	for r, o := range res.Runs[0] {
		if o.FailAt >= 0 {
			t.Errorf("healthy run %d failed at %s (%d canary events)", r, o.FailAt, o.FailEvents)
		}
	}
	worse := Scenarios()[2] // precision −10 pts
	res, err = Run(runs, 2, DefaultTraffic, worse, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ev []float64
	for r, o := range res.Runs[0] {
		if o.FailAt < 0 {
			t.Errorf("%s: run %d not failed within %s", worse.Name, r, worse.Horizon)
		}
		if o.First == Pass {
			t.Errorf("%s: run %d passed first", worse.Name, r)
		}
		ev = append(ev, events(o.FailEvents))
	}
	if m := median(ev); m > 1500 {
		t.Errorf("%s: median %v canary events to fail, want ≤ 1500", worse.Name, m)
	}
}

// TestSimulation prints every judge on every scenario. The quick default
// checks that it runs; the full one, whose table is in BENCHMARKS.md, runs
// with
//
//	SHADOWEVAL_SIM=1 go test -run TestSimulation -v -timeout 60m ./internal/sim/analysissim
func TestSimulation(t *testing.T) {
	healthyRuns, badRuns, full := simRuns(t, 2, 1, "TestAnalysisQuick")
	cfg := config.Default()
	js := append(Judges(cfg), KappaStrictJudge(cfg))
	tr := DefaultTraffic
	lv := healthyLevels(cfg)
	t.Logf("traffic: %g canary + %g live events/s, %d gold items, every verdict read every %s; live alone for %s first (the gates' window)",
		tr.CanaryRate, tr.LiveRate, tr.GoldItems, tr.ReadEvery, tr.WarmUp)
	t.Logf("healthy arm (gatesim.Healthy): precision %.3f, chr %.3f, under_refusal %.3f, agreement %.3f, kappa %.3f, ΔS median %.3f p90 %.3f; analysis alpha %g",
		lv["precision"], lv["chr"], lv["under_refusal"], lv["agreement"], lv["kappa"], lv["delta_s_median"], lv["delta_s_p90"], cfg.Analysis.Alpha)
	for _, v := range GateVariants() {
		if reflect.DeepEqual(v.Gates, config.DefaultGates()) {
			t.Logf("alert gates (shipped) = config.DefaultGates() now = the %s variant, not repeated", v.Name)
		}
	}
	t.Log("Kayenta canary config:\n" + FormatKayenta(cfg))
	scs := Scenarios()
	var all []Summary
	var healthy *Result
	for _, res := range runScenarios(t, len(scs), healthyRuns, badRuns,
		func(i int) bool { return scs[i].Bad },
		func(i, runs int) (*Result, error) { return Run(runs, uint64(100+i), tr, scs[i], js, 2) }) {
		all = append(all, Summarize(res)...)
		if !res.Scenario.Bad {
			healthy = res
		}
	}
	t.Log("\n" + FormatTable(all, tr.CanaryRate))
	t.Log("\n" + FormatMatrix(all))
	t.Log("healthy canary, shipped analysis: the checks that passed last and each check at 60 min\n" + FormatDiag(healthy, 0))
	t.Log("healthy canary, κ tolerance 0.02:\n" + FormatDiag(healthy, len(js)-1))
	t.Log("tuning constants:\n" + PlanSensitivity(cfg, tr))

	ours := js[0].Name
	if d := Dominated(all, ours); len(d) > 0 {
		t.Logf("DOMINANCE: lower healthy false failure and higher detection than %s: %s", ours, strings.Join(d, "; "))
	} else {
		t.Logf("dominance: no judge has both a lower healthy false failure rate and a higher detection rate than %s", ours)
	}
	for _, s := range all {
		if s.Judge != ours {
			continue
		}
		rate := float64(s.EverFailed) / float64(s.Runs)
		switch {
		case !s.Bad:
			if rate > cfg.Analysis.Alpha && full {
				t.Errorf("healthy canary failed in %.2f %% of runs, above alpha", 100*rate)
			}
			t.Logf("target healthy passed ≤ 60 min ≥ 70 %%: %s", pct(s.Passed, s.Runs))
		case s.Scenario == "precision −5 pts":
			t.Logf("target −5 pts failed ≥ 90 %%, median ≤ 4500 events: %s, %.0f", pct(s.EverFailed, s.Runs), s.EventsToFail)
		case s.Scenario == "precision −10 pts":
			t.Logf("target −10 pts median ≤ 1500 events: %.0f", s.EventsToFail)
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestWorseProfiles(t *testing.T) {
	h := gatesim.Healthy
	w := WorseCHR(h, 0.05)
	if d := h.CHR*h.Contained - w.CHR*w.Contained; math.Abs(d-0.05*h.Contained) > 1e-12 || w.Contained != h.Contained {
		t.Errorf("WorseCHR: precision drop %v, containment %v", d, w.Contained)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var xs []float64
	p := WorseDeltaSP90(h, 0.05)
	g := gatesim.NewGenerator(rng, p, 300, 4)
	var o window.Observation
	var pair window.PairObservation
	for len(xs) < 200000 {
		if g.Draw("canary", &p, time.Time{}, &o, &pair); o.HasDeltaSCited {
			xs = append(xs, o.DeltaSCited)
		}
	}
	slices.Sort(xs)
	if m, q := interp(xs, 0.5), interp(xs, 0.9); math.Abs(m-h.DeltaSMedian) > 0.003 || math.Abs(q-h.DeltaSP90-0.05) > 0.003 {
		t.Errorf("WorseDeltaSP90: median %v p90 %v", m, q)
	}
}

// The per-minute series use the windows' formulas: over the same events
// they equal a window.Cumulative's metrics (λ aside, cut differently).
func TestSeriesMatchesCumulative(t *testing.T) {
	cfg := config.Default()
	rng := rand.New(rand.NewPCG(9, 9))
	h := gatesim.Healthy
	g := gatesim.NewGenerator(rng, h, 300, len(cfg.K))
	cu := window.NewCumulative(cfg.K, cfg.Lambda.MinRuns)
	s := newSeries(cfg.K, cfg.Lambda.MinRuns)
	both := bothSink{cu, s}
	var o window.Observation
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		if err := event(g, both, "live", &h, t0.Add(time.Duration(i)*time.Millisecond), &o); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	m := cu.Metrics()
	for i, name := range seriesMetrics {
		want, got := m[name].Value, s.values[0][i]
		tol := 1e-12
		switch name {
		case "lambda_convergence":
			continue
		case "delta_s_median", "delta_s_p90":
			tol = 0.01 * want // the sketch's relative accuracy
		}
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %v, Cumulative says %v", name, got, want)
		}
	}
}

type bothSink struct {
	cu *window.Cumulative
	s  *series
}

func (b bothSink) observe(o *window.Observation) error {
	b.s.observe(o)
	return b.cu.Add(o)
}

func (b bothSink) pair(p *window.PairObservation) error {
	b.s.pair(p)
	return b.cu.AddPair(p)
}

func TestMannWhitney(t *testing.T) {
	// x = y + 5: the Hodges-Lehmann estimate is the shift.
	var x, y []float64
	for i := range 10 {
		y = append(y, float64(i+1))
		x = append(x, float64(i+6))
	}
	lo, hi, est, ok := mannWhitney(x, y, 0.98)
	if !ok || math.Abs(est-5) > 1e-6 || !(lo < 5 && 5 < hi) || lo <= 0 {
		t.Errorf("shift 5: [%v, %v] estimate %v ok %v", lo, hi, est, ok)
	}
	// Two samples of one distribution: the 98 % interval holds 0 about
	// 98 % of the time.
	rng := rand.New(rand.NewPCG(4, 4))
	const trials = 2000
	covered := 0
	for range trials {
		a, b := make([]float64, 20), make([]float64, 30)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		slices.Sort(a)
		slices.Sort(b)
		lo, hi, _, _ := mannWhitney(a, b, 0.98)
		if lo <= 0 && 0 <= hi {
			covered++
		}
	}
	if c := float64(covered) / trials; c < 0.97 || c > 0.995 {
		t.Errorf("98 %% interval covered 0 in %.3f of trials", c)
	}
}

func TestKayentaScore(t *testing.T) {
	labels := func(pass, low, nodata int) []mwLabel {
		var ls []mwLabel
		for range pass {
			ls = append(ls, mwPass)
		}
		for range low {
			ls = append(ls, mwLow)
		}
		for range nodata {
			ls = append(ls, mwNodata)
		}
		return ls
	}
	for _, c := range []struct {
		ls   []mwLabel
		crit bool
		want float64
		v    Verdict
	}{
		{labels(12, 0, 0), false, 100, Pass},
		{labels(11, 1, 0), false, 91.67, Inconclusive},
		// Exactly marginal: Orca ends the canary (not above marginal).
		{labels(9, 3, 0), false, 75, Fail},
		{labels(8, 4, 0), false, 66.67, Fail},
		{labels(12, 0, 0), true, 0, Fail},
		{labels(6, 0, 6), false, 0, Fail},
		{labels(7, 0, 5), false, 100, Pass},
	} {
		if s := kayentaScore(c.ls, c.crit); s != c.want || kayentaVerdict(s) != c.v {
			t.Errorf("%v critical %v: score %v (%s), want %v (%s)", c.ls, c.crit, s, kayentaVerdict(s), c.want, c.v)
		}
	}
	// A critical metric well below the baseline fails; one inside the
	// allowed effect passes.
	m := kayentaMetric{index: 0, critical: true, allowedIncrease: 1.02, allowedDecrease: 0.98}
	base := []float64{0.88, 0.87, 0.89, 0.88, 0.90, 0.86, 0.88, 0.89}
	low, near := make([]float64, len(base)), make([]float64, len(base))
	for i, v := range base {
		low[i], near[i] = v-0.05, v-0.01
	}
	slices.Sort(base)
	slices.Sort(low)
	slices.Sort(near)
	if l, crit := m.classify(base, low, nil); l != mwLow || !crit {
		t.Errorf("5 points lower: %v critical %v", l, crit)
	}
	if l, crit := m.classify(base, near, nil); l != mwPass || crit {
		t.Errorf("1 point lower: %v critical %v", l, crit)
	}
}

func TestFlagger(t *testing.T) {
	e := &env{canary: newSeries(config.Default().K, 3), live: newSeries(config.Default().K, 3)}
	prec := seriesIndex("precision")
	f := FlaggerJudge("f", func(c, _ []float64) bool { return c[prec] >= 0.8 }, 5, 10)
	j, _ := f.make(e)
	minute := func(p float64) {
		v := make([]float64, len(seriesMetrics))
		v[prec] = p
		e.canary.values = append(e.canary.values, v)
		e.live.values = append(e.live.values, v)
	}
	// 4 failed checks, then 9 passed: still running; the 10th promotes.
	for range 4 {
		minute(0.7)
	}
	for range 9 {
		minute(0.9)
	}
	if v := j.read(e, time.Time{}); v != Inconclusive {
		t.Fatalf("after 4 failed and 9 passed checks: %s", v)
	}
	minute(0.9)
	if v := j.read(e, time.Time{}); v != Pass {
		t.Fatalf("after 10 passed checks: %s", v)
	}
	// Failed checks accumulate: the 5th rolls back.
	j, _ = f.make(e)
	e.canary.values, e.live.values = nil, nil
	for _, p := range []float64{0.7, 0.9, 0.7, 0.9, 0.7, 0.9, 0.7, 0.9, 0.7} {
		minute(p)
	}
	if v := j.read(e, time.Time{}); v != Fail {
		t.Fatalf("after 5 failed checks: %s", v)
	}
}

// On the realistic testbed, through the decoders, joiner and checks: a
// canary with the live index is never failed, a 10-point worse one always
// is, first; a shadow arm's checks are paired by request. A quick version
// of TestRealistic.
func TestRealisticQuick(t *testing.T) {
	runs := 4
	if raceEnabled || testing.Short() {
		runs = 2
	}
	cfg := config.Default()
	js := []Judge{AnalysisJudge("canary analysis", cfg)}
	scs := RealScenarios()
	identical, shadow, worse := scs[0], scs[2], scs[6]
	identical.Horizon, shadow.Horizon = 20*time.Minute, 10*time.Minute
	res, err := RunReal(runs, 1, DefaultRealTraffic, identical, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	for r, o := range res.Runs[0] {
		if o.FailAt >= 0 {
			t.Errorf("identical run %d failed at %s", r, o.FailAt)
		}
	}
	res, err = RunReal(runs, 2, DefaultRealTraffic, worse, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	for r, o := range res.Runs[0] {
		if o.FailAt < 0 || o.First != Fail {
			t.Errorf("%s: run %d: first verdict %q, failed at %s", worse.Name, r, o.First, o.FailAt)
		}
	}
	res, err = RunReal(1, 3, DefaultRealTraffic, shadow, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	byRequest := 0
	for _, c := range res.Diags[0][0].End {
		if c.Pairs > 0 {
			byRequest++
		}
	}
	if byRequest < 8 {
		t.Errorf("shadow: %d checks paired, want the 10 per-event, λ and judgement checks: %+v", byRequest, res.Diags[0][0].End)
	}
}

// TestRealistic prints every judge on every scenario of the realistic
// testbed, and the candidate events each check of the analysis needs. The
// quick default checks that it runs; the full one, whose tables are in
// BENCHMARKS.md and the README, runs with
//
//	SHADOWEVAL_SIM=1 go test -run 'TestRealistic$' -v -timeout 180m ./internal/sim/analysissim
func TestRealistic(t *testing.T) {
	healthyRuns, badRuns, _ := simRuns(t, 1, 1, "TestRealisticQuick")
	cfg := config.Default()
	js := Judges(cfg)
	tr := DefaultRealTraffic
	world := testbed.NewWorld(tr.Params, 1)
	live := world.NewIndex(1)
	t.Logf("traffic: canary %g runs/s, live %g/s (a shadow answers every live run), read every %s, live alone for %s first; %d questions, visits of %d paraphrases × %d seeds, %.0f %% with λ states, %.0f %% judged; awkward: %+v",
		tr.CanaryRate, tr.LiveRate, tr.ReadEvery, tr.WarmUp, tr.Params.Questions, tr.Shape.Paraphrases, tr.Shape.Seeds, 100*tr.Shape.LambdaStates, 100*tr.Shape.Judged, tr.Shape.Awkward)
	t.Logf("an index of the default model, expected: %+v", live.Expected())
	for _, sc := range RealScenarios() {
		if sc.Candidate == "canary" {
			t.Logf("%s: candidate index expected %+v", sc.Name, sc.Index(live, 2).Expected())
		}
	}
	scs := RealScenarios()
	results := runScenarios(t, len(scs), healthyRuns, badRuns,
		func(i int) bool { return scs[i].Bad },
		func(i, runs int) (*Result, error) { return RunReal(runs, uint64(200+i), tr, scs[i], js, 2) })
	var all []RealSummary
	for _, res := range results {
		all = append(all, SummarizeReal(res)...)
	}
	t.Log("\n" + FormatReal(all))
	t.Log("candidate events each check of the shipped analysis needs, median:\n" + FormatChecksNeeded(results, 0))
	t.Log("the fewest candidate events any test could decide each check with, and the analysis' median:\n" + FormatFloor(results, 0, cfg.Analysis.Alpha))
	t.Log("identical canary, shipped analysis: the checks that passed last and each check at 60 min\n" + FormatDiag(results[0], 0))
	ours := js[0].Name
	var healthy, bad []RealSummary
	for _, s := range all {
		if s.Bad {
			bad = append(bad, s)
		} else {
			healthy = append(healthy, s)
		}
	}
	for _, s := range bad {
		if s.Judge == ours {
			continue
		}
		for _, h := range healthy {
			if h.Judge != s.Judge || h.Scenario != "identical" {
				continue
			}
			var oursBad, oursHealthy RealSummary
			for _, o := range all {
				if o.Judge == ours && o.Scenario == s.Scenario {
					oursBad = o
				}
				if o.Judge == ours && o.Scenario == "identical" {
					oursHealthy = o
				}
			}
			if h.EverFailed*oursHealthy.Runs < oursHealthy.EverFailed*h.Runs && s.EverFailed*oursBad.Runs > oursBad.EverFailed*s.Runs {
				t.Logf("DOMINANCE: %s fails the identical canary less often and %s more often than %s", s.Judge, s.Scenario, ours)
			}
		}
	}
}

// TestRealisticCoverage judges each check of the canary set alone, at
// tolerance 0, on the realistic testbed's identical canary, whose true
// difference is exactly 0 on every metric: a fail is then the failing
// side of the check's interval missing the truth, a pass its passing side
// missing it, and each may happen in at most α of the runs, however often
// the verdict is read (every 10 s for 30 minutes). α is 0.05 so that
// misses could be seen; the quick default runs 8 streams, enough to catch
// a sequence that misses in a large share of them (as order statistics
// taking a visit's repeated values as independent did); the full one,
//
//	SHADOWEVAL_SIM=1 go test -run 'TestRealisticCoverage$' -v -timeout 60m ./internal/sim/analysissim
//
// runs 400, its rates in BENCHMARKS.md.
func TestRealisticCoverage(t *testing.T) {
	runs := 8
	switch {
	case os.Getenv("SHADOWEVAL_SIM") != "":
		runs = 400
	case raceEnabled || testing.Short():
		t.Skip("a simulation: slow under the race detector")
	}
	const alpha = 0.05
	var js []Judge
	var names []string
	for _, c := range config.DefaultCheckSets()[config.CanaryCheckSet] {
		cfg := config.Default()
		cfg.Analysis.Alpha = alpha
		c.Tolerance = 0
		cfg.Analysis.Checks[config.CanaryCheckSet] = []config.AnalysisCheck{c}
		js = append(js, AnalysisJudge(c.Name, cfg))
		names = append(names, c.Name)
	}
	sc := RealScenarios()[0]
	sc.Horizon = 30 * time.Minute
	res, err := RunReal(runs, 7, DefaultRealTraffic, sc, js, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("identical canary, each check alone at tolerance 0, α = %g, %d runs of %s:\n%s", alpha, runs, sc.Horizon, coverageTable(t, res, names, alpha))
}

// coverageTable checks that neither side of any judge of res, run on a
// true difference of 0, missed it in more than α of the runs (allowing 3
// standard errors), and tabulates how often each side did.
func coverageTable(t *testing.T, res *Result, names []string, alpha float64) string {
	t.Helper()
	runs := len(res.Runs[0])
	limit := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(runs))
	var b strings.Builder
	b.WriteString("| check | failing side missed (ever failed) | passing side missed (ever passed) |\n|---|---:|---:|\n")
	for i, name := range names {
		var fails, passes int
		for _, o := range res.Runs[i] {
			if o.FailAt >= 0 {
				fails++
			}
			if o.PassAt >= 0 {
				passes++
			}
		}
		fmt.Fprintf(&b, "| %s | %d of %d | %d of %d |\n", name, fails, runs, passes, runs)
		for what, k := range map[string]int{"failing": fails, "passing": passes} {
			if rate := float64(k) / float64(runs); rate > limit {
				t.Errorf("%s: the %s side missed the true difference 0 in %d of %d runs (%.3f > %.3f)", name, what, k, runs, rate, limit)
			}
		}
	}
	return b.String()
}

// simRuns is how many runs a simulation gives each healthy and each bad
// scenario: healthy and bad by default, 1,000 and 200 with SHADOWEVAL_SIM
// set (full), or those SHADOWEVAL_SIM_RUNS=healthy,bad names. The default
// skips under the race detector and -short, where quickTest runs instead.
func simRuns(t *testing.T, healthy, bad int, quickTest string) (healthyRuns, badRuns int, full bool) {
	t.Helper()
	full = os.Getenv("SHADOWEVAL_SIM") != ""
	switch {
	case full:
		healthy, bad = 1000, 200
	case raceEnabled || testing.Short():
		t.Skip("the quick runs are " + quickTest + "'s")
	}
	if v := os.Getenv("SHADOWEVAL_SIM_RUNS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d", &healthy, &bad); err != nil {
			t.Fatalf("SHADOWEVAL_SIM_RUNS=%q: want healthy,bad: %v", v, err)
		}
	}
	return healthy, bad, full
}

// runScenarios runs each of n scenarios with run, healthyRuns times or
// badRuns times as bad tells, logging the time each and all of them took.
func runScenarios(t *testing.T, n, healthyRuns, badRuns int, bad func(i int) bool, run func(i, runs int) (*Result, error)) []*Result {
	t.Helper()
	cpu0, wall0 := cpuTime(), time.Now()
	results := make([]*Result, n)
	for i := range n {
		runs := healthyRuns
		if bad(i) {
			runs = badRuns
		}
		c0 := cpuTime()
		res, err := run(i, runs)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d runs of %s in %s (%s CPU)", res.Scenario.Name, runs, res.Scenario.Horizon, res.Elapsed.Round(time.Millisecond), (cpuTime() - c0).Round(time.Millisecond))
		results[i] = res
	}
	t.Logf("total %s wall, %s CPU", time.Since(wall0).Round(time.Second), (cpuTime() - cpu0).Round(time.Second))
	return results
}

// TestRealisticRankingChecks: comparison checks of the ranking metrics,
// which no shipped set names, each alone. On the identical canary at
// tolerance 0 (true difference 0), neither side of any of them misses 0
// in more than α of the runs, although a question's repeated runs
// retrieve alike (the means' variance takes visits as clusters); on an
// index whose retrieval is 10 points worse, each fails. The full run,
//
//	SHADOWEVAL_SIM=1 go test -run 'TestRealisticRankingChecks$' -v -timeout 60m ./internal/sim/analysissim
//
// runs 400 identical canaries.
func TestRealisticRankingChecks(t *testing.T) {
	runs, bad := 8, 4
	switch {
	case os.Getenv("SHADOWEVAL_SIM") != "":
		runs, bad = 400, 40
	case raceEnabled || testing.Short():
		t.Skip("a simulation: slow under the race detector")
	}
	const alpha = 0.05
	// hit_at_5: a worse retrieval of the testbed puts the gold ids 6th.
	metrics := []string{"ndcg_at_10", "map_at_10", "hit_at_5", "mrr", "r_precision"}
	judges := func(tolerance float64) []Judge {
		var js []Judge
		for _, m := range metrics {
			cfg := config.Default()
			cfg.Analysis.Alpha = alpha
			cfg.Analysis.Checks[config.CanaryCheckSet] = []config.AnalysisCheck{{Name: m, Metric: m, Tolerance: tolerance, MinSamples: 100}}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			js = append(js, AnalysisJudge(m, cfg))
		}
		return js
	}
	sc := RealScenarios()[0]
	sc.Horizon = 30 * time.Minute
	res, err := RunReal(runs, 11, DefaultRealTraffic, sc, judges(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("identical canary, each ranking check alone at tolerance 0, α = %g, %d runs of %s:\n%s", alpha, runs, sc.Horizon, coverageTable(t, res, metrics, alpha))

	var worse RealScenario
	for _, s := range RealScenarios() {
		if s.Name == "precision −10 pts" {
			worse = s
		}
	}
	res, err = RunReal(bad, 13, DefaultRealTraffic, worse, judges(0.02), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range metrics {
		for r, o := range res.Runs[i] {
			if o.First != Fail {
				t.Errorf("%s, retrieval 10 points worse, run %d: first verdict %q at %v, want fail", name, r, o.First, o.FirstAt)
			} else if r == 0 {
				t.Logf("%s, retrieval 10 points worse: fails after %v (%d canary events)", name, o.FirstAt, o.FailEvents)
			}
		}
	}
}

// TestRealisticDegrade: a canary on live's index whose analysis has had
// time to pass, whose index then loses 10 points of precision, as a
// deployment that changes under its analysis (a config push, a
// re-index). The verdict must not keep the pass the analysis reached
// before: every run fails after the change, within 15 minutes of it, and
// reads pass at most 8 minutes after it (an analysis weighs everything
// since its start: 25 minutes of a healthy canary take that long to
// outweigh). The canary takes live's 16 runs a second, so that most runs
// pass before the change (a canary at a fifth of live's traffic passes in
// about 45 minutes). The full run, whose figures are in BENCHMARKS.md, is
//
//	SHADOWEVAL_SIM=1 go test -run 'TestRealisticDegrade$' -v ./internal/sim/analysissim
func TestRealisticDegrade(t *testing.T) {
	_, runs, _ := simRuns(t, 4, 4, "TestRealisticQuick")
	const degradeAt = 25 * time.Minute
	cfg := config.Default()
	js := Judges(cfg)[:1]
	tr := DefaultRealTraffic
	tr.CanaryRate = tr.LiveRate
	sc := RealScenario{Name: "identical, then 10 points worse at 25 min", Candidate: "canary", Bad: true, Horizon: 60 * time.Minute,
		Index:     func(live *testbed.Index, _ uint64) *testbed.Index { return live },
		DegradeAt: degradeAt, Degraded: func(live *testbed.Index, seed uint64) *testbed.Index { return live.Worse(0.10, seed) }}
	res, err := RunReal(runs, 400, tr, sc, js, 2)
	if err != nil {
		t.Fatal(err)
	}
	var passedBefore int
	var toFail, passedAfter []time.Duration
	for r, oc := range res.Runs[0] {
		if oc.PassAt >= 0 && oc.PassAt <= degradeAt {
			passedBefore++
		}
		if oc.FailAt < 0 {
			t.Errorf("run %d: never failed in %s (last pass at %s)", r, sc.Horizon, oc.LastPassAt)
			continue
		}
		if oc.FailAt <= degradeAt {
			t.Errorf("run %d: failed at %s, before the change", r, oc.FailAt)
			continue
		}
		toFail = append(toFail, oc.FailAt-degradeAt)
		if oc.LastPassAt > degradeAt {
			passedAfter = append(passedAfter, oc.LastPassAt-degradeAt)
		}
	}
	slices.Sort(toFail)
	slices.Sort(passedAfter)
	t.Logf("%d runs: %d passed before the change; failed after it in %v; read pass after it in %d runs, the last %v after", runs, passedBefore, toFail, len(passedAfter), passedAfter)
	if passedBefore == 0 {
		t.Error("no run passed before the change: the fixture tests nothing")
	}
	if len(toFail) > 0 && toFail[len(toFail)-1] > 15*time.Minute {
		t.Errorf("the slowest fail came %s after the change, want at most 15m", toFail[len(toFail)-1])
	}
	if len(passedAfter) > 0 && passedAfter[len(passedAfter)-1] > 8*time.Minute {
		t.Errorf("a run read pass %s after the change, want at most 8m", passedAfter[len(passedAfter)-1])
	}
}
