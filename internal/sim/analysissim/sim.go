// Package analysissim puts the canary judges side by side on generated traffic:
// the same seeded streams of a canary and a live arm go through the
// shipped canary analysis (package sidecar/analysis), the alert gates read
// as a canary verdict, Kayenta's NetflixACAJudge and Flagger's threshold
// analysis, and each judge's verdict is read every 10 s. It measures how
// often a healthy canary is failed and passed, and how fast a worse one is
// failed.
//
// The traffic model is internal/sim/gatesim's (Profile, Healthy); the numbers
// hold for it and are stated with it.
package analysissim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/sim/gatesim"
	"github.com/shadoweval/shadoweval/window"
)

// Traffic is the deployment simulated.
type Traffic struct {
	CanaryRate, LiveRate float64 // events per second
	GoldItems            int
	ReadEvery            time.Duration
	// WarmUp is how long live runs alone before the canary starts, so that
	// the gates' window is full; the analysis, Kayenta and Flagger start
	// with the canary.
	WarmUp time.Duration
}

// DefaultTraffic: 4 canary and 16 live events per second, 300 gold items,
// every verdict read every 10 s, 5 minutes of live traffic first.
var DefaultTraffic = Traffic{CanaryRate: 4, LiveRate: 16, GoldItems: 300, ReadEvery: 10 * time.Second, WarmUp: 5 * time.Minute}

// Scenario is the canary's quality; live is always gatesim.Healthy.
type Scenario struct {
	Name    string
	Canary  Profile
	Bad     bool // the canary should be failed
	Horizon time.Duration
}

// Horizon is how long a bad canary has to be failed, and a healthy one not.
const Horizon = 30 * time.Minute

// PassHorizon is how long a healthy canary has to pass.
const PassHorizon = 60 * time.Minute

// Scenarios: a healthy canary and four worse ones.
func Scenarios() []Scenario {
	h := gatesim.Healthy
	return []Scenario{
		{Name: "healthy", Canary: h, Horizon: PassHorizon},
		{Name: "precision −5 pts", Canary: gatesim.WorsePrecision(h, 0.05), Bad: true, Horizon: Horizon},
		{Name: "precision −10 pts", Canary: gatesim.WorsePrecision(h, 0.10), Bad: true, Horizon: Horizon},
		{Name: "chr −5 pts", Canary: WorseCHR(h, 0.05), Bad: true, Horizon: Horizon},
		{Name: "ΔS p90 +0.05", Canary: WorseDeltaSP90(h, 0.05), Bad: true, Horizon: Horizon},
	}
}

// Judges returns the judges compared: the shipped canary analysis, the
// alert gates as config.DefaultGates has them at run time, their point and
// 0.95-confidence variants (each only when it differs from the shipped
// gates), Kayenta and Flagger.
func Judges(cfg config.Config) []Judge {
	js := []Judge{AnalysisJudge("canary analysis (shipped)", cfg)}
	shipped := config.DefaultGates()
	js = append(js, GatesJudge("alert gates (shipped)", shipped))
	for _, v := range GateVariants() {
		if !reflect.DeepEqual(v.Gates, shipped) {
			js = append(js, GatesJudge("alert gates, "+v.Name, v.Gates))
		}
	}
	js = append(js, KayentaJudge("Kayenta NetflixACAJudge", KayentaMetrics(cfg), KayentaInterval))
	prec := seriesIndex("precision")
	js = append(js,
		FlaggerJudge("Flagger, precision ≥ 0.80", func(c, _ []float64) bool { return c[prec] >= 0.80 }, FlaggerThreshold, FlaggerPromoteAfter),
		FlaggerJudge("Flagger, precision − primary ≥ −0.02", func(c, l []float64) bool { return c[prec]-l[prec] >= -0.02 }, FlaggerThreshold, FlaggerPromoteAfter),
	)
	return js
}

// GateVariants are the shipped gates judged on point values and with
// confidence 0.95 on every proportion gate.
func GateVariants() []gatesim.Variant {
	shipped := config.DefaultGates()
	return []gatesim.Variant{
		{Name: "point", Gates: gatesim.WithConfidence(shipped, 0)},
		{Name: "confidence 0.95", Gates: gatesim.WithConfidence(shipped, 0.95)},
	}
}

// KappaStrictJudge is the canary analysis with κ's tolerance at 0.02, the
// agreement's, instead of the shipped 0.05: not shipped, it shows why κ
// gets its own (κ moves about twice as far as agreement).
func KappaStrictJudge(cfg config.Config) Judge {
	c := cfg
	c.Analysis.Checks = map[string][]config.AnalysisCheck{}
	for name, set := range cfg.Analysis.Checks {
		c.Analysis.Checks[name] = slices.Clone(set)
	}
	for i := range c.Analysis.Checks[config.CanaryCheckSet] {
		if ch := &c.Analysis.Checks[config.CanaryCheckSet][i]; ch.Metric == "kappa" {
			ch.Tolerance = 0.02
		}
	}
	return AnalysisJudge("canary analysis, κ tolerance 0.02 (not shipped)", c)
}

// Kayenta and Flagger settings.
const (
	// KayentaInterval: a canary run every 5 minutes over the data so far.
	KayentaInterval = 5
	// FlaggerThreshold: failed checks before rollback (analysis.threshold).
	FlaggerThreshold = 5
	// FlaggerPromoteAfter: passed checks before promotion (stepWeight 5
	// to maxWeight 50: ten steps).
	FlaggerPromoteAfter = 10
)

// KayentaMetrics is the Kayenta canary config: the metrics of cfg's
// canary check set (those series computes), direction from
// window.LowerIsBetter, precision critical, and the allowed effect (mean
// ratio) set to the check's tolerance relative to the healthy level, so
// that Kayenta tolerates what the analysis tolerates.
func KayentaMetrics(cfg config.Config) []kayentaMetric {
	levels := healthyLevels(cfg)
	var ms []kayentaMetric
	for _, c := range cfg.Analysis.Checks[config.CanaryCheckSet] {
		i := seriesIndex(c.Metric)
		if i < 0 || c.Absolute() {
			continue
		}
		lv := levels[c.Metric]
		ms = append(ms, kayentaMetric{
			index: i, increaseFails: window.LowerIsBetter(c.Metric), critical: c.Metric == "precision",
			allowedIncrease: 1 + c.Tolerance/lv, allowedDecrease: 1 - c.Tolerance/lv,
		})
	}
	return ms
}

// healthyLevels are the metrics of a long healthy stream, and as
// "share:"+metric its samples per event.
func healthyLevels(cfg config.Config) map[string]float64 {
	const n = 100000
	cu := window.NewCumulative(cfg.K, cfg.Lambda.MinRuns)
	rng := rand.New(rand.NewPCG(1, 1))
	g := gatesim.NewGenerator(rng, gatesim.Healthy, 300, len(cfg.K))
	h := gatesim.Healthy
	var o window.Observation
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := cumSink{cu}
	for i := range n {
		if err := event(g, s, "live", &h, t.Add(time.Duration(i)*time.Millisecond), &o); err != nil {
			panic(err)
		}
	}
	out := map[string]float64{}
	for k, v := range cu.Metrics() {
		out[k] = v.Value
		out["share:"+k] = float64(v.Samples) / n
	}
	return out
}

type cumSink struct{ cu *window.Cumulative }

func (s cumSink) observe(o *window.Observation) error  { return s.cu.Add(o) }
func (s cumSink) pair(p *window.PairObservation) error { return s.cu.AddPair(p) }

// env is one run's shared state: every event goes to the judges that want
// it, the gates' window and the per-minute series.
type env struct {
	seed uint64
	t0   time.Time
	cand string // the candidate arm: canary, or shadow

	w            *window.Windows
	feedWindows  bool
	memo         *gatesim.Memo
	canary, live *series
	judges       []judge
}

func (e *env) observe(o *window.Observation) error {
	// The gates' window drops (and would count) what it finds late, as
	// the sidecar's does.
	if e.feedWindows {
		if err := e.w.Add(o, o.Time); err != nil && !errors.Is(err, window.ErrLate) {
			return err
		}
	}
	if o.Time.Before(e.t0) {
		return nil
	}
	e.arm(o.Arm).observe(o)
	for _, j := range e.judges {
		if err := j.observe(o); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) pair(p *window.PairObservation) error {
	if e.feedWindows {
		if err := e.w.AddPair(p, p.Time); err != nil && !errors.Is(err, window.ErrLate) {
			return err
		}
	}
	if p.Time.Before(e.t0) {
		return nil
	}
	e.arm(p.Arm).pair(p)
	for _, j := range e.judges {
		if err := j.pair(p); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) arm(name string) *series {
	if name == e.cand {
		return e.canary
	}
	return e.live
}

// minutes is the number of whole minutes closed since the canary started.
func (e *env) minutes() int { return len(e.canary.values) }

// Outcome is one judge's verdicts in one run.
type Outcome struct {
	// FailAt and PassAt are the first reads that failed and passed (-1:
	// none within the horizon); FailEvents and PassEvents the canary
	// events seen then.
	FailAt, PassAt         time.Duration
	FailEvents, PassEvents int64
	// First is the first verdict that was not inconclusive (the one a
	// rollout acts on), at FirstAt; "" when none.
	First   Verdict
	FirstAt time.Duration
	// LastPassAt is the last read that passed (-1: none).
	LastPassAt time.Duration
}

// Diag is what an analysis judge tells of one run: the checks undecided
// just before it first passed (or at the horizon when it never did), and
// its checks at the horizon.
type Diag struct {
	Blocking []string
	End      []CheckEnd
	// FirstPass and FirstFail are each check's candidate events at its
	// first pass and fail read (absent: none).
	FirstPass, FirstFail map[string]int64
	// Events is the candidate events at the last read.
	Events int64
}

// CheckEnd is one check at the horizon.
type CheckEnd struct {
	Name              string
	Verdict           string
	Estimate, HalfWid float64
	// Best is the estimate the check's sequences are tightest about: the
	// paired one when pairs count, else Estimate.
	Best    float64
	Samples int64
	Pairs   int64
	Metric  string
	Lower   bool    // lower is better
	Limit   float64 // the tolerance
}

// Result is one scenario's outcomes, per judge (Judges order) and run.
type Result struct {
	Scenario Scenario
	Traffic  Traffic
	Judges   []string
	Runs     [][]Outcome // [judge][run]
	Diags    [][]Diag    // [judge][run], analysis judges only
	Elapsed  time.Duration
}

// Run simulates runs deployments of sc, each judged by every judge.
// Runs are spread over at most workers goroutines (GOMAXPROCS when 0); run
// r draws from PCG(seed, r) whatever the worker.
func Run(runs int, seed uint64, tr Traffic, sc Scenario, js []Judge, workers int) (*Result, error) {
	start := time.Now()
	res := &Result{Scenario: sc, Traffic: tr, Runs: make([][]Outcome, len(js)), Diags: make([][]Diag, len(js))}
	err := res.run(runs, js, workers, func(r int) error { return runOne(r, seed, tr, sc, js, res) })
	res.Elapsed = time.Since(start)
	return res, err
}

// run makes room in res for runs runs of every judge of js and does them,
// each a call of one, over at most workers goroutines (GOMAXPROCS when
// 0). It stops at the first error.
func (res *Result) run(runs int, js []Judge, workers int, one func(r int) error) error {
	for i, j := range js {
		res.Judges = append(res.Judges, j.Name)
		res.Runs[i] = make([]Outcome, runs)
		res.Diags[i] = make([]Diag, runs)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu   sync.Mutex
		next int
		err0 error
		wg   sync.WaitGroup
	)
	for range min(workers, runs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				r := next
				next++
				stop := err0 != nil
				mu.Unlock()
				if r >= runs || stop {
					return
				}
				if err := one(r); err != nil {
					mu.Lock()
					err0 = fmt.Errorf("run %d: %w", r, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return err0
}

func runOne(r int, seed uint64, tr Traffic, sc Scenario, js []Judge, res *Result) error {
	cfg := config.Default()
	rng := rand.New(rand.NewPCG(seed, uint64(r)))
	live, canary := gatesim.Healthy, sc.Canary
	g := gatesim.NewGenerator(rng, live, tr.GoldItems, len(cfg.K))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &env{seed: seed<<20 ^ uint64(r), t0: t0, cand: "canary", canary: newSeries(cfg.K, cfg.Lambda.MinRuns), live: newSeries(cfg.K, cfg.Lambda.MinRuns)}
	if err := e.judgeWith(js, cfg); err != nil {
		return err
	}
	out := newOutcomes(len(js))
	var o window.Observation
	liveArm := &armTraffic{arm: "live", rate: tr.LiveRate, p: &live, from: t0.Add(-tr.WarmUp)}
	if tr.WarmUp > 0 {
		if err := traffic(e, g, t0, []*armTraffic{liveArm}, &o); err != nil {
			return err
		}
	}
	canaryArm := &armTraffic{arm: "canary", rate: tr.CanaryRate, p: &canary, from: t0}
	arms := []*armTraffic{liveArm, canaryArm}
	// A judge is done once nothing it could still say is counted: a fail
	// after Horizon, or anything after its fail in a bad scenario, after
	// its pass in a healthy one. The windows stop when the gates are done.
	done := make([]bool, len(js))
	for at := tr.ReadEvery; at <= sc.Horizon; at += tr.ReadEvery {
		now := t0.Add(at)
		if err := traffic(e, g, now, arms, &o); err != nil {
			return err
		}
		decided := func(oc *Outcome, diag bool) bool {
			if sc.Bad {
				return oc.FailAt >= 0
			}
			return oc.PassAt >= 0 && at >= Horizon && !diag
		}
		if e.readJudges(now, at, Horizon, canaryArm.n, js, out, done, decided) {
			break
		}
	}
	res.store(r, e, out)
	return nil
}

// readJudges closes the windows' minutes up to at and reads every judge
// not yet done, recording into out when it first fails (within failBy),
// passes and decides; candEvents is how many events the candidate has had.
// decided says whether a judge is done after this read. It reports whether
// every judge is done, and stops feeding the windows once every gate is.
func (e *env) readJudges(now time.Time, at, failBy time.Duration, candEvents int64, js []Judge, out []Outcome, done []bool, decided func(oc *Outcome, diag bool) bool) bool {
	for e.minutes() < int(at/time.Minute) {
		e.canary.close()
		e.live.close()
	}
	all, gatesDone := true, true
	for i, j := range e.judges {
		if done[i] {
			continue
		}
		v := j.read(e, now)
		oc := &out[i]
		switch {
		case v == Fail && oc.FailAt < 0 && at <= failBy:
			oc.FailAt, oc.FailEvents = at, candEvents
		case v == Pass && oc.PassAt < 0:
			oc.PassAt, oc.PassEvents = at, candEvents
		}
		if v != Inconclusive && oc.First == "" {
			oc.First, oc.FirstAt = v, at
		}
		if v == Pass {
			oc.LastPassAt = at
		}
		_, diag := j.(*analysisJudge)
		done[i] = decided(oc, diag)
		all = all && done[i]
		gatesDone = gatesDone && (done[i] || !js[i].gates)
	}
	e.feedWindows = !gatesDone
	return all
}

// judgeWith sets e up for the judges js: the gates' window when a judge
// reads it, then each judge.
func (e *env) judgeWith(js []Judge, cfg config.Config) error {
	for _, j := range js {
		if j.gates && e.w == nil {
			w, err := window.New(window.Config{Windows: []window.Spec{gateWindow}, Ks: cfg.K, LambdaMinRuns: cfg.Lambda.MinRuns})
			if err != nil {
				return err
			}
			e.w, e.memo, e.feedWindows = w, gatesim.NewMemo(w), true
		}
	}
	for _, j := range js {
		jj, err := j.make(e)
		if err != nil {
			return err
		}
		e.judges = append(e.judges, jj)
	}
	return nil
}

// newOutcomes are n judges' outcomes before anything is decided.
func newOutcomes(n int) []Outcome {
	out := make([]Outcome, n)
	for i := range out {
		out[i] = Outcome{FailAt: -1, PassAt: -1, FailEvents: -1, PassEvents: -1, FirstAt: -1, LastPassAt: -1}
	}
	return out
}

// store keeps run r's outcomes and the analysis judges' diagnostics.
func (res *Result) store(r int, e *env, out []Outcome) {
	for i, j := range e.judges {
		res.Runs[i][r] = out[i]
		if d, ok := j.(*analysisJudge); ok {
			res.Diags[i][r] = d.summary()
		}
	}
}
