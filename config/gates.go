package config

import (
	"time"

	"github.com/shadoweval/shadoweval/window"
)

// Gate is one rule of SPEC §5: per arm, the metric's value over Window must
// satisfy Op Threshold. A gate with fewer than MinSamples samples is
// inconclusive; one that breaks must keep breaking For before it fires.
type Gate struct {
	Name      string  `yaml:"name"`
	Metric    string  `yaml:"metric"`
	Op        string  `yaml:"op"` // >=, >, <=, <: the passing side
	Threshold float64 `yaml:"threshold"`
	// Window is the name of a configured window, "5m"; left out, the first
	// configured window.
	Window string `yaml:"window"`
	// MinSamples is the sample count below which the gate is inconclusive;
	// left out, DefaultMinSamples(Metric).
	MinSamples int      `yaml:"min_samples"`
	For        Duration `yaml:"for"`
	// Arms the gate judges; empty means every arm.
	Arms []string `yaml:"arms"`
	// Severity is the alert's severity label; left out, DefaultSeverity.
	Severity string `yaml:"severity"`
	// Confidence, in (0,1), judges the Wilson interval of a proportion at
	// this level instead of its point value; 0 (the default) judges the
	// point value.
	Confidence float64 `yaml:"confidence"`
	// CompareTo names an arm: the gate then judges (this arm − that arm)
	// over the same window. Empty judges the value itself.
	CompareTo string `yaml:"compare_to"`
	// Line is the line of the gate in the file it was read from, 0 when
	// unknown (the shipped defaults, gates built in code).
	Line int `yaml:"-"`
}

// Gate defaults for keys a gate leaves out.
const (
	DefaultSeverity   = "warning"
	defaultGateWindow = "5m"
)

// DefaultMinSamples is the min_samples of a gate on metric that leaves it
// out, and of the shipped gates.
//
// A gate needs enough samples that noise does not decide it: at 100 events
// a proportion near 0.8 has a 95% Wilson half-width of about 0.08, and a
// ΔS p90 has 10 points above it. λ groups and cross-agent pairs are rarer
// than events (a λ group is already ≥ lambda.min_runs runs; a pair needs two
// agents to judge one request), so waiting for 100 of them would leave those
// gates inconclusive for most windows. They get the smallest count at which
// one bad unit cannot break the gate on its own: 20 λ groups (one
// non-convergent group of 20 is exactly 0.95; one flip of 20 is 0.05 < 0.10)
// and 50 pairs (one abstention of 50 is exactly 0.02; κ below ~50 pairs
// swings by more than its 0.75 margin).
func DefaultMinSamples(metric string) int {
	s, _ := window.Lookup(metric)
	switch s.Row.Unit() {
	case window.LambdaGroups:
		return 20
	case window.Pairs:
		return 50
	}
	return 100
}

// DefaultGates are the shipped gates of SPEC §5, used when the
// configuration has no gates (absent, null or []). Four groups:
//
//   - ship_*: the reference ship gates of seed 002, on every arm;
//     ship_precision pages: a precision drop is the failure users see
//     first, and no on-call gate of seed 001 reads precision;
//   - canary_*: canary eligibility of seed 001, on the shadow and canary arms
//     (recall@5 compared with live);
//   - oncall_*: on-call alerts, severity page, on every arm;
//   - agents_*: cross-agent consistency of seed 003, on every arm.
//
// All judge the 5m window (or the first configured window when 5m is not
// configured) with the seeds' thresholds and DefaultMinSamples. They are
// tuned for on-call with package internal/sim/gatesim (false firings of a
// healthy arm over 30 simulated days, time to fire on a 10-point precision
// drop):
//
//   - every proportion gate judges its 95% Wilson (Newcombe for compare_to)
//     interval: at 16 events/s the seeds' thresholds are far from healthy
//     values anyway, but at 1 event/s point values paged 180 times in 30
//     days (λ flips over ~20 groups) and warned thousands of times. 0.95
//     rather than 0.99 keeps a 10-point precision drop caught by
//     ship_precision in a median 4m44s;
//   - for stays 0 on the warnings, so a breakage shows on the evaluation
//     that sees it, and as it was on the on-call gates (ΔS 3m, chr 10m,
//     coverage 5m). oncall_lambda_flip_rate gets 3m like the ΔS gates: the
//     Prometheus rules judge point values, and on point values 3m cuts its
//     pages of a healthy arm at 1 event/s from 180 to 2 in 30 days;
//   - κ has no interval, so agents_kappa waits one window (5m): at 1
//     event/s its point value broke every ~20 min.
func DefaultGates() []Gate {
	canary := func() []string { return []string{"shadow", "canary"} }
	gate := func(name, metric, op string, threshold float64, forDur time.Duration, arms []string, severity string) Gate {
		return Gate{
			Name:       name,
			Metric:     metric,
			Op:         op,
			Threshold:  threshold,
			Window:     defaultGateWindow,
			MinSamples: DefaultMinSamples(metric),
			For:        Duration(forDur),
			Arms:       arms,
			Severity:   severity,
			Confidence: defaultConfidence(metric),
		}
	}
	const warn, page = "warning", "page"
	gates := []Gate{
		// Reference ship gates (seed 002).
		gate("ship_precision", "precision", ">=", 0.80, 0, nil, page),
		gate("ship_chr", "chr", ">=", 0.75, 0, nil, warn),
		gate("ship_under_refusal", "under_refusal", "<=", 0.05, 0, nil, warn),
		gate("ship_over_refusal", "over_refusal", "<=", 0.10, 0, nil, warn),
		// Canary eligibility (seed 001).
		gate("canary_coverage", "coverage", ">=", 0.70, 0, canary(), warn),
		gate("canary_citation_accuracy", "citation_accuracy", ">=", 0.95, 0, canary(), warn),
		gate("canary_delta_s_median", "delta_s_median", "<=", 0.40, 0, canary(), warn),
		gate("canary_delta_s_p90", "delta_s_p90", "<=", 0.55, 0, canary(), warn),
		gate("canary_recall_at_5_vs_live", "recall_at_5", ">=", -0.02, 0, canary(), warn),
		gate("canary_lambda_convergence", "lambda_convergence", ">=", 0.95, 0, canary(), warn),
		// On-call alerts.
		gate("oncall_delta_s_p90", "delta_s_p90", "<", 0.60, 3*time.Minute, nil, page),
		gate("oncall_delta_s_median", "delta_s_median", "<", 0.45, 3*time.Minute, nil, page),
		gate("oncall_lambda_flip_rate", "lambda_flip_rate", "<", 0.10, 3*time.Minute, nil, page),
		gate("oncall_chr", "chr", ">=", 0.60, 10*time.Minute, nil, page),
		gate("oncall_coverage", "coverage", ">=", 0.70, 5*time.Minute, nil, page),
		// Cross-agent consistency (seed 003).
		gate("agents_agreement", "agreement", ">=", 0.90, 0, nil, warn),
		gate("agents_kappa", "kappa", ">=", 0.75, 5*time.Minute, nil, warn),
		gate("agents_abstain_rate", "abstain_rate", "<=", 0.02, 0, nil, warn),
	}
	gates[8].CompareTo = "live"
	return gates
}

// defaultConfidence is the confidence of a shipped gate on metric: 0.95 on
// proportions, 0 (the point value) on the rest, which have no interval.
func defaultConfidence(metric string) float64 {
	if k, _ := window.MetricKind(metric, window.DefaultKs); k == window.Proportion {
		return 0.95
	}
	return 0
}
