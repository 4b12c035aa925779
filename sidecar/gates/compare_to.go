package gates

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// compareTo judges arm − compare_to arm over the same window, each arm
// with min_samples: with confidence on a proportion the Newcombe interval
// of the difference; on the cited ΔS quantiles a failing point difference
// only when a Mann-Whitney U test backs it; else the point difference.
// It never judges the compare_to arm itself.
type compareTo struct{}

func init() { kinds[config.GateCompareTo] = compareTo{} }

func (compareTo) judge(g *config.Gate, metric window.Kind, arm string, v window.Value, c *evalCache) judgement {
	ref, jr, ok := metricOf(c, g.CompareTo, g.Window, g.Metric)
	if !ok {
		return jr
	}
	samples := min(v.Samples, ref.Samples)
	diff := v.Value - ref.Value
	j := judgement{value: ptr(diff), samples: samples}
	name := fmt.Sprintf("%s %s − %s", g.Metric, arm, g.CompareTo)
	if minN := minSamples(g); samples < minN {
		j.reason = fmt.Sprintf("samples %s %d, %s %d: fewer than min_samples %d", arm, v.Samples, g.CompareTo, ref.Samples, minN)
		return j
	}
	switch {
	case metric == window.Proportion && g.Confidence > 0 && g.Confidence < 1 && v.Den > 0 && ref.Den > 0:
		lo, hi := Newcombe(v.Num, v.Den, ref.Num, ref.Den, g.Confidence)
		j.interval = &[2]float64{lo, hi}
		j.out, j.reason = judgeInterval(g, lo, hi, fmt.Sprintf("%s %s, Newcombe %s", name, fmtF(diff), pct(g.Confidence)))
	case metric == window.Quantile && (g.Metric == "delta_s_median" || g.Metric == "delta_s_p90"):
		j.out, j.reason = judgePoint(g, name, diff)
		if j.out == outPass {
			return j
		}
		conf := g.Confidence
		if !(conf > 0 && conf < 1) {
			conf = DefaultMWConfidence
		}
		mw := MannWhitney(c.deltaS(arm, g.Window), c.deltaS(g.CompareTo, g.Window))
		failDir := 1 // arm larger is worse for < and <=
		if g.Op == ">=" || g.Op == ">" {
			failDir = -1
		}
		test := fmt.Sprintf("Mann-Whitney U=%s z=%.3f p=%.3g (n %g vs %g)", fmtF(mw.U), mw.Z, mw.P, mw.NX, mw.NY)
		if mw.Direction == failDir && mw.P < 1-conf {
			j.reason += "; " + test + ": significant at " + pct(conf)
		} else {
			j.out = outInconclusive
			j.reason += "; " + test + ": not significant at " + pct(conf) + " in the failing direction"
		}
	default:
		j.out, j.reason = judgePoint(g, name, diff)
	}
	return j
}

func (compareTo) skips(g *config.Gate, arm string) bool { return arm == g.CompareTo }

// subject: "recall_at_5 of canary − live".
func (compareTo) subject(g *config.Gate, arm string) string {
	return fmt.Sprintf("%s of %s − %s", g.Metric, arm, g.CompareTo)
}

func (compareTo) point(g *config.Gate, arm string, value func(string) (float64, bool)) (float64, bool) {
	v, ok := value(arm)
	ref, refOK := value(g.CompareTo)
	return v - ref, ok && refOK
}

// promQL: the difference of the arm's value and the reference arm's of
// the same scrape target on the failing side, where both have
// min_samples (alert.Rules shows the expression).
func (compareTo) promQL(g *config.Gate, fail string) PromQL {
	arms := armMatcher(g.Arms, g.CompareTo)
	ref := ",arm=" + strconv.Quote(g.CompareTo)
	q := PromQL{
		Expr: "(\n  " + selector(g, "shadoweval_window_value", arms) +
			"\n  - ignoring(arm) group_left\n  " + selector(g, "shadoweval_window_value", ref) +
			"\n) " + fail + " " + promFloat(g.Threshold),
		What:   fmt.Sprintf("%s over %s on arm {{ $labels.arm }} minus arm %s", g.Metric, g.Window, g.CompareTo),
		Approx: pointValueNote(g),
	}
	if g.MinSamples > 0 {
		q.Expr += "\nand\n" + samplesGuard(g, arms) + "\nand ignoring(arm)\n" + samplesGuard(g, ref)
		q.Samples = fmt.Sprintf(" with at least %d samples on both arms", g.MinSamples)
	}
	if strings.HasPrefix(g.Metric, "delta_s") {
		q.Approx += " The sidecar judges a Mann-Whitney U test; this rule judges the difference of the values."
	}
	return q
}
