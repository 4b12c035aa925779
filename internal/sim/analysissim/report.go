package analysissim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/internal/sim/gatesim"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
)

// Summary is one judge in one scenario.
type Summary struct {
	Judge, Scenario string
	Bad             bool
	Runs            int
	// EverFailed: runs with a fail read within Horizon (reading on after a
	// pass). FirstFail, FirstPass: runs whose first decisive verdict was
	// fail within Horizon, pass within the scenario's horizon.
	EverFailed, FirstFail, FirstPass int
	// Passed: runs with a pass read within the scenario's horizon.
	Passed int
	// Median canary events to the first fail and to the first pass read
	// (+Inf when more than half the runs had none).
	EventsToFail, EventsToPass float64
}

// Summarize turns a Result into one Summary per judge.
func Summarize(res *Result) []Summary {
	var out []Summary
	for i, name := range res.Judges {
		s := Summary{Judge: name, Scenario: res.Scenario.Name, Bad: res.Scenario.Bad, Runs: len(res.Runs[i])}
		var toFail, toPass []float64
		for _, o := range res.Runs[i] {
			if o.FailAt >= 0 && o.FailAt <= Horizon {
				s.EverFailed++
			}
			if o.First == Fail && o.FirstAt <= Horizon {
				s.FirstFail++
			}
			if o.First == Pass {
				s.FirstPass++
			}
			if o.PassAt >= 0 {
				s.Passed++
			}
			toFail = append(toFail, events(o.FailEvents))
			toPass = append(toPass, events(o.PassEvents))
		}
		s.EventsToFail, s.EventsToPass = gatesim.Quantile(toFail, 0.5), gatesim.Quantile(toPass, 0.5)
		out = append(out, s)
	}
	return out
}

func events(n int64) float64 {
	if n < 0 {
		return math.Inf(1)
	}
	return float64(n)
}

func pct(n, of int) string { return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of)) }

func fmtEvents(x, rate float64) string {
	if math.IsInf(x, 1) {
		return "never (> ½ runs)"
	}
	return fmt.Sprintf("%.0f (%s)", x, time.Duration(x/rate*float64(time.Second)).Round(time.Second))
}

// FormatTable renders summaries of every scenario as one markdown table.
func FormatTable(sums []Summary, rate float64) string {
	var b strings.Builder
	b.WriteString("| scenario | judge | runs | ever failed ≤ 30 min | first decision: fail ≤ 30 min / pass | passed ≤ 60 min | median canary events to fail (time) | median canary events to pass (time) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range sums {
		passed := "—"
		if !s.Bad {
			passed = pct(s.Passed, s.Runs)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s / %s | %s | %s | %s |\n", s.Scenario, s.Judge, s.Runs,
			pct(s.EverFailed, s.Runs), pct(s.FirstFail, s.Runs), pct(s.FirstPass, s.Runs), passed,
			fmtEvents(s.EventsToFail, rate), fmtEvents(s.EventsToPass, rate))
	}
	return b.String()
}

// FormatMatrix renders the dominance view: per judge, the healthy false
// failure and pass rates and the detection rate of every bad scenario.
func FormatMatrix(sums []Summary) string {
	var judges, bad []string
	cell := map[[2]string]Summary{}
	for _, s := range sums {
		if !slices.Contains(judges, s.Judge) {
			judges = append(judges, s.Judge)
		}
		if s.Bad && !slices.Contains(bad, s.Scenario) {
			bad = append(bad, s.Scenario)
		}
		cell[[2]string{s.Judge, s.Scenario}] = s
	}
	var b strings.Builder
	b.WriteString("| judge | healthy: failed ≤ 30 min | healthy: passed ≤ 60 min |")
	for _, sc := range bad {
		fmt.Fprintf(&b, " %s: failed ≤ 30 min |", sc)
	}
	b.WriteString("\n|---|---:|---:|" + strings.Repeat("---:|", len(bad)) + "\n")
	for _, j := range judges {
		h := cell[[2]string{j, "healthy"}]
		fmt.Fprintf(&b, "| %s | %s | %s |", j, pct(h.EverFailed, max(h.Runs, 1)), pct(h.Passed, max(h.Runs, 1)))
		for _, sc := range bad {
			s := cell[[2]string{j, sc}]
			fmt.Fprintf(&b, " %s |", pct(s.EverFailed, max(s.Runs, 1)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Dominated lists, for the judge named ours, every other judge with both a
// lower healthy false-failure rate and a higher detection rate in some bad
// scenario.
func Dominated(sums []Summary, ours string) []string {
	rate := func(s Summary) float64 { return float64(s.EverFailed) / float64(max(s.Runs, 1)) }
	healthy := map[string]float64{}
	for _, s := range sums {
		if !s.Bad {
			healthy[s.Judge] = rate(s)
		}
	}
	det := map[[2]string]float64{}
	for _, s := range sums {
		if s.Bad {
			det[[2]string{s.Judge, s.Scenario}] = rate(s)
		}
	}
	var out []string
	for _, s := range sums {
		if !s.Bad || s.Judge == ours {
			continue
		}
		if healthy[s.Judge] < healthy[ours] && rate(s) > det[[2]string{ours, s.Scenario}] {
			out = append(out, fmt.Sprintf("%s on %s", s.Judge, s.Scenario))
		}
	}
	return out
}

// FormatDiag renders an analysis judge's healthy diagnostics: which checks
// passed last, and each check's interval half-width at the horizon, the
// smallest difference from 0 it could tell apart then.
func FormatDiag(res *Result, judge int) string {
	diags := res.Diags[judge]
	var b strings.Builder
	blocking := map[string]int{}
	for _, d := range diags {
		for _, c := range d.Blocking {
			blocking[c]++
		}
	}
	type row struct {
		name       string
		half, samp []float64
		verdicts   map[string]int
	}
	var rows []*row
	idx := map[string]*row{}
	for _, d := range diags {
		for _, c := range d.End {
			r := idx[c.Name]
			if r == nil {
				r = &row{name: c.Name, verdicts: map[string]int{}}
				idx[c.Name] = r
				rows = append(rows, r)
			}
			if !math.IsNaN(c.HalfWid) {
				r.half = append(r.half, c.HalfWid)
			}
			r.samp = append(r.samp, float64(c.Samples))
			r.verdicts[c.Verdict]++
		}
	}
	fmt.Fprintf(&b, "| check | undecided just before the first pass (or at %s) | verdict at %s: pass / inconclusive / fail | median samples (smaller arm) | median half-width at %s (MDD) |\n|---|---:|---:|---:|---:|\n",
		res.Scenario.Horizon, res.Scenario.Horizon, res.Scenario.Horizon)
	sort.SliceStable(rows, func(i, j int) bool { return blocking[rows[i].name] > blocking[rows[j].name] })
	for _, r := range rows {
		n := len(diags)
		fmt.Fprintf(&b, "| %s | %s | %s / %s / %s | %.0f | %.4f |\n", r.name, pct(blocking[r.name], n),
			pct(r.verdicts["pass"], n), pct(r.verdicts["inconclusive"], n), pct(r.verdicts["fail"], n),
			median(r.samp), median(r.half))
	}
	return b.String()
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// RealSummary is one judge in one scenario of the realistic simulation,
// with the cut-offs of its targets.
type RealSummary struct {
	Judge, Scenario string
	Bad             bool
	Runs            int
	// Runs with a fail read at all (within the scenario's horizon) and
	// within 10 minutes; with a pass read at all and within 15 minutes.
	EverFailed, FailedBy10, EverPassed, PassedBy15 int
	// Median candidate events to the first fail and pass read (+Inf when
	// more than half the runs had none).
	EventsToFail, EventsToPass float64
	// Median time to the first fail and pass read (-1: none in half).
	TimeToFail, TimeToPass time.Duration
}

// SummarizeReal turns a Result into one RealSummary per judge.
func SummarizeReal(res *Result) []RealSummary {
	var out []RealSummary
	for i, name := range res.Judges {
		s := RealSummary{Judge: name, Scenario: res.Scenario.Name, Bad: res.Scenario.Bad, Runs: len(res.Runs[i])}
		var toFail, toPass, tFail, tPass []float64
		for _, o := range res.Runs[i] {
			if o.FailAt >= 0 {
				s.EverFailed++
				if o.FailAt <= 10*time.Minute {
					s.FailedBy10++
				}
			}
			if o.PassAt >= 0 {
				s.EverPassed++
				if o.PassAt <= 15*time.Minute {
					s.PassedBy15++
				}
			}
			toFail = append(toFail, events(o.FailEvents))
			toPass = append(toPass, events(o.PassEvents))
			tFail = append(tFail, at(o.FailAt))
			tPass = append(tPass, at(o.PassAt))
		}
		s.EventsToFail, s.EventsToPass = gatesim.Quantile(toFail, 0.5), gatesim.Quantile(toPass, 0.5)
		s.TimeToFail, s.TimeToPass = dur(gatesim.Quantile(tFail, 0.5)), dur(gatesim.Quantile(tPass, 0.5))
		out = append(out, s)
	}
	return out
}

func at(d time.Duration) float64 {
	if d < 0 {
		return math.Inf(1)
	}
	return d.Seconds()
}

func dur(s float64) time.Duration {
	if math.IsInf(s, 1) {
		return -1
	}
	return time.Duration(s * float64(time.Second))
}

func fmtMedian(events float64, t time.Duration) string {
	if math.IsInf(events, 1) {
		return "never (> ½ runs)"
	}
	return fmt.Sprintf("%.0f (%s)", events, t.Round(time.Second))
}

// FormatReal renders the realistic simulation's summaries as one markdown
// table.
func FormatReal(sums []RealSummary) string {
	var b strings.Builder
	b.WriteString("| scenario | judge | runs | ever failed | failed ≤ 10 min | ever passed | passed ≤ 15 min | median candidate events to fail (time) | median candidate events to pass (time) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range sums {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", s.Scenario, s.Judge, s.Runs,
			pct(s.EverFailed, s.Runs), pct(s.FailedBy10, s.Runs), pct(s.EverPassed, s.Runs), pct(s.PassedBy15, s.Runs),
			fmtMedian(s.EventsToFail, s.TimeToFail), fmtMedian(s.EventsToPass, s.TimeToPass))
	}
	return b.String()
}

// FormatChecksNeeded renders, per check of an analysis judge (judge index
// j in every result), the median candidate events at which it first
// passed in each scenario a check should pass and first failed in each
// the canary should fail ("—": in half the runs or fewer).
func FormatChecksNeeded(results []*Result, j int) string {
	checks := checkNames(results, j)
	var b strings.Builder
	writeCheckHeader(&b, results, "to pass", "to fail")
	for _, name := range checks {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range results {
			fmt.Fprintf(&b, " %s |", medianToDecide(res, j, name))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkNames lists the checks of analysis judge j over every result, in
// the order they first end a run.
func checkNames(results []*Result, j int) []string {
	var checks []string
	for _, res := range results {
		for _, d := range res.Diags[j] {
			for _, c := range d.End {
				if !slices.Contains(checks, c.Name) {
					checks = append(checks, c.Name)
				}
			}
		}
	}
	return checks
}

// writeCheckHeader writes a per-check table's header: a column a scenario,
// headed with its name and what it should do (pass or fail).
func writeCheckHeader(b *strings.Builder, results []*Result, pass, fail string) {
	b.WriteString("| check |")
	for _, res := range results {
		what := pass
		if res.Scenario.Bad {
			what = fail
		}
		fmt.Fprintf(b, " %s: %s |", res.Scenario.Name, what)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(results)) + "\n")
}

// medianToDecide is the median candidate events at which check name of
// judge j first did what the scenario should (pass, or fail when bad),
// "—" when it did in half the runs or fewer.
func medianToDecide(res *Result, j int, name string) string {
	var firsts []float64
	for _, d := range res.Diags[j] {
		first := d.FirstPass
		if res.Scenario.Bad {
			first = d.FirstFail
		}
		if n, ok := first[name]; ok {
			firsts = append(firsts, float64(n))
		} else {
			firsts = append(firsts, math.Inf(1))
		}
	}
	if q := gatesim.Quantile(firsts, 0.5); len(firsts) > 0 && !math.IsInf(q, 1) {
		return fmt.Sprintf("%.0f", q)
	}
	return "—"
}

// FormatFloor renders, for every check of judge j in each scenario, the
// fewest candidate events any valid test of that check could decide with,
// and what the analysis took (the median events to its first pass or
// fail, as FormatChecksNeeded). The floor comes from how much the best
// estimate the check has (the paired one when pairs count) still varies
// between runs at the horizon: with σ² = n_T·Var(d̂_T) its variance per
// candidate event (n_T events at the horizon) and g the distance from the
// mean estimate to the tolerance, a test of one look at n events, holding
// at α, passes a healthy canary with probability 0.8 only if
// n ≥ (z₁₋α + z₀.₈)²·σ²/g², and fails a bad one with probability ½ only if
// n ≥ z₁₋α²·σ²/g² (Neyman–Pearson, in the normal limit). A sequential test
// that passes 80 % of canaries by n events, or fails half of them by n, is
// such a test at n, so these bound "passed within 15 minutes" and the
// median events to fail of any test whatever; α is the whole of it, as if
// the check were the only one judged. "—": the estimate is not on the
// deciding side of the tolerance, so no number of events decides.
func FormatFloor(results []*Result, j int, alpha float64) string {
	checks := checkNames(results, j)
	zPass := confseq.ZQuantile(1-alpha) + confseq.ZQuantile(0.8)
	zFail := confseq.ZQuantile(1 - alpha)
	var b strings.Builder
	writeCheckHeader(&b, results, "to pass (80 %), floor / analysis", "to fail (median), floor / analysis")
	for _, name := range checks {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range results {
			var est, events []float64
			var end CheckEnd
			for _, d := range res.Diags[j] {
				for _, c := range d.End {
					if c.Name == name && !math.IsNaN(c.Best) {
						est, events, end = append(est, c.Best), append(events, float64(d.Events)), c
					}
				}
			}
			took := medianToDecide(res, j, name)
			if len(est) < 2 {
				fmt.Fprintf(&b, " — / %s |", took)
				continue
			}
			mean, variance := meanVar(est)
			n, _ := meanVar(events)
			perEvent := variance * n
			// The gap to the tolerance on the side the scenario decides.
			gap := mean + end.Limit // higher is better: pass above −t
			if end.Lower {
				gap = end.Limit - mean
			}
			z := zPass
			if res.Scenario.Bad {
				gap, z = -gap, zFail
			}
			if gap <= 0 {
				fmt.Fprintf(&b, " — / %s |", took)
				continue
			}
			fmt.Fprintf(&b, " %.0f / %s |", z*z*perEvent/(gap*gap), took)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// meanVar is the mean and the sample variance of xs.
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}
