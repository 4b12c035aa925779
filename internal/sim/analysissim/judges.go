package analysissim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/window"
)

// Verdict is a judge's answer at one read: an analysis verdict, never
// analysis.NoData.
type Verdict = analysis.Verdict

// Verdicts.
const (
	Pass         = analysis.Pass
	Fail         = analysis.Fail
	Inconclusive = analysis.Inconclusive
)

// judge is one judge in one run. observe and pair see every event of both
// arms from the canary's start; read is called every Traffic.ReadEvery.
type judge interface {
	observe(o *window.Observation) error
	pair(p *window.PairObservation) error
	read(e *env, now time.Time) Verdict
}

// Judge names a judge and makes it for one run.
type Judge struct {
	Name string
	make func(e *env) (judge, error)
	// gates: the run keeps a 5m window for it.
	gates bool
}

// noEvents is for judges that read the run's shared state only.
type noEvents struct{}

func (noEvents) observe(*window.Observation) error  { return nil }
func (noEvents) pair(*window.PairObservation) error { return nil }

// AnalysisJudge is a canary analysis (package sidecar/analysis) with the
// check set "canary" of cfg, started when the canary starts.
func AnalysisJudge(name string, cfg config.Config) Judge {
	return Judge{Name: name, make: func(e *env) (judge, error) {
		m := analysis.NewManager(analysis.Options{Config: cfg.Analysis, Ks: cfg.K, MinRuns: cfg.Lambda.MinRuns})
		if _, _, err := m.Start(analysis.StartRequest{ID: "sim", Arm: e.cand, Baseline: "live", Checks: config.CanaryCheckSet}, e.t0); err != nil {
			return nil, err
		}
		an, _ := m.Get("sim")
		return &analysisJudge{m: m, an: an, firstPass: map[string]int64{}, firstFail: map[string]int64{}}, nil
	}}
}

type analysisJudge struct {
	m  *analysis.Manager
	an *analysis.Analysis
	// undecided holds the checks not passing at the last read; blocking
	// those of the read before the first pass (or of the last read).
	undecided []string
	blocking  []string
	passed    bool
	last      analysis.Result
	// firstPass and firstFail are each check's candidate events at its
	// first pass and fail read.
	firstPass, firstFail map[string]int64
}

func (a *analysisJudge) observe(o *window.Observation) error { return a.m.Observe(o, o.Time) }
func (a *analysisJudge) pair(p *window.PairObservation) error {
	return a.m.ObservePair(p, p.Time)
}

func (a *analysisJudge) read(_ *env, _ time.Time) Verdict {
	r := a.an.Result()
	a.last = r
	if r.Verdict == analysis.Pass && !a.passed {
		a.passed = true
		a.blocking = slices.Clone(a.undecided)
	}
	a.undecided = a.undecided[:0]
	for _, c := range r.Checks {
		if c.Verdict != analysis.Pass && c.Verdict != analysis.NoData {
			a.undecided = append(a.undecided, c.Name)
		}
		first := map[analysis.Verdict]map[string]int64{analysis.Pass: a.firstPass, analysis.Fail: a.firstFail}[c.Verdict]
		if _, seen := first[c.Name]; first != nil && !seen {
			first[c.Name] = r.Events.Arm
		}
	}
	switch r.Verdict {
	case analysis.Pass:
		return Pass
	case analysis.Fail:
		return Fail
	}
	return Inconclusive
}

// summary is the run's Diag: the checks that passed last (or never
// passed), and the checks at the last read.
func (a *analysisJudge) summary() Diag {
	blocking, end := a.blocking, a.last.Checks
	if !a.passed {
		blocking = slices.Clone(a.undecided)
	}
	ce := make([]CheckEnd, len(end))
	for k, c := range end {
		ce[k] = CheckEnd{Name: c.Name, Verdict: string(c.Verdict), Estimate: math.NaN(), HalfWid: math.NaN(), Best: math.NaN(),
			Samples: min(c.Samples.Arm, c.Samples.Baseline), Pairs: c.Pairs, Metric: c.Metric, Lower: c.LowerIsBetter, Limit: c.Tolerance}
		if c.Estimate != nil && c.Interval != nil {
			ce[k].Estimate, ce[k].HalfWid, ce[k].Best = *c.Estimate, (c.Interval[1]-c.Interval[0])/2, *c.Estimate
		}
		if c.PairedEstimate != nil {
			ce[k].Best = *c.PairedEstimate
		}
	}
	return Diag{Blocking: blocking, End: ce, FirstPass: a.firstPass, FirstFail: a.firstFail, Events: a.last.Events.Arm}
}

// GatesJudge is the alert gates' verdict for arm canary over the 5m window
// (gates.Engine.Verdict), evaluated at every read.
func GatesJudge(name string, gs []config.Gate) Judge {
	return Judge{Name: name, gates: true, make: func(e *env) (judge, error) {
		return &gatesJudge{e: gates.New(gs, e.memo)}, nil
	}}
}

type gatesJudge struct {
	noEvents
	e *gates.Engine
}

func (g *gatesJudge) read(e *env, now time.Time) Verdict {
	g.e.Evaluate(now.Add(-time.Nanosecond))
	v, _ := g.e.Verdict(e.cand, gateWindow.Name)
	switch v {
	case gates.VerdictPass:
		return Pass
	case gates.VerdictFail:
		return Fail
	}
	return Inconclusive
}

// KayentaJudge runs NetflixACAJudge on the 1-minute data points of
// metrics every interval minutes, over all the points since the canary
// started. A run scoring below marginal fails; one at pass or above passes.
func KayentaJudge(name string, metrics []kayentaMetric, interval int) Judge {
	return Judge{Name: name, make: func(e *env) (judge, error) {
		return &kayentaRun{k: kayentaJudge{metrics: metrics, interval: interval, rng: rand.New(rand.NewPCG(e.seed, 0x6b61))}, last: Inconclusive}, nil
	}}
}

type kayentaRun struct {
	noEvents
	k    kayentaJudge
	done int // minutes judged
	last Verdict
}

func (k *kayentaRun) read(e *env, _ time.Time) Verdict {
	if n := e.minutes(); n >= k.done+k.k.interval {
		k.done = n
		k.last = k.k.judge(e.canary, e.live, n)
	}
	return k.last
}

// FlaggerJudge is Flagger's threshold analysis: every minute one check of
// the last minute's values (ok reads the canary's and the live arm's
// values, in seriesMetrics order); a failed check counts against the
// threshold and rolls back when the count reaches it, a passed one
// advances the canary one step and promotes it at the promoteAfter-th.
func FlaggerJudge(name string, ok func(canary, live []float64) bool, threshold, promoteAfter int) Judge {
	return Judge{Name: name, make: func(*env) (judge, error) {
		return &flagger{ok: ok, threshold: threshold, promoteAfter: promoteAfter, state: Inconclusive}, nil
	}}
}

type flagger struct {
	noEvents
	ok                      func(canary, live []float64) bool
	threshold, promoteAfter int
	done, failed, passed    int
	state                   Verdict
}

func (f *flagger) read(e *env, _ time.Time) Verdict {
	for ; f.done < e.minutes() && f.state == Inconclusive; f.done++ {
		if f.ok(e.canary.values[f.done], e.live.values[f.done]) {
			f.passed++
		} else {
			f.failed++
		}
		switch {
		case f.failed >= f.threshold:
			f.state = Fail
		case f.passed >= f.promoteAfter:
			f.state = Pass
		}
	}
	return f.state
}

// gateWindow is the window the alert gates judge, as in internal/sim/gatesim.
var gateWindow = window.Spec{Name: "5m", Length: 5 * time.Minute, Resolution: 10 * time.Second}
