package analysis

import (
	"fmt"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// absolute judges the candidate's own value of the metric against
// `value op threshold` (the eligibility of seed 001), with a one-sample
// sequence; the baseline's value is shown only.
type absolute struct{}

func (absolute) describe(c config.AnalysisCheck, r *CheckResult) {
	th := c.Threshold
	r.Op, r.Threshold = c.Op, &th
}

func (absolute) hasData(s Samples) bool { return s.Arm > 0 }

func (absolute) waiting(Samples) string { return "" }

// bounds: a proportion's one-sample sequence; a cited-ΔS quantile between
// two order statistics of the candidate; κ with Cohen's large-sample
// variance. The boundaries are tuned to be tightest at oneSampleMargin
// (quantilePlanN samples for quantiles).
func (absolute) bounds(c config.AnalysisCheck, a *arms, level float64, _ *CheckResult) (float64, confseq.Interval) {
	switch window.KindOf(c.Metric) {
	case window.Quantile:
		p := quantileOf(c.Metric)
		lo, hi := rankBounds(quantileBoundary(level, p), a.cand, p)
		return a.candM[c.Metric].Value, confseq.Interval{Lo: lo, Hi: hi}
	case window.Kappa:
		kc, vc := kappaVariance(a.candM)
		b := boundaryFor(level, confseq.PlannedInformation(level, oneSampleMargin))
		r := confseq.Diff(b, vc)
		return kc, confseq.Interval{Lo: max(-1, kc-r), Hi: min(1, kc+r)}
	}
	// proportions: config admits no other kind
	vc := a.candM[c.Metric]
	b := boundaryFor(level, confseq.PlannedInformation(level, oneSampleMargin))
	return vc.Value, confseq.Proportion(b, vc.Num, vc.Den)
}

func (absolute) tooFew(c config.AnalysisCheck, s Samples) string {
	if s.Arm >= int64(c.MinSamples) {
		return ""
	}
	return fmt.Sprintf("samples %d, need %d", s.Arm, c.MinSamples)
}

func (absolute) decide(c config.AnalysisCheck, _ bool, iv confseq.Interval) (Verdict, string) {
	t := c.Threshold
	var pass, fail bool
	switch c.Op {
	case ">=":
		pass, fail = iv.Lo >= t, iv.Hi < t
	case ">":
		pass, fail = iv.Lo > t, iv.Hi <= t
	case "<=":
		pass, fail = iv.Hi <= t, iv.Lo > t
	case "<":
		pass, fail = iv.Hi < t, iv.Lo >= t
	}
	want := c.Metric + " " + c.Op + " " + fmt4(t)
	switch {
	case fail:
		return Fail, span(iv) + " entirely breaks " + want
	case pass:
		return Pass, span(iv) + " entirely meets " + want
	}
	return Inconclusive, span(iv) + " straddles " + fmt4(t)
}
