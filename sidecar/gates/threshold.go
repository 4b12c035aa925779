package gates

import (
	"fmt"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// threshold judges the arm's own value of the metric: the point value,
// or with confidence on a proportion its Wilson interval at that level.
type threshold struct{}

func init() { kinds[config.GateThreshold] = threshold{} }

func (threshold) judge(g *config.Gate, metric window.Kind, _ string, v window.Value, _ *evalCache) judgement {
	if minN := minSamples(g); v.Samples < minN {
		return judgement{samples: v.Samples, value: ptr(v.Value),
			reason: fmt.Sprintf("%d samples < min_samples %d", v.Samples, minN)}
	}
	j := judgement{value: ptr(v.Value), samples: v.Samples}
	if g.Confidence > 0 && g.Confidence < 1 && metric == window.Proportion && v.Den > 0 {
		lo, hi := Wilson(v.Num, v.Den, g.Confidence)
		j.interval = &[2]float64{lo, hi}
		j.out, j.reason = judgeInterval(g, lo, hi, fmt.Sprintf("%s %s, Wilson %s", g.Metric, fmtF(v.Value), pct(g.Confidence)))
		return j
	}
	j.out, j.reason = judgePoint(g, g.Metric, v.Value)
	return j
}

func (threshold) skips(*config.Gate, string) bool { return false }

func (threshold) subject(g *config.Gate, _ string) string { return g.Metric }

func (threshold) point(_ *config.Gate, arm string, value func(string) (float64, bool)) (float64, bool) {
	return value(arm)
}

// promQL: the arm's value on the failing side, where it has min_samples.
func (threshold) promQL(g *config.Gate, fail string) PromQL {
	arms := armMatcher(g.Arms, "")
	q := PromQL{
		Expr:   selector(g, "shadoweval_window_value", arms) + " " + fail + " " + promFloat(g.Threshold),
		What:   fmt.Sprintf("%s over %s on arm {{ $labels.arm }}", g.Metric, g.Window),
		Approx: pointValueNote(g),
	}
	if g.MinSamples > 0 {
		q.Expr += "\nand\n" + samplesGuard(g, arms)
		q.Samples = fmt.Sprintf(" with at least %d samples", g.MinSamples)
	}
	return q
}
