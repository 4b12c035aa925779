package config

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/shadoweval/shadoweval/window"
)

// The kinds of gates and of analysis checks, each named here once.
// Validate looks a gate's or a check's kind up in gateKinds or checkKinds
// for what only that kind has; the sidecar's engines (sidecar/gates,
// sidecar/analysis) register their judge of each kind under the same name
// and test that they judge exactly GateKinds and CheckKinds. A kind
// follows from the keys a gate or check sets: the YAML has no kind key.
const (
	// GateThreshold judges the arm's own value of the metric.
	GateThreshold = "threshold"
	// GateCompareTo judges arm − compare_to arm over the same window.
	GateCompareTo = "compare_to"
	// CheckComparison judges candidate − baseline against a tolerance.
	CheckComparison = "comparison"
	// CheckAbsolute judges the candidate's own value: value op threshold.
	CheckAbsolute = "absolute"
)

// Kind is the gate's kind: GateCompareTo when it names a compare_to arm,
// else GateThreshold.
func (g Gate) Kind() string {
	if g.CompareTo != "" {
		return GateCompareTo
	}
	return GateThreshold
}

// Kind is the check's kind: CheckAbsolute when it has an op, else
// CheckComparison.
func (c AnalysisCheck) Kind() string {
	if c.Op != "" {
		return CheckAbsolute
	}
	return CheckComparison
}

// GateKinds lists the gate kinds, sorted.
func GateKinds() []string { return slices.Sorted(maps.Keys(gateKinds)) }

// CheckKinds lists the analysis check kinds, sorted.
func CheckKinds() []string { return slices.Sorted(maps.Keys(checkKinds)) }

// gateKind is what validation knows of one kind of gate.
type gateKind struct {
	// relative: the threshold bounds a difference of two arms, so its
	// range is the metric's range mirrored around 0.
	relative bool
	// check, when set, reports the problems of the kind's own keys of
	// gate i, whose metric is of kind metric (known false: no kind).
	check func(k *checker, i int, metric window.Kind, known bool)
}

var gateKinds = map[string]gateKind{
	GateThreshold: {},
	GateCompareTo: {relative: true, check: (*checker).compareTo},
}

// checkKinds report the problems of the kind's own keys of check i of
// set, whose metric is of kind metric (known false: no range to check).
var checkKinds = map[string]func(k *checker, set string, i int, metric window.Kind, known bool){
	CheckComparison: (*checker).comparisonCheck,
	CheckAbsolute:   (*checker).absoluteCheck,
}

func (k *checker) compareTo(i int, metric window.Kind, known bool) {
	g := &k.c.Gates[i]
	switch {
	case armProblem(g.CompareTo) != "":
		k.gatef(i, "compare_to", "compare_to %s", armProblem(g.CompareTo))
	case known && (metric == window.Kappa || metric == window.Distance):
		k.gatef(i, "compare_to", "compare_to is not supported on %s metric %q", kindName(metric), g.Metric)
	case slices.Contains(g.Arms, g.CompareTo):
		k.gatef(i, "compare_to", "compare_to %q is one of the gate's own arms", g.CompareTo)
	}
}

func (k *checker) comparisonCheck(set string, i int, metric window.Kind, known bool) {
	ch := &k.c.Analysis.Checks[set][i]
	if ch.Threshold != 0 {
		k.checkf(set, i, "threshold", "threshold goes with op (an absolute check); a comparison check takes tolerance")
	}
	hi := 1.0
	if metric == window.Kappa {
		hi = 2 // κ spans [-1, 1]
	}
	switch {
	case math.IsNaN(ch.Tolerance) || math.IsInf(ch.Tolerance, 0):
		k.checkf(set, i, "tolerance", "tolerance must be a finite number")
	case known && !(ch.Tolerance >= 0 && ch.Tolerance < hi):
		k.checkf(set, i, "tolerance", "tolerance %s is out of range [0, %s) for %s metric %q",
			fmtFloat(ch.Tolerance), fmtFloat(hi), kindName(metric), ch.Metric)
	case !known && ch.Tolerance < 0:
		k.checkf(set, i, "tolerance", "tolerance %s is negative", fmtFloat(ch.Tolerance))
	}
}

func (k *checker) absoluteCheck(set string, i int, metric window.Kind, known bool) {
	ch := &k.c.Analysis.Checks[set][i]
	if !slices.Contains(gateOps, ch.Op) {
		k.checkf(set, i, "op", "op %q is not one of %s", ch.Op, strings.Join(gateOps, ", "))
	}
	if ch.Tolerance != 0 {
		k.checkf(set, i, "tolerance", "tolerance goes with a comparison check; an absolute check (op set) takes threshold")
	}
	if math.IsNaN(ch.Threshold) || math.IsInf(ch.Threshold, 0) {
		k.checkf(set, i, "threshold", "threshold must be a finite number")
	} else if known {
		if why := thresholdProblem(ch.Metric, metric, false, ch.Threshold); why != "" {
			k.checkf(set, i, "threshold", "%s", why)
		}
	}
}
