// Package gatesim measures the shipped gates on generated traffic: how often a
// healthy canary is wrongly failed, and how fast a worse one is caught;
// for on-call (pages.go), how often a healthy arm pages over 30 days and
// how fast a precision drop fires. It
// drives the real window.Windows and gates.Engine in process with
// window.Observations drawn from a seeded RNG; no NATS, no sidecar.
//
// The numbers depend on the traffic model below (Profile, Scenario); they
// are stated with the results so that they can be challenged.
package gatesim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// Profile is the true quality of an arm: the probability of each per-event
// outcome. Every window metric of SPEC §4 that a default gate reads follows
// from it.
type Profile struct {
	Answerable   float64 // share of gold items that are answerable
	OverRefusal  float64 // P(refuse | answerable)
	UnderRefusal float64 // P(ship | unanswerable)
	CHR          float64 // P(citation hit | shipped, answerable)
	Contained    float64 // P(containment | hit): precision ≈ CHR·Contained
	Recall5      float64 // P(G ⊆ R_5 | answerable)
	Coverage     float64 // P(covered | answerable with gold)
	Offsets      float64 // share of gold items with offsets (citation accuracy eligible)
	CitationAcc  float64 // P(accurate | eligible)
	// Cited ΔS is logit-normal with this median and 90th percentile.
	DeltaSMedian, DeltaSP90 float64
	LambdaArrow             float64 // P(run is →); the rest is half ←, half <>
	PairShare               float64 // share of events judged by both agents
	AgentAccuracy           float64 // P(an agent gives the true label)
	Abstain                 float64 // P(Scholar abstains)
}

// Healthy is the live arm's quality, and a healthy canary's: precision
// ≈ 0.88 and chr ≈ 0.90 (seed 002 levels), the other metrics with the
// margins of a retriever that passes every shipped gate.
//
// citation_accuracy is set to 0.97 on its own: the windows take it as
// given. In the real scorer a run is accurate only if it ships and its
// first citation is in G, so citation accuracy is at most about
// chr × (1 − over_refusal) ≈ 0.86 for this arm, and the shipped
// canary_citation_accuracy ≥ 0.95 gate would fail it on every window.
var Healthy = Profile{
	Answerable: 0.85, OverRefusal: 0.04, UnderRefusal: 0.02,
	CHR: 0.905, Contained: 0.975,
	Recall5: 0.90, Coverage: 0.86, Offsets: 0.6, CitationAcc: 0.97,
	DeltaSMedian: 0.32, DeltaSP90: 0.48,
	LambdaArrow: 0.995,
	PairShare:   0.3, AgentAccuracy: 0.97, Abstain: 0.004,
}

// WorsePrecision returns p with precision lower by points (0.05 = 5 points)
// and everything else equal: containment drops, citation hits do not.
func WorsePrecision(p Profile, points float64) Profile {
	prec := p.CHR * p.Contained
	p.Contained = (prec - points) / p.CHR
	return p
}

// Scenario is the traffic of one simulated deployment.
type Scenario struct {
	CanaryRate, LiveRate float64 // events per second
	GoldItems            int     // distinct qids
	Window               window.Spec
	EvalEvery            time.Duration
}

// DefaultScenario: 20 requests/s, 20 % of them to the canary, a 300-item
// gold set, the 5m/10s window, gates evaluated every 10 s.
var DefaultScenario = Scenario{
	CanaryRate: 4, LiveRate: 16, GoldItems: 300,
	Window:    window.Spec{Name: "5m", Length: 5 * time.Minute, Resolution: 10 * time.Second},
	EvalEvery: 10 * time.Second,
}

// gold is one run's gold set.
type gold struct {
	answerable, offsets []bool
	qids                []string
}

func newGold(rng *rand.Rand, p Profile, n int) gold {
	g := gold{answerable: make([]bool, n), offsets: make([]bool, n), qids: make([]string, n)}
	for i := range n {
		g.answerable[i] = rng.Float64() < p.Answerable
		g.offsets[i] = g.answerable[i] && rng.Float64() < p.Offsets/p.Answerable
		g.qids[i] = "q" + strconv.Itoa(i)
	}
	return g
}

// Generator turns Profiles into observations over one seeded gold set; the
// other simulations (internal/sim/analysissim) draw their traffic from it too.
type Generator struct {
	rng  *rand.Rand
	gold gold
	ks   int
}

// NewGenerator draws a gold set of items qids from rng, whose answerable
// and offset shares are p's, for observations with ks cut-offs.
func NewGenerator(rng *rand.Rand, p Profile, items, ks int) *Generator {
	return &Generator{rng: rng, gold: newGold(rng, p, items), ks: ks}
}

var labels = vocab.Labels // VALID, NOT_IN_CONTEXT, REJECT, ABSTAIN

// Draw fills o with one event of arm at t under p and, when the event is
// judged by both agents (p.PairShare), pair with their labels. Its qids are
// numbered (QIDKey), one number per gold item.
func (g *Generator) Draw(arm string, p *Profile, t time.Time, o *window.Observation, pair *window.PairObservation) (judged bool) {
	rng := g.rng
	i := rng.IntN(len(g.gold.qids))
	ans := g.gold.answerable[i]
	*o = window.Observation{
		Arm: arm, QID: g.gold.qids[i], QIDKey: uint32(i + 1), Time: t, HasAnswer: true, Answerable: ans, Triage: -1,
		HasRetrieval: true, PrecisionAtK: o.PrecisionAtK[:0],
	}
	for range g.ks {
		o.PrecisionAtK = append(o.PrecisionAtK, 0.2)
	}
	if ans {
		o.Shipped = rng.Float64() >= p.OverRefusal
		if rng.Float64() < p.Recall5 {
			o.RecallStrict = 1<<2 | 1<<3 // k = 5 and 10 of DefaultKs
		}
		o.CoverageEligible = true
		o.Covered = o.Shipped && rng.Float64() < p.Coverage/(1-p.OverRefusal)
		if g.gold.offsets[i] {
			o.Counters.Set(window.CountCitationAccEligible)
			if rng.Float64() < p.CitationAcc {
				o.Counters.Set(window.CountCitationAccurate)
			}
		}
		if o.Shipped {
			o.Hit = rng.Float64() < p.CHR
			o.Contained = o.Hit && rng.Float64() < p.Contained
		}
	} else {
		o.Shipped = rng.Float64() < p.UnderRefusal
	}
	if o.Shipped {
		o.HasDeltaSCited = true
		o.DeltaSCited = logitNormal(rng, p.DeltaSMedian, p.DeltaSP90)
	}
	switch u := rng.Float64(); {
	case u < p.LambdaArrow:
		o.Lambda.State = vocab.LambdaConvergent
	case u < (1+p.LambdaArrow)/2:
		o.Lambda.State = vocab.LambdaDivergent
	default:
		o.Lambda.State = vocab.LambdaRecursive
	}
	o.Lambda.Refused = !o.Shipped
	if rng.Float64() >= p.PairShare {
		return false
	}
	// The true label: a correct refusal or an over-refusal is
	// NOT_IN_CONTEXT, a shipped answer with its citation hit VALID, any
	// other shipped answer REJECT.
	truth := 2 // REJECT
	switch {
	case !o.Shipped:
		truth = 1 // NOT_IN_CONTEXT
	case ans && o.Hit:
		truth = 0 // VALID
	}
	agent := func() string {
		if rng.Float64() < p.AgentAccuracy {
			return labels[truth]
		}
		return labels[(truth+1+rng.IntN(2))%3]
	}
	sc, au := agent(), agent()
	if rng.Float64() < p.Abstain {
		sc = "ABSTAIN"
	}
	*pair = window.PairObservation{Arm: arm, Time: t, Scholar: sc, Auditor: au}
	return true
}

// event adds one event of arm at t (and maybe a judgement pair) to w.
func (g *Generator) event(w *window.Windows, arm string, p *Profile, t time.Time, o *window.Observation) error {
	var pair window.PairObservation
	judged := g.Draw(arm, p, t, o, &pair)
	if err := w.Add(o, t); err != nil {
		return err
	}
	if !judged {
		return nil
	}
	return w.AddPair(&pair, t)
}

// logitNormal draws x with logit(x) normal, median m and 90th percentile q.
func logitNormal(rng *rand.Rand, m, q float64) float64 {
	mu := math.Log(m / (1 - m))
	sigma := (math.Log(q/(1-q)) - mu) / 1.2815515655446004
	z := mu + sigma*rng.NormFloat64()
	return 1 / (1 + math.Exp(-z))
}

// Memo caches the windows' answers for one evaluation time, so that
// several engines judging the same windows read them once.
type Memo struct {
	w    *window.Windows
	now  time.Time
	snap map[string]*window.Snapshot
	ds   map[string]*ddsketch.DDSketch
}

// NewMemo returns a Memo of w.
func NewMemo(w *window.Windows) *Memo { return &Memo{w: w} }

func (m *Memo) at(now time.Time) {
	if !now.Equal(m.now) || m.snap == nil {
		m.now = now
		m.snap = map[string]*window.Snapshot{}
		m.ds = map[string]*ddsketch.DDSketch{}
	}
}

func (m *Memo) Snapshot(arm, win, typ string, now time.Time) (window.Snapshot, bool) {
	m.at(now)
	k := arm + "\x00" + win + "\x00" + typ
	if s, ok := m.snap[k]; ok {
		if s == nil {
			return window.Snapshot{}, false
		}
		return *s, true
	}
	s, ok := m.w.Snapshot(arm, win, typ, now)
	if !ok {
		m.snap[k] = nil
		return s, false
	}
	m.snap[k] = &s
	return s, true
}

func (m *Memo) DeltaS(arm, win, typ string, now time.Time) *ddsketch.DDSketch {
	m.at(now)
	k := arm + "\x00" + win + "\x00" + typ
	if s, ok := m.ds[k]; ok {
		return s
	}
	s := m.w.DeltaS(arm, win, typ, now)
	m.ds[k] = s
	return s
}

func (m *Memo) Arms() []string { return m.w.Arms() }

// Variant is one set of gates to measure.
type Variant struct {
	Name  string
	Gates []config.Gate
}

// WithConfidence returns gs with confidence c on every proportion gate (0:
// the point value).
func WithConfidence(gs []config.Gate, c float64) []config.Gate {
	out := slices.Clone(gs)
	for i := range out {
		if k, _ := window.MetricKind(out[i].Metric, window.DefaultKs); k == window.Proportion {
			out[i].Confidence = c
		}
	}
	return out
}

// PrecisionVsLive is an extra gate, not shipped: canary precision at most
// 2 points below live.
func PrecisionVsLive() config.Gate {
	return config.Gate{
		Name: "extra_precision_vs_live", Metric: "precision", Op: ">=", Threshold: -0.02,
		Window: "5m", MinSamples: 100, Arms: []string{"shadow", "canary"}, CompareTo: "live", Severity: "warning",
	}
}

// FalseFailVariants: the shipped gates plus PrecisionVsLive, judged on
// point values and with confidence 0.95.
func FalseFailVariants() []Variant {
	gs := append(config.DefaultGates(), PrecisionVsLive())
	return []Variant{
		{Name: "point", Gates: WithConfidence(gs, 0)},
		{Name: "confidence 0.95", Gates: WithConfidence(gs, 0.95)},
	}
}

// DetectionVariants: the shipped gates alone and with PrecisionVsLive,
// each on point values and with confidence 0.95.
func DetectionVariants() []Variant {
	shipped := config.DefaultGates()
	extra := append(config.DefaultGates(), PrecisionVsLive())
	return []Variant{
		{Name: "shipped gates, point", Gates: WithConfidence(shipped, 0)},
		{Name: "shipped gates, confidence 0.95", Gates: WithConfidence(shipped, 0.95)},
		{Name: "shipped + precision vs live, point", Gates: WithConfidence(extra, 0)},
		{Name: "shipped + precision vs live, confidence 0.95", Gates: WithConfidence(extra, 0.95)},
	}
}

// FalseFail is the outcome of RunFalseFail for one variant.
type FalseFail struct {
	Variant string
	Runs    int
	// Per gate (in gate order): runs where the canary's gate was broken
	// (pending or firing) and runs where it was inconclusive.
	Gates       []string
	Broken, Inc []int
	// Canary verdicts with every gate of the variant, and (X) with the
	// shipped gates only (the extra_ ones left out).
	VerdictFail, VerdictInc, VerdictPass    int
	VerdictFailX, VerdictIncX, VerdictPassX int
}

// RunFalseFail simulates runs independent 5-minute windows of a live and a
// canary arm with the same Profile, evaluates every variant once at the
// end and counts, per gate, the runs where the canary's gate is broken.
func RunFalseFail(runs int, seed uint64, sc Scenario, p Profile, variants []Variant) ([]FalseFail, error) {
	out := make([]FalseFail, len(variants))
	for i, v := range variants {
		out[i] = FalseFail{Variant: v.Name, Runs: runs, Broken: make([]int, len(v.Gates)), Inc: make([]int, len(v.Gates))}
		for _, g := range v.Gates {
			out[i].Gates = append(out[i].Gates, g.Name)
		}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(sc.Window.Length - time.Nanosecond)
	var o window.Observation
	for r := range runs {
		w, _, err := sc.newRun(seed, r, p, start, []armTraffic{{"live", sc.LiveRate, &p}, {"canary", sc.CanaryRate, &p}}, &o)
		if err != nil {
			return nil, err
		}
		src := NewMemo(w)
		for i, v := range variants {
			e := gates.New(v.Gates, src)
			e.Evaluate(end)
			verdict, rs := e.Verdict("canary", sc.Window.Name)
			var shipped []gates.Result
			for _, res := range rs {
				gi := slices.IndexFunc(v.Gates, func(g config.Gate) bool { return g.Name == res.Gate })
				switch res.Verdict {
				case gates.VerdictFail:
					out[i].Broken[gi]++
				case gates.VerdictInconclusive:
					out[i].Inc[gi]++
				}
				if !strings.HasPrefix(res.Gate, "extra_") {
					shipped = append(shipped, res)
				}
			}
			count(verdict, &out[i].VerdictFail, &out[i].VerdictInc, &out[i].VerdictPass)
			count(gates.Aggregate(shipped), &out[i].VerdictFailX, &out[i].VerdictIncX, &out[i].VerdictPassX)
		}
	}
	return out, nil
}

func count(v gates.Verdict, fail, inc, pass *int) {
	switch v {
	case gates.VerdictFail:
		*fail++
	case gates.VerdictInconclusive:
		*inc++
	default:
		*pass++
	}
}

// newRun starts run r of a scenario: windows of sc.Window and a generator
// of Profile p seeded with (seed, r), filled with one window length of the
// arms' traffic from start.
func (sc Scenario) newRun(seed uint64, r int, p Profile, start time.Time, arms []armTraffic, o *window.Observation) (*window.Windows, *Generator, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(r)))
	w, err := window.New(window.Config{Windows: []window.Spec{sc.Window}})
	if err != nil {
		return nil, nil, err
	}
	g := NewGenerator(rng, p, sc.GoldItems, len(window.DefaultKs))
	if err := traffic(w, g, start, sc.Window.Length, arms, o); err != nil {
		return nil, nil, err
	}
	return w, g, nil
}

type armTraffic struct {
	arm  string
	rate float64
	p    *Profile
}

// traffic adds events of every arm over [from, from+d), each arm at its
// rate, evenly spaced, interleaved by time.
func traffic(w *window.Windows, g *Generator, from time.Time, d time.Duration, arms []armTraffic, o *window.Observation) error {
	next := make([]float64, len(arms)) // seconds since from
	for i, a := range arms {
		next[i] = 0.5 / a.rate
	}
	secs := d.Seconds()
	for {
		best := -1
		for i := range arms {
			if next[i] < secs && (best < 0 || next[i] < next[best]) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		a := arms[best]
		t := from.Add(time.Duration(next[best] * float64(time.Second)))
		if err := g.event(w, a.arm, a.p, t, o); err != nil {
			return err
		}
		next[best] += 1 / a.rate
	}
}

// Detection is the outcome of RunDetection for one variant.
type Detection struct {
	Variant string
	Runs    int
	Horizon time.Duration
	// Events is, per run, the canary events seen when the verdict first
	// turned fail (+Inf when it did not within the horizon).
	Events []float64
	// ByPrecision counts the runs whose first fail had a precision gate
	// among the failing ones.
	ByPrecision int
	// Causes counts, per gate, the runs where it was failing when the
	// verdict first turned fail.
	Causes map[string]int
}

// RunDetection simulates runs deployments: live runs alone for one window,
// then the canary starts with Profile worse (live keeps live) and the gates
// are evaluated every sc.EvalEvery until the canary's verdict over the
// window turns fail or horizon passes.
func RunDetection(runs int, seed uint64, sc Scenario, live, worse Profile, variants []Variant, horizon time.Duration) ([]Detection, error) {
	out := make([]Detection, len(variants))
	for i, v := range variants {
		out[i] = Detection{Variant: v.Name, Runs: runs, Horizon: horizon, Causes: map[string]int{}}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var o window.Observation
	for r := range runs {
		w, g, err := sc.newRun(seed, r, live, start, []armTraffic{{"live", sc.LiveRate, &live}}, &o)
		if err != nil {
			return nil, err
		}
		src := NewMemo(w)
		engines := make([]*gates.Engine, len(variants))
		done := make([]bool, len(variants))
		for i, v := range variants {
			engines[i] = gates.New(v.Gates, src)
			out[i].Events = append(out[i].Events, math.Inf(1))
		}
		t := start.Add(sc.Window.Length)
		arms := []armTraffic{{"live", sc.LiveRate, &live}, {"canary", sc.CanaryRate, &worse}}
		for elapsed := time.Duration(0); elapsed < horizon; elapsed += sc.EvalEvery {
			if err := traffic(w, g, t, sc.EvalEvery, arms, &o); err != nil {
				return nil, err
			}
			t = t.Add(sc.EvalEvery)
			seen := elapsed + sc.EvalEvery
			now := t.Add(-time.Nanosecond)
			all := true
			for i, e := range engines {
				if done[i] {
					continue
				}
				e.Evaluate(now)
				v, rs := e.Verdict("canary", sc.Window.Name)
				if v == gates.VerdictFail {
					done[i] = true
					out[i].Events[r] = math.Round(seen.Seconds() * sc.CanaryRate)
					byPrec := false
					for _, res := range rs {
						if res.Verdict == gates.VerdictFail {
							out[i].Causes[res.Gate]++
							byPrec = byPrec || res.Metric == "precision"
						}
					}
					if byPrec {
						out[i].ByPrecision++
					}
				}
				all = all && done[i]
			}
			if all {
				break
			}
		}
	}
	return out, nil
}

// Quantile is the q-quantile of xs (nearest rank; +Inf values count).
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// FormatFalseFail renders RunFalseFail's results as a markdown table.
func FormatFalseFail(ffs []FalseFail) string {
	var b strings.Builder
	b.WriteString("| gate |")
	for _, f := range ffs {
		fmt.Fprintf(&b, " %s: fail | %s: inconclusive |", f.Variant, f.Variant)
	}
	b.WriteString("\n|---|")
	for range ffs {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	pc := func(n, runs int) string { return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(runs)) }
	for gi, name := range ffs[0].Gates {
		fmt.Fprintf(&b, "| %s |", name)
		for _, f := range ffs {
			fmt.Fprintf(&b, " %s | %s |", pc(f.Broken[gi], f.Runs), pc(f.Inc[gi], f.Runs))
		}
		b.WriteString("\n")
	}
	verdicts := func(label string, fail, inc, pass func(FalseFail) int) {
		fmt.Fprintf(&b, "| **%s** (pass %%) |", label)
		for _, f := range ffs {
			fmt.Fprintf(&b, " **%s** (%s) | %s |", pc(fail(f), f.Runs), pc(pass(f), f.Runs), pc(inc(f), f.Runs))
		}
		b.WriteString("\n")
	}
	verdicts("verdict, shipped gates",
		func(f FalseFail) int { return f.VerdictFailX }, func(f FalseFail) int { return f.VerdictIncX }, func(f FalseFail) int { return f.VerdictPassX })
	verdicts("verdict, shipped + extra",
		func(f FalseFail) int { return f.VerdictFail }, func(f FalseFail) int { return f.VerdictInc }, func(f FalseFail) int { return f.VerdictPass })
	return b.String()
}

// FormatDetection renders RunDetection's results as a markdown table.
func FormatDetection(ds []Detection, rate float64) string {
	var b strings.Builder
	b.WriteString("| gates | runs failed within horizon | median events (time) | p90 events (time) | first fail from a precision gate | gates failing at the first fail (runs) |\n|---|---:|---:|---:|---:|---|\n")
	ev := func(x float64) string {
		if math.IsInf(x, 1) {
			return "> horizon"
		}
		return fmt.Sprintf("%.0f (%s)", x, time.Duration(x/rate*float64(time.Second)).Round(time.Second))
	}
	for _, d := range ds {
		failed := 0
		for _, x := range d.Events {
			if !math.IsInf(x, 1) {
				failed++
			}
		}
		names := make([]string, 0, len(d.Causes))
		for n := range d.Causes {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if d.Causes[names[i]] != d.Causes[names[j]] {
				return d.Causes[names[i]] > d.Causes[names[j]]
			}
			return names[i] < names[j]
		})
		causes := make([]string, len(names))
		for i, n := range names {
			causes[i] = fmt.Sprintf("%s %d", n, d.Causes[n])
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s | %s | %d/%d | %s |\n", d.Variant, failed, d.Runs,
			ev(Quantile(d.Events, 0.5)), ev(Quantile(d.Events, 0.9)), d.ByPrecision, failed, strings.Join(causes, ", "))
	}
	return b.String()
}
