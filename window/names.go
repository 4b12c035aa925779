// Package window keeps sliding event-time windows of the quality metrics of
// SPEC §4 per arm and content type. It knows nothing of NATS or HTTP: the
// sidecar feeds it Observations and reads Snapshots.
package window

import (
	"strconv"
	"strings"
)

// Kind says what a metric's value is, which decides the threshold range a
// gate may use and how intervals and comparisons are computed.
type Kind int

const (
	// Proportion is numerator/denominator of counts, in [0,1]; Wilson and
	// Newcombe intervals apply.
	Proportion Kind = iota + 1
	// Mean is an average of per-event values in [0,1].
	Mean
	// Distance is an average tree distance, >= 0.
	Distance
	// Quantile is a ΔS quantile in [0,1]; arms are compared with
	// Mann-Whitney U.
	Quantile
	// Kappa is Cohen's κ, in [-1,1].
	Kappa
)

// Metric names of SPEC §4 that carry no k.
var fixedMetrics = map[string]Kind{
	"precision":                Proportion,
	"chr":                      Proportion,
	"under_refusal":            Proportion,
	"over_refusal":             Proportion,
	"coverage":                 Proportion,
	"citation_accuracy":        Proportion,
	"anchor_proximity":         Distance,
	"delta_s_median":           Quantile,
	"delta_s_p90":              Quantile,
	"delta_s_retrieved_median": Quantile,
	"delta_s_retrieved_p90":    Quantile,
	"lambda_convergence":       Proportion,
	"lambda_flip_rate":         Proportion,
	"agreement":                Proportion,
	"kappa":                    Kappa,
	"abstain_rate":             Proportion,
}

// Metric name prefixes that are reported once per configured k.
var perKMetrics = map[string]Kind{
	"recall_at_":         Proportion,
	"mean_precision_at_": Mean,
	"mean_recall_at_":    Mean,
}

// MetricKind tells whether name is a metric reported with the cut-offs ks,
// and its kind.
func MetricKind(name string, ks []int) (Kind, bool) {
	if k, ok := fixedMetrics[name]; ok {
		return k, true
	}
	if label, ok := strings.CutPrefix(name, "triage_"); ok {
		for _, l := range TriageLabels {
			if l == label {
				return Proportion, true
			}
		}
		return 0, false
	}
	for prefix, kind := range perKMetrics {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			n, err := strconv.Atoi(rest)
			if err != nil || strconv.Itoa(n) != rest {
				return 0, false
			}
			for _, k := range ks {
				if k == n {
					return kind, true
				}
			}
			return 0, false
		}
	}
	return 0, false
}

// KindOf is the kind of a metric name whatever k it carries (recall_at_7
// is a Proportion even where k lists no 7); 0 for a name that is no metric.
func KindOf(name string) Kind {
	ks := DefaultKs
	if i := strings.LastIndexByte(name, '_'); i >= 0 {
		if k, err := strconv.Atoi(name[i+1:]); err == nil && k > 0 {
			ks = []int{k}
		}
	}
	kind, _ := MetricKind(name, ks)
	return kind
}

// MetricNames lists every metric reported with the cut-offs ks, in a stable
// order: the fixed ones, the per-k ones by k, then the triage shares.
func MetricNames(ks []int) []string {
	names := []string{
		"precision", "chr", "under_refusal", "over_refusal",
	}
	for _, k := range ks {
		s := strconv.Itoa(k)
		names = append(names, "recall_at_"+s, "mean_precision_at_"+s, "mean_recall_at_"+s)
	}
	names = append(names,
		"coverage", "citation_accuracy", "anchor_proximity",
		"delta_s_median", "delta_s_p90", "delta_s_retrieved_median", "delta_s_retrieved_p90",
		"lambda_convergence", "lambda_flip_rate",
		"agreement", "kappa", "abstain_rate",
	)
	for _, l := range TriageLabels {
		names = append(names, "triage_"+l)
	}
	return names
}

// LowerIsBetter tells whether a smaller value of the metric is the better
// one: refusal errors, ΔS, λ flips, abstentions, anchor distance and the
// triage labels that name a fault. Every other metric is better higher.
func LowerIsBetter(name string) bool {
	switch name {
	case "under_refusal", "over_refusal", "anchor_proximity",
		"delta_s_median", "delta_s_p90", "delta_s_retrieved_median", "delta_s_retrieved_p90",
		"lambda_flip_rate", "abstain_rate",
		"triage_retrieval_drift", "triage_generation_drift", "triage_refusal_suspect":
		return true
	}
	return false
}
