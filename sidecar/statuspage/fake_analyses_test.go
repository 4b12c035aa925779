package statuspage

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/window"
)

// fakeAnalyses is an AnalysisSource of fixed states.
type fakeAnalyses []AnalysisState

func (f fakeAnalyses) Analyses() []AnalysisState { return f }

// simKs are the cut-offs of the simulated analyses.
var simKs = []int{1, 3, 5, 10}

// simEvent is one scored event of an arm of quality q (1 healthy; lower
// answers worse): every metric the canary and eligibility sets judge has
// data, except the judgement pairs (agreement, kappa: no_data).
func simEvent(rng *rand.Rand, arm string, q float64, n int) *window.Observation {
	bern := func(p float64) bool { return rng.Float64() < p }
	ans := bern(0.9)
	shipped := !ans && bern(0.02) || ans && bern(0.96)
	hit := bern(0.93 * q)
	contained := hit && bern(0.94)
	covered := bern(0.86 * q)
	accurate := bern(0.985 - (1-q)*0.3)
	o := &window.Observation{
		Arm: arm, QID: arm + "-q" + strconv.Itoa(n/3), Triage: -1,
		HasAnswer: true, Answerable: ans, Shipped: shipped, Hit: hit, Contained: contained,
		HasRetrieval: true, PrecisionAtK: make([]float64, len(simKs)),
		HasRecallAtK: true, RecallAtK: make([]float64, len(simKs)),
		CoverageEligible: true, Covered: covered,
		HasDeltaSCited: true, DeltaSCited: min(1, max(0, 0.3+(1-q)*0.4+rng.NormFloat64()*0.08)),
		Lambda: window.LambdaRun{State: window.LambdaConvergent},
	}
	o.Counters.Set(window.CountCitationAccEligible)
	if accurate {
		o.Counters.Set(window.CountCitationAccurate)
	}
	for i := range simKs {
		if bern(0.7 + 0.07*float64(i)) {
			o.RecallStrict |= 1 << i
		}
		o.PrecisionAtK[i], o.RecallAtK[i] = 0.5, 0.8
	}
	if !bern(0.985 - (1-q)*0.2) {
		o.Lambda.State = window.LambdaDivergent
	}
	return o
}

// simulatedAnalyses runs a Manager over 20 minutes of simulated traffic
// ending at end, judged every 20 s: "c1" compares a canary that degrades
// after 8 minutes with live (it fails); "shadow-1" holds the eligibility
// checks of a healthy shadow arm; "c0", ended after 5 minutes, compared an
// earlier canary. It returns the Manager and the time of its last tick.
func simulatedAnalyses(end time.Time) (*analysis.Manager, time.Time) {
	cfg := config.Default().Analysis
	m := analysis.NewManager(analysis.Options{Config: cfg, Ks: simKs, MinRuns: 3})
	start := end.Add(-20 * time.Minute)
	rng := rand.New(rand.NewPCG(7, 11))
	must := func(_ analysis.Result, _ bool, err error) {
		if err != nil {
			panic(err)
		}
	}
	const step = 20 * time.Second
	n := 0
	for t := start; !t.After(end); t = t.Add(step) {
		switch t.Sub(start) {
		case 0:
			must(m.Start(analysis.StartRequest{ID: "c0", Arm: "canary", Baseline: "live", Checks: "canary"}, t))
		case 3 * time.Minute:
			must(m.Start(analysis.StartRequest{ID: "c1", Arm: "canary", Baseline: "live", Checks: "canary"}, t))
		case 4 * time.Minute:
			must(m.Start(analysis.StartRequest{ID: "shadow-1", Arm: "shadow", Baseline: "live", Checks: "eligibility"}, t))
		case 5 * time.Minute:
			m.End("c0", t)
		}
		canaryQ := 1.0
		if t.Sub(start) >= 8*time.Minute {
			canaryQ = 0.9
		}
		for range 150 {
			n++
			for _, arm := range []struct {
				name string
				q    float64
			}{{"live", 1}, {"canary", canaryQ}, {"shadow", 1}} {
				if err := m.Observe(simEvent(rng, arm.name, arm.q, n), t); err != nil {
					panic(err)
				}
			}
		}
		m.Tick(t)
	}
	return m, end
}
