package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// Verdict is the outcome of a check or of an analysis.
type Verdict string

// Verdicts. NoData is a check's only: its metric has no sample in either
// arm, and it is left out of the analysis verdict.
const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Inconclusive Verdict = "inconclusive"
	NoData       Verdict = "no_data"
)

// Samples counts one metric's samples (or an analysis' events) per arm.
type Samples struct {
	Arm      int64 `json:"arm"`
	Baseline int64 `json:"baseline"`
}

// CheckResult is one check of an analysis as last judged.
type CheckResult struct {
	Name   string `json:"name"`
	Metric string `json:"metric"`
	// Kind is "comparison" (candidate − baseline against Tolerance) or
	// "absolute" (the candidate's value Op Threshold).
	Kind string `json:"kind"`
	// Estimate is candidate − baseline for a comparison, the candidate's
	// value for an absolute check; nil without data.
	Estimate *float64 `json:"estimate"`
	// Interval is the confidence sequence of Estimate now; nil without
	// data.
	Interval      *[2]float64 `json:"interval"`
	Tolerance     float64     `json:"tolerance"`
	Op            string      `json:"op,omitempty"`
	Threshold     *float64    `json:"threshold,omitempty"`
	LowerIsBetter bool        `json:"lower_is_better"`
	// ArmValue and BaselineValue are each arm's own value of the metric.
	ArmValue      *float64 `json:"arm_value"`
	BaselineValue *float64 `json:"baseline_value"`
	Samples       Samples  `json:"samples"`
	MinSamples    int      `json:"min_samples"`
	// Pairing says how the check's matched pairs were matched (request,
	// qid; none when the check reads no pairs), Pairs how many count in
	// it, PairedEstimate the mean difference over its visits, and
	// PairedInterval and UnpairedInterval the two sequences whose
	// intersection is Interval (SPEC §5.3); nil when unpaired.
	Pairing          string      `json:"pairing"`
	Pairs            int64       `json:"pairs"`
	PairedEstimate   *float64    `json:"paired_estimate,omitempty"`
	PairedInterval   *[2]float64 `json:"paired_interval,omitempty"`
	UnpairedInterval *[2]float64 `json:"unpaired_interval,omitempty"`
	// Level is the confidence of the side of Interval that fails the
	// check: 1 − α/m. PassLevel is that of the side that passes it: 1 − α
	// (checkLevels).
	Level     float64 `json:"level"`
	PassLevel float64 `json:"pass_level"`
	Verdict   Verdict `json:"verdict"`
	Reason    string  `json:"reason"`

	// now is this reading's own sequence, before the intersection with
	// the earlier ones; nowOK when both arms have min_samples.
	now   confseq.Interval
	nowOK bool
	// past is the check's running bound while a narrowing judges it:
	// only the sides of the paired sequence that pass it change what the
	// narrowing keeps (comparison.bounds).
	past Bound
}

// Bound is a check's running intersection of its confidence sequence:
// every reading of a time-uniform sequence holds at once (with the same
// chance as each), so their intersection is a confidence sequence too, and
// a bound once reached stays reached.
type Bound struct {
	Lo  float64 `json:"lo"`
	Hi  float64 `json:"hi"`
	Set bool    `json:"set"`
}

// meets reports whether [lo, hi] and b share a point.
func (b Bound) meets(lo, hi float64) bool { return max(lo, b.Lo) <= min(hi, b.Hi) }

// meet narrows b by iv.
func (b *Bound) meet(iv confseq.Interval) {
	if !b.Set {
		*b = Bound{Lo: iv.Lo, Hi: iv.Hi, Set: true}
		return
	}
	b.Lo, b.Hi = max(b.Lo, iv.Lo), min(b.Hi, iv.Hi)
}

// Kinds of checks, as CheckResult.Kind names them.
const (
	KindComparison = config.CheckComparison
	KindAbsolute   = config.CheckAbsolute
)

// arms is what a judgement reads of the two arms: their accumulators and
// metrics, and their matched pairs (nil: none) with the cut-offs ks.
type arms struct {
	cand, base   *window.Cumulative
	candM, baseM map[string]window.Value
	pairs        *window.Matches
	ks           []int
	cited        *citedSample // pairs' cited ΔS, once read (citedPairs)
	// narrowing: the judgement narrows the running bounds it is given,
	// and reads no more of each check than its sequence now.
	narrowing bool
	// narrows, in a narrowing, are the checks it narrows; the others are
	// not judged.
	narrows  []bool
	spare    *citedSample // an outdated one whose memory citedPairs reuses
	citedGen uint64       // the pairs' Matches.TakeCitedChanges generation
	keep     *citedKept   // where the analysis keeps cited (citedKeepLocked)
	// memo, outside a narrowing, holds the paired sequences judged under
	// the same hold of the lock (nil: none).
	memo pairedMemo
}

// citedPairs is the pairs' cited ΔS, unpacked on first use.
func (a *arms) citedPairs() *citedSample {
	if a.cited == nil {
		a.cited, a.spare = newCitedSample(a.pairs.Cited, a.spare), nil
	}
	return a.cited
}

// Each check's interval holds on its failing side at level 1 − α/m (m
// checks with data), so that a healthy candidate is ever failed by any of
// them with probability at most α (SPEC §5.2); and on its passing side at
// 1 − α. A pass needs every check to pass: a candidate beyond tolerance on
// some check passes only if that check's own passing side errs, with
// probability at most α, whatever the other checks do (an
// intersection–union test: Berger, Multiparameter hypothesis testing and
// acceptance sampling, Technometrics 1982). Splitting α over the checks on
// the passing side too would guard against nothing more, and would cost a
// healthy candidate about a third more events to pass.

// checkLevels are the levels of c's two sides: fail on the one that fails
// it, pass on the other.
func checkLevels(k checkKind, c config.AnalysisCheck, lowerIsBetter bool, pass, fail float64) confseq.Levels {
	if k.lowPasses(c, lowerIsBetter) {
		return confseq.Levels{Lo: pass, Hi: fail}
	}
	return confseq.Levels{Lo: fail, Hi: pass}
}

// judge judges checks over the two arms at level alpha (checkLevels), each
// check's sequence intersected with its running Bound in run (nil: none),
// and returns the results and the analysis verdict.
func judge(checks []config.AnalysisCheck, a *arms, alpha float64, run []Bound) ([]CheckResult, Verdict, string) {
	res := make([]CheckResult, len(checks))
	withData := 0
	for i, c := range checks {
		vc, vb := a.candM[c.Metric], a.baseM[c.Metric]
		if startCheck(c, &res[i], Samples{Arm: vc.Samples, Baseline: vb.Samples}) {
			withData++
		}
		if vc.Samples > 0 {
			res[i].ArmValue = ptr(vc.Value)
		}
		if vb.Samples > 0 {
			res[i].BaselineValue = ptr(vb.Value)
		}
	}
	fail := alpha / float64(max(withData, 1))
	for i, c := range checks {
		r := &res[i]
		r.Level, r.PassLevel = 1-fail, 1-alpha
		if r.Verdict == NoData {
			continue
		}
		if a.narrows != nil && !a.narrows[i] {
			continue
		}
		var b Bound
		if run != nil {
			b = run[i]
		}
		judgeCheck(c, r, a, alpha, fail, b)
	}
	v, reason := verdictOf(res, withData)
	return res, v, reason
}

// startCheck fills in what r shows of c before it is judged, with s its
// samples per arm, and reports whether c has data; a check without is
// no_data, one of a kind without a judge inconclusive.
func startCheck(c config.AnalysisCheck, r *CheckResult, s Samples) bool {
	*r = CheckResult{Name: c.Name, Metric: c.Metric, Kind: c.Kind(), LowerIsBetter: window.LowerIsBetter(c.Metric),
		MinSamples: c.MinSamples, Samples: s, Pairing: PairedNone}
	k := checkKinds[c.Kind()]
	if k == nil {
		r.Verdict, r.Reason = Inconclusive, fmt.Sprintf("no judge for check kind %q", c.Kind())
		return true
	}
	k.describe(c, r)
	if !k.hasData(s) {
		r.Verdict, r.Reason = NoData, "no sample of "+c.Metric+" in either arm"
		return false
	}
	return true
}

// verdictOf is the analysis verdict of judged checks, withData of them
// with data: fail when any fails, pass when every one with data passes.
func verdictOf(res []CheckResult, withData int) (Verdict, string) {
	var failing, undecided []string
	passed := 0
	for _, r := range res {
		switch r.Verdict {
		case NoData:
		case Fail:
			failing = append(failing, r.Name)
		case Pass:
			passed++
		default:
			undecided = append(undecided, r.Name)
		}
	}
	switch {
	case len(failing) > 0:
		return Fail, "failing: " + strings.Join(failing, ", ")
	case withData == 0:
		return Inconclusive, "no data yet for any check"
	case passed == withData:
		return Pass, ""
	}
	return Inconclusive, "undecided: " + strings.Join(undecided, ", ")
}

// FixedSample is what JudgeFixed reads of two arms seen once, whole.
type FixedSample interface {
	// Samples are each arm's samples of metric.
	Samples(metric string) Samples
	// Interval fills r's estimate, interval (each side at its level of
	// lv) and pairing for c, or says why there is none.
	Interval(c config.AnalysisCheck, lv confseq.Levels, r *CheckResult) (why string)
}

// JudgeFixed judges checks once over a fixed sample (`eval --baseline`,
// SPEC §5.3) as a reading of an analysis judges them, but on intervals
// that hold at one look: each side at its level (checkLevels), min_samples
// per arm, the verdict of every check and of the whole.
func JudgeFixed(checks []config.AnalysisCheck, alpha float64, fs FixedSample) ([]CheckResult, Verdict, string) {
	res := make([]CheckResult, len(checks))
	withData := 0
	for i, c := range checks {
		if startCheck(c, &res[i], fs.Samples(c.Metric)) {
			withData++
		}
	}
	fail := alpha / float64(max(withData, 1))
	for i, c := range checks {
		r := &res[i]
		r.Level, r.PassLevel = 1-fail, 1-alpha
		k := checkKinds[c.Kind()]
		if r.Verdict != "" {
			continue
		}
		if why := k.waiting(r.Samples); why != "" {
			r.Verdict, r.Reason = Inconclusive, why
			continue
		}
		if why := fs.Interval(c, checkLevels(k, c, r.LowerIsBetter, alpha, fail), r); why != "" {
			r.Verdict, r.Reason = Inconclusive, why
			continue
		}
		if why := k.tooFew(c, r.Samples); why != "" {
			r.Verdict, r.Reason = Inconclusive, why
			continue
		}
		r.Verdict, r.Reason = k.decide(c, r.LowerIsBetter, confseq.Interval{Lo: r.Interval[0], Hi: r.Interval[1]})
	}
	v, reason := verdictOf(res, withData)
	return res, v, reason
}

func ptr(v float64) *float64 { return &v }

// judgeCheck fills in r's estimate, interval and verdict with the judge
// of c's kind; r has data. The interval is the sequence now intersected
// with run; when they do not meet (movedOff), the arm's quality has moved
// during the analysis, and the sequence now is judged alone.
func judgeCheck(c config.AnalysisCheck, r *CheckResult, a *arms, pass, fail float64, run Bound) {
	k := checkKinds[c.Kind()]
	if k == nil {
		r.Verdict, r.Reason = Inconclusive, fmt.Sprintf("no judge for check kind %q", c.Kind())
		return
	}
	if why := k.waiting(r.Samples); why != "" {
		r.Verdict, r.Reason = Inconclusive, why
		return
	}
	if a.narrowing {
		r.past = run
	}
	est, iv := k.bounds(c, a, checkLevels(k, c, r.LowerIsBetter, pass, fail), r)
	r.Estimate = ptr(est)
	tooFew := k.tooFew(c, r.Samples)
	enough := tooFew == ""
	r.now, r.nowOK = iv, enough
	if run.Set && enough && !movedOff(r, iv, run) {
		iv = confseq.Interval{Lo: max(iv.Lo, run.Lo), Hi: min(iv.Hi, run.Hi)}
	}
	r.Interval = &[2]float64{iv.Lo, iv.Hi}
	if !enough {
		r.Verdict, r.Reason = Inconclusive, tooFew
		return
	}
	r.Verdict, r.Reason = k.decide(c, r.LowerIsBetter, iv)
}

// movedOff reports whether the sequence now, or either of the paired and
// unpaired sequences it combines, no longer meets the running bound: a
// canary that degrades moves its unpaired sequence at once, while its
// paired one waits for the visits to close, and the bound reached before
// would keep its pass.
func movedOff(r *CheckResult, iv confseq.Interval, run Bound) bool {
	if !run.meets(iv.Lo, iv.Hi) {
		return true
	}
	for _, s := range []*[2]float64{r.PairedInterval, r.UnpairedInterval} {
		if s != nil && !run.meets(s[0], s[1]) {
			return true
		}
	}
	return false
}

// decide places the interval against c's tolerance or threshold with the
// judge of c's kind.
func decide(c config.AnalysisCheck, lowerBetter bool, iv confseq.Interval) (Verdict, string) {
	k := checkKinds[c.Kind()]
	if k == nil {
		return Inconclusive, fmt.Sprintf("no judge for check kind %q", c.Kind())
	}
	return k.decide(c, lowerBetter, iv)
}

// span writes an interval for the reasons.
func span(iv confseq.Interval) string { return "[" + fmt4(iv.Lo) + ", " + fmt4(iv.Hi) + "]" }

func fmt4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// oneSampleMargin is where a one-sample boundary is tuned to be tightest:
// about the margin between the shipped eligibility thresholds and a
// healthy arm.
const oneSampleMargin = 0.02

// quantileOf maps a quantile metric to its probability.
func quantileOf(metric string) float64 {
	if strings.HasSuffix(metric, "_p90") {
		return 0.9
	}
	return 0.5
}

// quantilePlanN is the sample count at which a quantile's boundary is
// tuned to be tightest.
const quantilePlanN = 4000

// quantileBoundary is the boundary of a p-quantile at level, tuned to be
// tightest at quantilePlanN samples.
func quantileBoundary(level, p float64) confseq.Boundary {
	return boundaryFor(level, quantilePlanN*p*(1-p))
}

// rankBounds is the p-quantile's bounds in one arm: the order statistics of
// ranks ⌈np − u⌉ and ⌊np + u⌋ + 1 (1-based); 0 and 1, ΔS's range, when the
// rank is outside the sample. The values come in visits, whose design
// effect widens u (confseq.QuantileRanks).
func rankBounds(b confseq.Boundary, cu *window.Cumulative, p float64) (lo, hi float64) {
	n := float64(cu.CitedCount())
	flo, fhi := confseq.QuantileRanks(b, p, n, cu.CitedDesignEffect())
	lo, hi = 0, 1
	if k := math.Ceil(flo * n); k >= 1 {
		lo = cu.CitedOrderStat(k - 1)
	}
	if k := math.Floor(fhi*n) + 1; k <= n {
		hi = cu.CitedOrderStat(k - 1)
	}
	return lo, hi
}

// kappaVariance is one arm's κ and its large-sample variance (Cohen),
// the chance agreement p_e worked back from κ and the agreement p_o.
func kappaVariance(m map[string]window.Value) (kappa, variance float64) {
	k, ag := m["kappa"], m["agreement"]
	po := ag.Value
	pe := 0.5
	if k.Value < 1 {
		pe = (po - k.Value) / (1 - k.Value)
	}
	return k.Value, confseq.KappaVariance(po, min(max(pe, 0), 0.99), float64(k.Samples))
}

// boundaries caches tuned boundaries: tuning searches, reading must not.
var boundaries sync.Map // [2]float64{level, planned} → confseq.Boundary

func boundaryFor(level, planned float64) confseq.Boundary {
	key := [2]float64{level, planned}
	if b, ok := boundaries.Load(key); ok {
		return b.(confseq.Boundary)
	}
	b := confseq.Tuned(level, planned)
	boundaries.Store(key, b)
	return b
}
