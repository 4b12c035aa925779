package gatesim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/window"
)

// PageSeverity is the severity of the gates that page on-call.
const PageSeverity = "page"

// PageScenario is the traffic of the on-call simulations: every arm at its
// rate with one Profile, into windows as config.Default() has them, the
// gates evaluated every EvalEvery as the sidecar does.
type PageScenario struct {
	Arms      []ArmRate
	GoldItems int
	Windows   []window.Spec
	EvalEvery time.Duration
}

// ArmRate is an arm and its events per second.
type ArmRate struct {
	Arm  string
	Rate float64
}

// DefaultPageScenario: live and canary at 16 events/s each, a 300-item gold
// set, the default 5m/10s and 1h/1m windows, gates evaluated every 10 s.
func DefaultPageScenario() PageScenario {
	return PageScenario{
		Arms:      []ArmRate{{"live", 16}, {"canary", 16}},
		GoldItems: 300, Windows: defaultWindows(), EvalEvery: 10 * time.Second,
	}
}

func (sc PageScenario) armNames() []string {
	names := make([]string, len(sc.Arms))
	for i, a := range sc.Arms {
		names[i] = a.Arm
	}
	return names
}

// defaultWindows are config.Default()'s windows.
func defaultWindows() []window.Spec {
	var specs []window.Spec
	for _, w := range config.Default().Windows {
		specs = append(specs, window.Spec{Name: w.Name(), Length: time.Duration(w.Length), Resolution: time.Duration(w.Resolution)})
	}
	return specs
}

func (sc PageScenario) newWindows() (*window.Windows, error) {
	c := config.Default()
	return window.New(window.Config{Windows: sc.Windows, Ks: c.K, LambdaMinRuns: c.Lambda.MinRuns})
}

// PreviousDefaultGates are the shipped gates as they were before the
// retune for on-call, kept to measure config.DefaultGates against. The
// retune kept every gate's name, metric, op, threshold, arms, window and
// min_samples; before it, every gate judged its point value (confidence
// 0), ship_precision was a warning, and only the four on-call gates other
// than oncall_lambda_flip_rate had a for (agents_kappa none).
func PreviousDefaultGates() []config.Gate {
	gs := config.DefaultGates()
	for i := range gs {
		g := &gs[i]
		g.Confidence = 0
		switch g.Name {
		case "ship_precision":
			g.Severity = "warning"
		case "oncall_lambda_flip_rate", "agents_kappa":
			g.For = 0
		}
	}
	return gs
}

// WithSeverity returns gs with the gate named name at severity sev.
func WithSeverity(gs []config.Gate, name, sev string) []config.Gate {
	out := slices.Clone(gs)
	for i := range out {
		if out[i].Name == name {
			out[i].Severity = sev
		}
	}
	return out
}

// PageVariants: the gates before the retune and config.DefaultGates.
func PageVariants() []Variant {
	return []Variant{
		{Name: "previous", Gates: PreviousDefaultGates()},
		{Name: "shipped", Gates: config.DefaultGates()},
	}
}

// Pages is the outcome of RunFalsePages for one variant.
type Pages struct {
	Variant  string
	Duration time.Duration // simulated time
	Arms     []string
	Gates    []config.Gate
	// Firings[arm][gate] counts the transitions to firing; Pendings the
	// transitions to pending (breakages that for then held back or not).
	Firings, Pendings map[string][]int
	// FiringTime[arm][gate] is the simulated time spent firing.
	FiringTime map[string][]time.Duration
}

// PageFirings is the number of transitions to firing of the page-severity
// gates of arm.
func (p *Pages) PageFirings(arm string) int { return p.sum(arm, true) }

// AllFirings is the number of transitions to firing of every gate of arm.
func (p *Pages) AllFirings(arm string) int { return p.sum(arm, false) }

func (p *Pages) sum(arm string, pageOnly bool) int {
	n := 0
	for gi, c := range p.Firings[arm] {
		if !pageOnly || p.Gates[gi].Severity == PageSeverity {
			n += c
		}
	}
	return n
}

// RunFalsePages runs the arms of sc with Profile p for d of simulated time
// through one window.Windows, evaluates every variant's gates every
// sc.EvalEvery and counts, per arm and gate, the transitions to firing:
// with a healthy p, each is a false alert.
func RunFalsePages(d time.Duration, seed uint64, sc PageScenario, p Profile, variants []Variant) ([]Pages, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	w, err := sc.newWindows()
	if err != nil {
		return nil, err
	}
	g := NewGenerator(rng, p, sc.GoldItems, len(window.DefaultKs))
	arms := make([]armTraffic, len(sc.Arms))
	for i, a := range sc.Arms {
		arms[i] = armTraffic{a.Arm, a.Rate, &p}
	}
	out := make([]Pages, len(variants))
	engines := make([]*gates.Engine, len(variants))
	src := NewMemo(w)
	for i, v := range variants {
		out[i] = Pages{
			Variant: v.Name, Duration: d, Arms: sc.armNames(), Gates: v.Gates,
			Firings: map[string][]int{}, Pendings: map[string][]int{}, FiringTime: map[string][]time.Duration{},
		}
		for _, a := range sc.armNames() {
			out[i].Firings[a] = make([]int, len(v.Gates))
			out[i].Pendings[a] = make([]int, len(v.Gates))
			out[i].FiringTime[a] = make([]time.Duration, len(v.Gates))
		}
		engines[i] = gates.New(v.Gates, src)
	}
	gateIndex := make([]map[string]int, len(variants))
	for i, v := range variants {
		gateIndex[i] = map[string]int{}
		for gi, gt := range v.Gates {
			gateIndex[i][gt.Name] = gi
		}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var o window.Observation
	t := start
	for t.Sub(start) < d {
		if err := traffic(w, g, t, sc.EvalEvery, arms, &o); err != nil {
			return nil, err
		}
		t = t.Add(sc.EvalEvery)
		now := t.Add(-time.Nanosecond)
		for i, e := range engines {
			for _, tr := range e.Evaluate(now) {
				gi := gateIndex[i][tr.Gate]
				switch tr.State {
				case gates.Firing:
					out[i].Firings[tr.Arm][gi]++
				case gates.Pending:
					out[i].Pendings[tr.Arm][gi]++
				}
			}
			for _, r := range e.Results("", "") {
				if r.State == gates.Firing {
					out[i].FiringTime[r.Arm][gateIndex[i][r.Gate]] += sc.EvalEvery
				}
			}
		}
	}
	return out, nil
}

// FormatPages renders RunFalsePages's results: per arm and variant, the
// firings of page-severity gates and of every gate, then the gates that
// fired or went pending at least once.
func FormatPages(ps []Pages) string {
	var b strings.Builder
	if len(ps) == 0 {
		return ""
	}
	days := ps[0].Duration.Hours() / 24
	fmt.Fprintf(&b, "| arm | gates | page firings | page firings per 30 days | firings, any gate | per 30 days |\n|---|---|---:|---:|---:|---:|\n")
	for _, arm := range ps[0].Arms {
		for _, p := range ps {
			pg, all := p.PageFirings(arm), p.AllFirings(arm)
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %d | %.1f |\n", arm, p.Variant, pg, float64(pg)*30/days, all, float64(all)*30/days)
		}
	}
	b.WriteString("\n| arm | gates | gate (severity) | firings | pendings | time firing |\n|---|---|---|---:|---:|---:|\n")
	for _, arm := range ps[0].Arms {
		for _, p := range ps {
			for gi, gt := range p.Gates {
				f, pe, ft := p.Firings[arm][gi], p.Pendings[arm][gi], p.FiringTime[arm][gi]
				if f == 0 && pe == 0 {
					continue
				}
				fmt.Fprintf(&b, "| %s | %s | %s (%s) | %d | %d | %s |\n", arm, p.Variant, gt.Name, gt.Severity, f, pe, ft)
			}
		}
	}
	return b.String()
}

// TimeToPage is the outcome of RunTimeToPage for one variant: per run, the
// time from the drop to the evaluation that first turned a gate firing
// (+Inf when none did within the horizon).
type TimeToPage struct {
	Variant string
	Runs    int
	Horizon time.Duration
	// Page: a page-severity gate; Precision: a gate on precision, whatever
	// its severity; Any: any gate.
	Page, Precision, Any []float64 // seconds
	// False counts the runs in which a gate fired before the drop.
	False int
}

// RunTimeToPage simulates runs of the first arm of sc alone: warm of
// traffic with Profile live, then worse from a time uniform within one
// evaluation period, until horizon after the drop or until every kind of
// gate of every variant has fired.
func RunTimeToPage(runs int, seed uint64, sc PageScenario, live, worse Profile, warm, horizon time.Duration, variants []Variant) ([]TimeToPage, error) {
	out := make([]TimeToPage, len(variants))
	for i, v := range variants {
		out[i] = TimeToPage{Variant: v.Name, Runs: runs, Horizon: horizon}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	arm, rate := sc.Arms[0].Arm, sc.Arms[0].Rate
	var o window.Observation
	for r := range runs {
		rng := rand.New(rand.NewPCG(seed, uint64(r)))
		w, err := sc.newWindows()
		if err != nil {
			return nil, err
		}
		g := NewGenerator(rng, live, sc.GoldItems, len(window.DefaultKs))
		src := NewMemo(w)
		engines := make([]*gates.Engine, len(variants))
		for i, v := range variants {
			engines[i] = gates.New(v.Gates, src)
			out[i].Page = append(out[i].Page, math.Inf(1))
			out[i].Precision = append(out[i].Precision, math.Inf(1))
			out[i].Any = append(out[i].Any, math.Inf(1))
		}
		falseFired := make([]bool, len(variants))
		drop := start.Add(warm + time.Duration(rng.Int64N(int64(sc.EvalEvery))))
		end := drop.Add(horizon)
		for t := start; t.Before(end); {
			next := t.Add(sc.EvalEvery)
			// Traffic of [t, next): live until the drop, worse from it.
			if t.Before(drop) && next.After(drop) {
				if err := traffic(w, g, t, drop.Sub(t), []armTraffic{{arm, rate, &live}}, &o); err != nil {
					return nil, err
				}
				if err := traffic(w, g, drop, next.Sub(drop), []armTraffic{{arm, rate, &worse}}, &o); err != nil {
					return nil, err
				}
			} else {
				p := &live
				if !t.Before(drop) {
					p = &worse
				}
				if err := traffic(w, g, t, sc.EvalEvery, []armTraffic{{arm, rate, p}}, &o); err != nil {
					return nil, err
				}
			}
			t = next
			now := t.Add(-time.Nanosecond)
			all := true
			for i, e := range engines {
				trs := e.Evaluate(now)
				res := &out[i]
				for _, tr := range trs {
					if tr.State != gates.Firing || tr.Arm != arm {
						continue
					}
					if now.Before(drop) {
						falseFired[i] = true
						continue
					}
					s := now.Sub(drop).Seconds()
					res.Any[r] = min(res.Any[r], s)
					if tr.Severity == PageSeverity {
						res.Page[r] = min(res.Page[r], s)
					}
					if tr.Metric == "precision" {
						res.Precision[r] = min(res.Precision[r], s)
					}
				}
				all = all && !math.IsInf(res.Page[r], 1) && !math.IsInf(res.Precision[r], 1)
			}
			if all {
				break
			}
		}
		for i := range out {
			if falseFired[i] {
				out[i].False++
			}
		}
	}
	return out, nil
}

// FormatTimeToPage renders RunTimeToPage's results.
func FormatTimeToPage(ts []TimeToPage) string {
	var b strings.Builder
	b.WriteString("| gates | first firing of | fired within horizon | median | p90 |\n|---|---|---:|---:|---:|\n")
	dur := func(s float64) string {
		if math.IsInf(s, 1) {
			return "> horizon"
		}
		return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
	}
	for _, t := range ts {
		for _, k := range []struct {
			name string
			xs   []float64
		}{{"a page-severity gate", t.Page}, {"a gate on precision", t.Precision}, {"any gate", t.Any}} {
			n := 0
			for _, x := range k.xs {
				if !math.IsInf(x, 1) {
					n++
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %d/%d | %s | %s |\n", t.Variant, k.name, n, t.Runs, dur(Quantile(k.xs, 0.5)), dur(Quantile(k.xs, 0.9)))
		}
	}
	return b.String()
}
