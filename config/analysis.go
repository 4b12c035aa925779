package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/shadoweval/shadoweval/window"
)

// AnalysisConfig is the analysis section (SPEC §5.2): canary analyses.
type AnalysisConfig struct {
	Alpha       float64                    `yaml:"alpha"`        // default 0.01; chance of ever failing a healthy candidate
	Checks      map[string][]AnalysisCheck `yaml:"checks"`       // named check sets; "canary" and "eligibility" ship
	MaxActive   int                        `yaml:"max_active"`   // default 64
	MaxDuration Duration                   `yaml:"max_duration"` // default 24h
	Retention   Duration                   `yaml:"retention"`    // default 24h
	KVBucket    string                     `yaml:"kv_bucket"`    // default "shadoweval_analyses"
	// PairHorizon is the most event time between a candidate event and the
	// baseline event it is paired with (SPEC §5.3); default 10m.
	PairHorizon Duration `yaml:"pair_horizon"`
	// PairMaxPending bounds the events (and, apart, the judgement pairs)
	// of each compared pair of arms waiting for a partner; past it the
	// oldest wait no longer. Default 100000.
	PairMaxPending int `yaml:"pair_max_pending"`
	// VisitGap is the most event time between a candidate's runs of one
	// qid in one visit (paraphrases × seeds asked together), whose pairs
	// the paired comparison takes as one observation; default 10s.
	VisitGap Duration `yaml:"visit_gap"`
}

// AnalysisCheck is one check of a set. With Op empty it is a comparison check:
// d = candidate − baseline of Metric, failing when d is beyond Tolerance on the
// metric's failing side (window.LowerIsBetter decides the side). With Op set it
// is an absolute check: the candidate's own value must satisfy `value Op Threshold`.
type AnalysisCheck struct {
	Name       string  `yaml:"name"` // default: Metric
	Metric     string  `yaml:"metric"`
	Tolerance  float64 `yaml:"tolerance"`   // comparison checks
	Op         string  `yaml:"op"`          // absolute checks: >=, >, <=, <
	Threshold  float64 `yaml:"threshold"`   // absolute checks
	MinSamples int     `yaml:"min_samples"` // default DefaultMinSamples(Metric)
	Line       int     `yaml:"-"`           // line in the file, 0 when built in code
}

// Absolute tells an absolute check (the candidate's own value against
// Threshold) from a comparison with the baseline.
func (c AnalysisCheck) Absolute() bool { return c.Kind() == CheckAbsolute }

// Defaults of the analysis section.
const (
	DefaultAnalysisAlpha     = 0.01
	DefaultAnalysisMaxActive = 64
	DefaultAnalysisKVBucket  = "shadoweval_analyses"
	defaultAnalysisDuration  = 24 * time.Hour // max_duration and retention
	DefaultPairHorizon       = 10 * time.Minute
	DefaultPairMaxPending    = 100000
	DefaultVisitGap          = 10 * time.Second
)

// The shipped check sets; the verdict endpoints name them (SPEC §6), so a
// configuration may replace them but not drop them.
const (
	CanaryCheckSet      = "canary"
	EligibilityCheckSet = "eligibility"
)

var shippedCheckSets = []string{CanaryCheckSet, EligibilityCheckSet}

// DefaultCheckSets returns fresh copies of the shipped check sets of SPEC
// §5.2: "canary" compares the candidate with the baseline; "eligibility"
// holds the seed 001 floors a shadow arm must clear before a canary starts.
func DefaultCheckSets() map[string][]AnalysisCheck {
	cmp := func(metric string) AnalysisCheck {
		return AnalysisCheck{Name: metric, Metric: metric, Tolerance: 0.02, MinSamples: DefaultMinSamples(metric)}
	}
	// κ = (p_o − p_e)/(1 − p_e) moves 1/(1 − p_e) times as far as the
	// agreement p_o it comes from, about twice with the seed 003 labels:
	// 0.05 in κ is the 0.02 of agreement. At 0.02 it would need about
	// fourteen times the pairs to pass (internal/sim/analysissim).
	kappa := cmp("kappa")
	kappa.Tolerance = 0.05
	abs := func(metric, op string, threshold float64) AnalysisCheck {
		return AnalysisCheck{Name: metric, Metric: metric, Op: op, Threshold: threshold, MinSamples: DefaultMinSamples(metric)}
	}
	return map[string][]AnalysisCheck{
		CanaryCheckSet: {
			cmp("precision"), cmp("chr"), cmp("over_refusal"), cmp("under_refusal"),
			cmp("recall_at_5"), cmp("coverage"), cmp("citation_accuracy"), cmp("lambda_convergence"),
			cmp("delta_s_median"), cmp("delta_s_p90"), cmp("agreement"), kappa,
		},
		EligibilityCheckSet: {
			abs("coverage", ">=", 0.70),
			abs("citation_accuracy", ">=", 0.95),
			abs("delta_s_median", "<=", 0.40),
			abs("delta_s_p90", "<=", 0.55),
			abs("lambda_convergence", ">=", 0.95),
			cmp("recall_at_5"),
		},
	}
}

func defaultAnalysis() AnalysisConfig {
	return AnalysisConfig{
		Alpha:          DefaultAnalysisAlpha,
		Checks:         DefaultCheckSets(),
		MaxActive:      DefaultAnalysisMaxActive,
		MaxDuration:    Duration(defaultAnalysisDuration),
		Retention:      Duration(defaultAnalysisDuration),
		KVBucket:       DefaultAnalysisKVBucket,
		PairHorizon:    Duration(DefaultPairHorizon),
		PairMaxPending: DefaultPairMaxPending,
		VisitGap:       Duration(DefaultVisitGap),
	}
}

// clone is a deep copy: the sets share no slices with a.
func (a AnalysisConfig) clone() AnalysisConfig {
	if a.Checks != nil {
		sets := make(map[string][]AnalysisCheck, len(a.Checks))
		for name, set := range a.Checks {
			sets[name] = slices.Clone(set)
		}
		a.Checks = sets
	}
	return a
}

// fillAnalysisDefaults names each check that has no name after its metric
// and gives min_samples 0 its per-metric default.
func (c *Config) fillAnalysisDefaults() {
	for _, set := range c.Analysis.Checks {
		for i := range set {
			ch := &set[i]
			if ch.Name == "" {
				ch.Name = ch.Metric
			}
			if ch.MinSamples == 0 {
				ch.MinSamples = DefaultMinSamples(ch.Metric)
			}
		}
	}
}

// checkSetRE is a check set name: it goes in URLs and JSON bodies.
var checkSetRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func (k *checker) analysis() {
	a := &k.c.Analysis
	if !(a.Alpha > 0 && a.Alpha < 0.5) {
		k.errf("analysis.alpha", "must be in (0, 0.5), got %s", fmtFloat(a.Alpha))
	}
	if a.MaxActive < 1 {
		k.errf("analysis.max_active", "must be >= 1, got %d", a.MaxActive)
	}
	k.positiveDuration("analysis.max_duration", a.MaxDuration)
	k.positiveDuration("analysis.retention", a.Retention)
	k.positiveDuration("analysis.pair_horizon", a.PairHorizon)
	k.positiveDuration("analysis.visit_gap", a.VisitGap)
	if a.PairMaxPending < 1 {
		k.errf("analysis.pair_max_pending", "must be >= 1, got %d", a.PairMaxPending)
	}
	switch b := a.KVBucket; {
	case b == "":
		k.errf("analysis.kv_bucket", "is empty; analyses keep their checkpoints there")
	case !bucketRE.MatchString(b):
		k.bucket("analysis.kv_bucket", b)
	case b == k.c.Gold.KVBucket:
		k.errf("analysis.kv_bucket", "%q is also gold.kv_bucket; analyses need a bucket of their own", b)
	}
	for _, name := range shippedCheckSets {
		if _, ok := a.Checks[name]; !ok {
			k.errf("analysis.checks", "the shipped %q set is missing; the verdict endpoints use it", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Checks)) {
		k.checkSet(name)
	}
}

// setPath is the key path of check set name, for lines; setLabel names it
// in messages, quoted when the name is not a valid one.
func setPath(name string) string { return "analysis.checks." + name }

func setLabel(name string) string {
	if checkSetRE.MatchString(name) {
		return setPath(name)
	}
	return fmt.Sprintf("analysis.checks[%q]", name)
}

func (k *checker) checkSet(name string) {
	set := k.c.Analysis.Checks[name]
	line := k.lineOf(setPath(name))
	switch {
	case name == "":
		k.errs = append(k.errs, &Error{File: k.file, Line: line, Msg: "analysis.checks: a set name is empty"})
	case !checkSetRE.MatchString(name):
		k.errs = append(k.errs, &Error{File: k.file, Line: line,
			Msg: fmt.Sprintf("analysis.checks: set name %q may only hold letters, digits, '_', '-' and '.' (at most 64)", name)})
	}
	if len(set) == 0 {
		k.errs = append(k.errs, &Error{File: k.file, Line: line, Msg: setLabel(name) + ": a set must have at least one check"})
	}
	for i := range set {
		k.analysisCheck(name, i)
	}
}

// checkf reports a problem of check i of set, at the line of its key field.
func (k *checker) checkf(set string, i int, field, format string, args ...any) {
	ch := &k.c.Analysis.Checks[set][i]
	path := fmt.Sprintf("%s[%d]", setPath(set), i)
	line := k.lines[path+"."+field]
	if line == 0 {
		line = ch.Line
	}
	if line == 0 && k.shippedSet(set) {
		// The shipped sets are valid with the default k: only k breaks them.
		line = k.lines["k"]
	}
	if line == 0 {
		line = k.lineOf(setPath(set))
	}
	prefix := fmt.Sprintf("%s[%d]", setLabel(set), i)
	if ch.Name != "" {
		prefix += fmt.Sprintf(" %q", ch.Name)
	}
	msg := prefix + ": " + fmt.Sprintf(format, args...)
	if k.shippedSet(set) {
		msg += fmt.Sprintf(" (a shipped check set: give your own analysis.checks.%s to replace it)", set)
	}
	k.errs = append(k.errs, &Error{File: k.file, Line: line, Msg: msg})
}

// shippedSet tells a set the file left as shipped from one it gave.
func (k *checker) shippedSet(set string) bool {
	if k.c.src == nil {
		return false
	}
	_, given := k.lines[setPath(set)]
	return !given
}

func (k *checker) analysisCheck(set string, i int) {
	c := k.c
	sets := c.Analysis.Checks
	ch := &sets[set][i]
	name := ch.Name
	if name == "" {
		name = ch.Metric // what fillAnalysisDefaults would make it
	}
	if ch.Name != "" && !gateNameRE.MatchString(ch.Name) {
		k.checkf(set, i, "name", "name %q may only hold letters, digits, '_', '-', '.' and ':'", ch.Name)
	} else if name != "" {
		for j := range i {
			other := sets[set][j]
			if other.Name == "" {
				other.Name = other.Metric
			}
			if other.Name != name {
				continue
			}
			at := ""
			if other.Line > 0 {
				at = fmt.Sprintf(" at line %d", other.Line)
			}
			hint := ""
			if name == ch.Metric {
				hint = "; checks of one metric need names of their own"
			}
			k.checkf(set, i, "name", "duplicate name (also %s[%d]%s)%s", setLabel(set), j, at, hint)
			break
		}
	}

	kind, known := window.Kind(0), false
	switch {
	case ch.Metric == "":
		k.checkf(set, i, "metric", "metric is empty")
	default:
		kind, known = window.MetricKind(ch.Metric, c.K)
		switch {
		case !known && len(c.K) == 0 && k.kHint(ch.Metric) != "":
			// a per-k metric with no k at all: reported once, at k
		case !known:
			k.checkf(set, i, "metric", "unknown metric %q%s", ch.Metric, k.metricHint(ch.Metric))
		default:
			if why := analysisMetricProblem(ch.Metric, kind, ch.Kind()); why != "" {
				k.checkf(set, i, "metric", "%s", why)
				known = false // no range to check against
			}
		}
	}

	if check := checkKinds[ch.Kind()]; check != nil {
		check(k, set, i, kind, known)
	}

	if ch.MinSamples < 0 {
		k.checkf(set, i, "min_samples", "min_samples must be >= 0, got %d", ch.MinSamples)
	}
}

// citedQuantile says whether metric is a quantile of the cited ΔS: the
// sequential quantile test runs on that distribution only.
func citedQuantile(metric string) bool {
	s, _ := window.Lookup(metric)
	return s.Row.Sketch() == window.CitedDeltaS
}

// analysisMetricProblem says why an analysis check of kind checkKind
// cannot judge a known metric, "" when it can: the confidence sequences
// exist for proportions, κ and quantiles of the cited ΔS, and, in a
// comparison, for the means whose visits the accumulators count
// (window.VisitClustered: the ranking metrics).
func analysisMetricProblem(metric string, kind window.Kind, checkKind string) string {
	const judged = "analysis checks judge proportions, kappa, delta_s_median/delta_s_p90 and, in comparisons, the ranking means"
	s, _ := window.Lookup(metric)
	switch {
	case kind == window.Proportion, kind == window.Kappa:
		return ""
	case kind == window.Quantile && citedQuantile(metric):
		return ""
	case kind == window.Quantile:
		return fmt.Sprintf("%s; %q is a quantile of the retrieved ΔS, not of the cited ΔS", judged, metric)
	case kind == window.Mean && window.VisitClustered(s) && checkKind != CheckComparison:
		return fmt.Sprintf("%s; %q is a mean, judged against a baseline only (a tolerance, no op)", judged, metric)
	case kind == window.Mean && window.VisitClustered(s):
		return ""
	}
	return fmt.Sprintf("%s; %q is a %s", judged, metric, kindName(kind))
}
