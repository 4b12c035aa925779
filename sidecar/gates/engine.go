package gates

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// Source is what the engine reads: *window.Windows satisfies it.
type Source interface {
	Snapshot(arm, window, contentType string, now time.Time) (window.Snapshot, bool)
	DeltaS(arm, window, contentType string, now time.Time) *ddsketch.DDSketch
	Arms() []string
}

// DefaultMWConfidence is the level of the Mann-Whitney test of a ΔS
// compare_to gate without confidence.
const DefaultMWConfidence = 0.95

// Engine evaluates gates over a Source. Safe for concurrent use.
type Engine struct {
	gates   []config.Gate
	kinds   []gateKind    // by gate; nil for a kind without a judge
	metrics []window.Kind // by gate; 0 for an unknown metric
	src     Source

	evalMu sync.Mutex // serialises Evaluate

	mu        sync.RWMutex // guards what follows
	states    map[stateKey]*gateState
	evaluated time.Time
}

type stateKey struct {
	gate int
	arm  string
}

type gateState struct {
	res Result
}

// New returns an engine for gates (copied) reading src. Every gate starts
// inconclusive.
func New(gates []config.Gate, src Source) *Engine {
	e := &Engine{
		gates:  slices.Clone(gates),
		src:    src,
		states: map[stateKey]*gateState{},
	}
	e.kinds = make([]gateKind, len(e.gates))
	e.metrics = make([]window.Kind, len(e.gates))
	for i := range e.gates {
		g := &e.gates[i]
		g.Arms = slices.Clone(g.Arms)
		e.kinds[i] = kinds[g.Kind()]
		e.metrics[i] = window.KindOf(g.Metric)
	}
	return e
}

// Gates returns the engine's gates.
func (e *Engine) Gates() []config.Gate {
	gs := slices.Clone(e.gates)
	for i := range gs {
		gs[i].Arms = slices.Clone(gs[i].Arms)
	}
	return gs
}

// Evaluated returns the time given to the last Evaluate (zero before the
// first).
func (e *Engine) Evaluated() time.Time {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.evaluated
}

// DefaultWindow is the window a verdict request without one asks for: the
// first window of the source when it tells its windows (as *window.Windows
// does), else the first gate's window, else "5m".
func (e *Engine) DefaultWindow() string {
	if s, ok := e.src.(interface{ Specs() []window.Spec }); ok {
		if specs := s.Specs(); len(specs) > 0 {
			return specs[0].Name
		}
	}
	for _, g := range e.gates {
		if g.Window != "" {
			return g.Window
		}
	}
	return "5m"
}

// armsFor lists the arms gate g of kind k applies to, given the arms the
// source knows.
func armsFor(g *config.Gate, k gateKind, known []string) []string {
	var arms []string
	if len(g.Arms) > 0 {
		arms = slices.Clone(g.Arms)
	} else {
		for _, a := range known {
			if a != vocab.Other {
				arms = append(arms, a)
			}
		}
	}
	if k != nil {
		arms = slices.DeleteFunc(arms, func(a string) bool { return k.skips(g, a) })
	}
	return arms
}

// outcome of judging a gate once.
type outcome int

const (
	outInconclusive outcome = iota
	outPass
	outBroken
)

// judgement is what one evaluation says of a (gate, arm).
type judgement struct {
	out      outcome
	value    *float64
	samples  int64
	interval *[2]float64
	reason   string
}

// evalCache memoises the snapshots and sketches of one evaluation.
type evalCache struct {
	src  Source
	now  time.Time
	snap map[[2]string]*window.Snapshot // nil value: unknown
	ds   map[[2]string][]Bin
}

func (c *evalCache) snapshot(arm, win string) *window.Snapshot {
	k := [2]string{arm, win}
	if s, ok := c.snap[k]; ok {
		return s
	}
	var p *window.Snapshot
	if s, ok := c.src.Snapshot(arm, win, "", c.now); ok {
		p = &s
	}
	c.snap[k] = p
	return p
}

func (c *evalCache) deltaS(arm, win string) []Bin {
	k := [2]string{arm, win}
	if b, ok := c.ds[k]; ok {
		return b
	}
	b := SketchBins(c.src.DeltaS(arm, win, "", c.now))
	c.ds[k] = b
	return b
}

// Evaluate judges every gate for every arm it applies to at now and returns
// the state changes, in gate order then arm order. Calls are serialised;
// now should not go backwards.
func (e *Engine) Evaluate(now time.Time) []Transition {
	e.evalMu.Lock()
	defer e.evalMu.Unlock()
	cache := &evalCache{src: e.src, now: now, snap: map[[2]string]*window.Snapshot{}, ds: map[[2]string][]Bin{}}
	known := e.src.Arms()
	type judged struct {
		key stateKey
		j   judgement
	}
	var all []judged
	for gi := range e.gates {
		g := &e.gates[gi]
		arms := armsFor(g, e.kinds[gi], known)
		slices.Sort(arms)
		for _, arm := range arms {
			all = append(all, judged{stateKey{gi, arm}, e.judge(gi, arm, cache)})
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	var trs []Transition
	for _, x := range all {
		st, ok := e.states[x.key]
		if !ok {
			g := &e.gates[x.key.gate]
			st = &gateState{res: Result{
				Gate: g.Name, Metric: g.Metric, Op: g.Op, Window: g.Window,
				Severity: g.Severity, Arm: x.key.arm, CompareTo: g.CompareTo, Subject: kinds[g.Kind()].subject(g, x.key.arm),
				Threshold: g.Threshold, State: Inconclusive, Verdict: VerdictInconclusive,
			}}
			e.states[x.key] = st
		}
		from, changed := st.step(x.j, time.Duration(e.gates[x.key.gate].For), now)
		if changed {
			trs = append(trs, Transition{Result: st.res, From: from, At: now})
		}
	}
	e.evaluated = now
	return trs
}

// step applies one judgement to the state machine.
func (s *gateState) step(j judgement, forDur time.Duration, now time.Time) (from State, changed bool) {
	r := &s.res
	from = r.State
	next := from
	switch j.out {
	case outPass:
		if from == Firing {
			next = Resolved
		} else {
			next = OK
		}
	case outBroken:
		switch from {
		case Pending:
			if now.Sub(r.ActiveAt) >= forDur {
				next = Firing
			}
		case Firing:
		default:
			r.ActiveAt = now
			next = Pending
			if forDur <= 0 {
				next = Firing
			}
		}
	default:
		if from != Pending && from != Firing {
			next = Inconclusive
		}
	}
	if next == OK || next == Inconclusive {
		r.ActiveAt = time.Time{}
	}
	r.Value, r.Samples, r.Interval = j.value, j.samples, j.interval
	r.Reason = j.reason
	if j.out == outInconclusive && (next == Pending || next == Firing) {
		r.Reason += "; stays " + next.String() + " until the gate passes"
	}
	if next != from {
		r.State = next
		r.Since = now
		changed = true
	}
	r.Verdict = verdictOf(r.State)
	return from, changed
}

// judge evaluates gate gi for arm with the judge of its kind, once the
// arm's value of the metric is usable (inconclusive with the reason when
// it is not).
func (e *Engine) judge(gi int, arm string, c *evalCache) judgement {
	g := &e.gates[gi]
	k := e.kinds[gi]
	if k == nil {
		return judgement{reason: fmt.Sprintf("no judge for gate kind %q", g.Kind())}
	}
	v, j, ok := metricOf(c, arm, g.Window, g.Metric)
	if !ok {
		return j
	}
	return k.judge(g, e.metrics[gi], arm, v, c)
}

// minSamples is the sample count below which gate g is inconclusive: a
// value from no sample never passes, even with min_samples 0.
func minSamples(g *config.Gate) int64 { return int64(max(g.MinSamples, 1)) }

// metricOf reads metric of arm over win; when it is not usable it says why
// in an inconclusive judgement.
func metricOf(c *evalCache, arm, win, metric string) (window.Value, judgement, bool) {
	s := c.snapshot(arm, win)
	if s == nil {
		return window.Value{}, judgement{reason: fmt.Sprintf("no data for arm %s in window %s", arm, win)}, false
	}
	v, ok := s.Metrics[metric]
	if !ok {
		return window.Value{}, judgement{reason: fmt.Sprintf("unknown metric %s", metric)}, false
	}
	if !v.Valid || math.IsNaN(v.Value) {
		return window.Value{}, judgement{samples: v.Samples, reason: fmt.Sprintf("%s of arm %s has no value in window %s", metric, arm, win)}, false
	}
	return v, judgement{}, true
}

// passes tells whether x is on the passing side of the gate.
func passes(op string, x, threshold float64) bool {
	switch op {
	case ">=":
		return x >= threshold
	case ">":
		return x > threshold
	case "<=":
		return x <= threshold
	case "<":
		return x < threshold
	}
	return false
}

func judgePoint(g *config.Gate, name string, x float64) (outcome, string) {
	if !validOp(g.Op) {
		return outInconclusive, fmt.Sprintf("unknown op %q", g.Op)
	}
	if passes(g.Op, x, g.Threshold) {
		return outPass, fmt.Sprintf("%s %s %s %s", name, fmtF(x), g.Op, fmtF(g.Threshold))
	}
	return outBroken, fmt.Sprintf("%s %s breaks %s %s", name, fmtF(x), g.Op, fmtF(g.Threshold))
}

func judgeInterval(g *config.Gate, lo, hi float64, what string) (outcome, string) {
	iv := fmt.Sprintf("%s [%s, %s]", what, fmtF(lo), fmtF(hi))
	if !validOp(g.Op) {
		return outInconclusive, fmt.Sprintf("unknown op %q", g.Op)
	}
	pl, ph := passes(g.Op, lo, g.Threshold), passes(g.Op, hi, g.Threshold)
	switch {
	case pl && ph:
		return outPass, fmt.Sprintf("%s all %s %s", iv, g.Op, fmtF(g.Threshold))
	case !pl && !ph:
		return outBroken, fmt.Sprintf("%s all breaks %s %s", iv, g.Op, fmtF(g.Threshold))
	}
	return outInconclusive, fmt.Sprintf("%s straddles %s %s", iv, g.Op, fmtF(g.Threshold))
}

func validOp(op string) bool { return op == ">=" || op == ">" || op == "<=" || op == "<" }

func ptr(x float64) *float64 { return &x }

func fmtF(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

func pct(c float64) string { return strconv.FormatFloat(c*100, 'g', 4, 64) + "%" }

// Results returns the state of every gate for arm over win after the last
// evaluation, in gate order then arm order; arm "" is every arm, win ""
// every window.
func (e *Engine) Results(arm, win string) []Result {
	e.mu.RLock()
	defer e.mu.RUnlock()
	type kr struct {
		k stateKey
		r Result
	}
	var list []kr
	for k, st := range e.states {
		if (arm == "" || k.arm == arm) && (win == "" || st.res.Window == win) {
			list = append(list, kr{k, st.res})
		}
	}
	slices.SortFunc(list, func(a, b kr) int {
		if a.k.gate != b.k.gate {
			return a.k.gate - b.k.gate
		}
		return strings.Compare(a.k.arm, b.k.arm)
	})
	out := make([]Result, len(list))
	for i, x := range list {
		out[i] = x.r
		if x.r.Value != nil {
			out[i].Value = ptr(*x.r.Value)
		}
		if x.r.Interval != nil {
			iv := *x.r.Interval
			out[i].Interval = &iv
		}
	}
	return out
}

// Verdict aggregates Results(arm, win): fail when any gate fails (pending
// or firing), else inconclusive when any is inconclusive, else pass;
// inconclusive with no gate.
func (e *Engine) Verdict(arm, win string) (Verdict, []Result) {
	rs := e.Results(arm, win)
	return Aggregate(rs), rs
}

// Aggregate is the verdict of a set of gate results (see Verdict).
func Aggregate(rs []Result) Verdict {
	if len(rs) == 0 {
		return VerdictInconclusive
	}
	v := VerdictPass
	for _, r := range rs {
		switch r.Verdict {
		case VerdictFail:
			return VerdictFail
		case VerdictInconclusive:
			v = VerdictInconclusive
		}
	}
	return v
}
