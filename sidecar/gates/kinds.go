package gates

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// gateKind is one kind of gate: how the engine judges it, and how
// Prometheus approximates it on the sidecar's own series. Each kind lives
// in a file of its own.
type gateKind interface {
	// judge judges gate g, whose metric is of kind metric, for arm, whose
	// value v of the metric over g's window is usable (metricOf).
	judge(g *config.Gate, metric window.Kind, arm string, v window.Value, c *evalCache) judgement
	// skips tells an arm the gate never judges, even when it lists it.
	skips(g *config.Gate, arm string) bool
	// promQL is g as a Prometheus expression; fail is the failing side of
	// g's op.
	promQL(g *config.Gate, fail string) PromQL
	// subject names what g judges on arm, in words (Result.Subject).
	subject(g *config.Gate, arm string) string
	// point is what g judges on arm from the point values of its metric
	// (value gives an arm's); false when a value is missing.
	point(g *config.Gate, arm string, value func(arm string) (float64, bool)) (float64, bool)
}

// kinds are the gate kinds the engine judges, under the names config
// gives them (config.GateKinds); the engine dispatches through it. Each
// kind adds itself from its own file (in its init).
var kinds = map[string]gateKind{}

// PromQL is a gate as Prometheus judges it on the sidecar's own series
// (package sidecar/alert writes the rule files around it).
type PromQL struct {
	// Expr has a sample for each arm on which the gate fails with enough
	// samples.
	Expr string
	// What names the judged quantity in the rule's description, with the
	// arm as the alert template's {{ $labels.arm }}.
	What string
	// Samples is the sample condition in words (" with at least 100
	// samples"), "" when the gate has none.
	Samples string
	// Approx says, in whole sentences each led by a space, where Expr
	// approximates the engine's judgement; "" where it does not.
	Approx string
}

// PromQLOf is gate g as Prometheus judges it; fail is the failing side
// of g's op (the op negated).
func PromQLOf(g *config.Gate, fail string) (PromQL, error) {
	k, ok := kinds[g.Kind()]
	if !ok {
		return PromQL{}, fmt.Errorf("no judge for gate kind %q", g.Kind())
	}
	return k.promQL(g, fail), nil
}

// PointFails says whether gate g, judged on arm's point values of its
// metric (value gives an arm's, false when it has none), is on its
// failing side: a hint from values shown elsewhere (the demo's table),
// with no window, min_samples or interval. False when g never judges arm
// or a value is missing.
func PointFails(g *config.Gate, arm string, value func(arm string) (float64, bool)) bool {
	k, ok := kinds[g.Kind()]
	if !ok || k.skips(g, arm) || !validOp(g.Op) {
		return false
	}
	x, ok := k.point(g, arm, value)
	return ok && !passes(g.Op, x, g.Threshold)
}

// selector is the series name of g's metric and window on the arms
// arm matches (a matcher with its leading comma, or "").
func selector(g *config.Gate, name, arm string) string {
	return fmt.Sprintf("%s{metric=%s,window=%s%s}", name, strconv.Quote(g.Metric), strconv.Quote(g.Window), arm)
}

// samplesGuard holds where the arms arm matches have min_samples.
func samplesGuard(g *config.Gate, arm string) string {
	return selector(g, "shadoweval_window_samples", arm) + " >= " + strconv.Itoa(g.MinSamples)
}

// pointValueNote says that the rule judges the point value where the
// engine judges a confidence interval.
func pointValueNote(g *config.Gate) string {
	if g.Confidence <= 0 {
		return ""
	}
	return fmt.Sprintf(" The sidecar judges the %s confidence interval; this rule judges the point value.",
		strconv.FormatFloat(g.Confidence*100, 'g', -1, 64)+"%")
}

// promFloat writes x the shortest way that reads back exactly.
func promFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// armMatcher is the arm label matcher of a gate's own arms without the
// excluded one, with its leading comma; "" for every arm.
func armMatcher(arms []string, excluded string) string {
	var list []string
	for _, a := range arms {
		if a != excluded {
			list = append(list, a)
		}
	}
	switch {
	case len(list) == 0 && excluded != "":
		return ",arm!=" + strconv.Quote(excluded)
	case len(list) == 0:
		return ""
	case len(list) == 1:
		return ",arm=" + strconv.Quote(list[0])
	}
	for i, a := range list {
		list[i] = regexp.QuoteMeta(a)
	}
	return ",arm=~" + strconv.Quote(strings.Join(list, "|"))
}
