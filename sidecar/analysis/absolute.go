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

func init() { checkKinds[config.CheckAbsolute] = absolute{} }

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
func (absolute) bounds(c config.AnalysisCheck, a *arms, lv confseq.Levels, _ *CheckResult) (float64, confseq.Interval) {
	bLo := boundaryFor(lv.Lo, confseq.PlannedInformation(lv.Lo, oneSampleMargin))
	bHi := boundaryFor(lv.Hi, confseq.PlannedInformation(lv.Hi, oneSampleMargin))
	switch window.KindOf(c.Metric) {
	case window.Quantile:
		p := quantileOf(c.Metric)
		lo, _ := rankBounds(quantileBoundary(lv.Lo, p), a.cand, p)
		_, hi := rankBounds(quantileBoundary(lv.Hi, p), a.cand, p)
		return a.candM[c.Metric].Value, confseq.Interval{Lo: lo, Hi: hi}
	case window.Kappa:
		kc, vc := kappaVariance(a.candM)
		return kc, confseq.Interval{Lo: max(-1, kc-confseq.Diff(bLo, vc)), Hi: min(1, kc+confseq.Diff(bHi, vc))}
	}
	// proportions: config admits no other kind
	vc := a.candM[c.Metric]
	return vc.Value, confseq.Interval{Lo: confseq.Proportion(bLo, vc.Num, vc.Den).Lo, Hi: confseq.Proportion(bHi, vc.Num, vc.Den).Hi}
}

// lowPasses: `>=` and `>` pass on the lower bound, `<=` and `<` on the
// upper.
func (absolute) lowPasses(c config.AnalysisCheck, _ bool) bool { return c.Op == ">=" || c.Op == ">" }

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

// present: the arm's value against the threshold, passing on the op's
// side.
func (absolute) present(r CheckResult) Presentation {
	p := Presentation{Op: r.Op}
	if r.Threshold != nil {
		p.Limit = *r.Threshold
	}
	return p
}
