package rollouts

// Argo Rollouts' analysis controller as far as it is reachable as a library.
//
// Used as they are (Argo v1.9.0): the v1alpha1 types, the web metric provider
// (metricproviders/webmetric: Provider.Run, which evaluates the conditions
// with utils/evaluate.EvaluateResult), utils/analysis (ValidateMetrics,
// ResolveMetricArgs, BuildArgumentsForRolloutAnalysisRun,
// NewAnalysisRunFromTemplates, IsTerminating) and utils/defaults.
//
// Transcribed: the controller package github.com/argoproj/argo-rollouts/analysis
// cannot be imported here. Its assessment functions are unexported, and the
// package imports every metric provider; metricproviders/prometheus does not
// compile against github.com/prometheus/client_golang v1.25.0, which the
// sidecar requires (v1.API.Query there returns a 4th value, Infos; Argo
// v1.9.0 was built against v1.22.0), and MVS cannot pick an older one.
// So the few lines of analysis/analysis.go that turn measurements into a
// metric phase are copied below, unchanged in logic, and
// TestArgoAssessConformance runs Argo's own unit-test cases for them
// (analysis/analysis_test.go) against the copy.

import (
	"fmt"
	"testing"

	log "github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/argoproj/argo-rollouts/metricproviders/webmetric"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	analysisutil "github.com/argoproj/argo-rollouts/utils/analysis"
	"github.com/argoproj/argo-rollouts/utils/defaults"
)

// recordMeasurement folds a completed measurement into its metric's
// result, as (*Controller).runMeasurements does in analysis/analysis.go
// (v1.9.0, the switch on newMeasurement.Phase after "Measurement
// Completed").
func recordMeasurement(r *v1alpha1.MetricResult, m v1alpha1.Measurement) {
	if m.Phase.Completed() {
		switch m.Phase {
		case v1alpha1.AnalysisPhaseSuccessful:
			r.Successful++
			r.Count++
			r.ConsecutiveError = 0
			r.ConsecutiveSuccess++
		case v1alpha1.AnalysisPhaseFailed:
			r.Failed++
			r.Count++
			r.ConsecutiveError = 0
			r.ConsecutiveSuccess = 0
		case v1alpha1.AnalysisPhaseInconclusive:
			r.Inconclusive++
			r.Count++
			r.ConsecutiveError = 0
			r.ConsecutiveSuccess = 0
		case v1alpha1.AnalysisPhaseError:
			r.Error++
			r.ConsecutiveError++
			r.ConsecutiveSuccess = 0
		}
	}
	r.Measurements = append(r.Measurements, m)
}

// assessMetricStatus is analysis/analysis.go assessMetricStatus (v1.9.0),
// logging left out.
func assessMetricStatus(metric v1alpha1.Metric, result v1alpha1.MetricResult, terminating bool) v1alpha1.AnalysisPhase {
	if result.Phase.Completed() {
		return result.Phase
	}
	if len(result.Measurements) == 0 {
		if terminating {
			return v1alpha1.AnalysisPhaseSuccessful
		}
		return v1alpha1.AnalysisPhasePending
	}
	lastMeasurement := result.Measurements[len(result.Measurements)-1]
	if !lastMeasurement.Phase.Completed() {
		return v1alpha1.AnalysisPhaseRunning
	}
	if phase, _ := assessMetricFailureInconclusiveOrError(metric, result); phase != "" {
		return phase
	}
	if metric.ConsecutiveSuccessLimit != nil && metric.ConsecutiveSuccessLimit.IntValue() > 0 && result.ConsecutiveSuccess >= int32(metric.ConsecutiveSuccessLimit.IntValue()) {
		return v1alpha1.AnalysisPhaseSuccessful
	}
	effectiveCount := metric.EffectiveCount()
	if effectiveCount != nil && result.Count >= int32(effectiveCount.IntValue()) {
		failureApplicable := (metric.FailureLimit != nil && metric.FailureLimit.IntValue() >= 0) || metric.FailureLimit == nil
		successApplicable := metric.ConsecutiveSuccessLimit != nil && metric.ConsecutiveSuccessLimit.IntValue() > 0
		if failureApplicable && successApplicable {
			return v1alpha1.AnalysisPhaseInconclusive
		} else if successApplicable {
			return v1alpha1.AnalysisPhaseFailed
		}
		return v1alpha1.AnalysisPhaseSuccessful
	}
	if terminating {
		return v1alpha1.AnalysisPhaseSuccessful
	}
	return v1alpha1.AnalysisPhaseRunning
}

// assessMetricFailureInconclusiveOrError is the function of that name in
// analysis/analysis.go (v1.9.0).
func assessMetricFailureInconclusiveOrError(metric v1alpha1.Metric, result v1alpha1.MetricResult) (v1alpha1.AnalysisPhase, string) {
	var message string
	var phase v1alpha1.AnalysisPhase
	failureLimit := int32(0)
	if metric.FailureLimit != nil {
		failureLimit = int32(metric.FailureLimit.IntValue())
	}
	if failureLimit >= 0 && result.Failed > failureLimit {
		phase = v1alpha1.AnalysisPhaseFailed
		message = fmt.Sprintf("failed (%d) > failureLimit (%d)", result.Failed, failureLimit)
	}
	inconclusiveLimit := int32(0)
	if metric.InconclusiveLimit != nil {
		inconclusiveLimit = int32(metric.InconclusiveLimit.IntValue())
	}
	if result.Inconclusive > inconclusiveLimit {
		phase = v1alpha1.AnalysisPhaseInconclusive
		message = fmt.Sprintf("inconclusive (%d) > inconclusiveLimit (%d)", result.Inconclusive, inconclusiveLimit)
	}
	consecutiveErrorLimit := defaults.GetConsecutiveErrorLimitOrDefault(&metric)
	if result.ConsecutiveError > consecutiveErrorLimit {
		phase = v1alpha1.AnalysisPhaseError
		message = fmt.Sprintf("consecutiveErrors (%d) > consecutiveErrorLimit (%d)", result.ConsecutiveError, consecutiveErrorLimit)
	}
	return phase, message
}

// argoRun is one AnalysisRun driven the way the controller drives it: on
// each reconcile the metrics not completed are resolved against the run's
// args (ResolveMetricArgs), validated (ValidateMetrics), measured by the
// provider the metric names (here always the web provider, built as
// metricproviders.NewProvider builds it), and assessed. The interval
// between reconciles is the test's business: each measure call is one
// interval.
type argoRun struct {
	t   testing.TB
	run *v1alpha1.AnalysisRun
}

// measure takes one measurement of every metric not completed and returns
// the run's phase afterwards (assessRunStatus: Running while any metric
// runs, else the worst metric phase).
func (r *argoRun) measure() v1alpha1.AnalysisPhase {
	r.t.Helper()
	run := r.run
	resolved := make([]v1alpha1.Metric, len(run.Spec.Metrics))
	for i, m := range run.Spec.Metrics {
		rm, err := analysisutil.ResolveMetricArgs(m, run.Spec.Args)
		if err != nil {
			r.t.Fatalf("Argo would set the run to Error: unable to resolve metric arguments: %v", err)
		}
		resolved[i] = *rm
	}
	if err := analysisutil.ValidateMetrics(resolved); err != nil {
		r.t.Fatalf("Argo would set the run to Error: analysis spec invalid: %v", err)
	}
	terminating := analysisutil.IsTerminating(run)
	for _, metric := range resolved {
		res := analysisutil.GetResult(run, metric.Name)
		if res == nil {
			res = &v1alpha1.MetricResult{Name: metric.Name, Phase: v1alpha1.AnalysisPhaseRunning}
		}
		if res.Phase.Completed() || terminating {
			continue
		}
		if c := metric.EffectiveCount(); c != nil && res.Count >= int32(c.IntValue()) {
			continue // generateMetricTasks: desired count reached
		}
		if metric.Provider.Web == nil {
			r.t.Fatalf("metric %q: only web metrics are measured here", metric.Name)
		}
		client, err := webmetric.NewWebMetricHttpClient(metric)
		if err != nil {
			r.t.Fatal(err)
		}
		parser, err := webmetric.NewWebMetricJsonParser(metric)
		if err != nil {
			r.t.Fatal(err)
		}
		provider := webmetric.NewWebMetricProvider(*log.WithField("metric", metric.Name), client, parser)
		recordMeasurement(res, provider.Run(run, metric))
		analysisutil.SetResult(run, *res)
	}
	// assessRunStatus
	terminating = analysisutil.IsTerminating(run)
	var worst v1alpha1.AnalysisPhase
	completed := true
	for _, metric := range resolved {
		res := analysisutil.GetResult(run, metric.Name)
		if res == nil {
			completed = false
			continue
		}
		res.Phase = assessMetricStatus(metric, *res, terminating)
		analysisutil.SetResult(run, *res)
		if !res.Phase.Completed() {
			completed = false
			continue
		}
		if worst == "" || analysisutil.IsWorse(worst, res.Phase) {
			worst = res.Phase
		}
	}
	if terminating {
		if worst == "" {
			return v1alpha1.AnalysisPhaseSuccessful
		}
		return worst
	}
	if !completed || worst == "" {
		return v1alpha1.AnalysisPhaseRunning
	}
	return worst
}

// last is the last measurement of the run's only metric.
func (r *argoRun) last() v1alpha1.Measurement {
	r.t.Helper()
	m := analysisutil.LastMeasurement(r.run, r.run.Spec.Metrics[0].Name)
	if m == nil {
		r.t.Fatal("no measurement yet")
	}
	return *m
}

func (r *argoRun) result() v1alpha1.MetricResult {
	res := analysisutil.GetResult(r.run, r.run.Spec.Metrics[0].Name)
	if res == nil {
		return v1alpha1.MetricResult{}
	}
	return *res
}

// TestArgoAssessConformance runs the cases of Argo v1.9.0's own tests of
// assessMetricStatus (analysis/analysis_test.go: TestAssessMetricStatus*)
// against the transcription above.
func TestArgoAssessConformance(t *testing.T) {
	iv := func(i int) *intstr.IntOrString { v := intstr.FromInt(i); return &v }
	done := []v1alpha1.Measurement{{Phase: v1alpha1.AnalysisPhaseFailed}}
	type tc struct {
		name        string
		metric      v1alpha1.Metric
		result      v1alpha1.MetricResult
		terminating bool
		want        v1alpha1.AnalysisPhase
	}
	res := func(failed, successful, consec, count int32) v1alpha1.MetricResult {
		return v1alpha1.MetricResult{Failed: failed, Successful: successful, ConsecutiveSuccess: consec, Count: count, Measurements: done}
	}
	fl := func(f, c, count int) v1alpha1.Metric {
		m := v1alpha1.Metric{Name: "m", FailureLimit: iv(f), ConsecutiveSuccessLimit: iv(c), Interval: "60s"}
		if count > 0 {
			m.Count = iv(count)
		}
		return m
	}
	cases := []tc{
		{"no measurements", v1alpha1.Metric{Name: "m"}, v1alpha1.MetricResult{}, false, v1alpha1.AnalysisPhasePending},
		{"no measurements terminating", v1alpha1.Metric{Name: "m"}, v1alpha1.MetricResult{}, true, v1alpha1.AnalysisPhaseSuccessful},
		{"in flight", v1alpha1.Metric{Name: "m"}, v1alpha1.MetricResult{Measurements: []v1alpha1.Measurement{{Phase: v1alpha1.AnalysisPhaseRunning}}}, false, v1alpha1.AnalysisPhaseRunning},
		// TestAssessMetricStatusFailureLimit
		{"failureLimit 2 failed 3", v1alpha1.Metric{Name: "m", FailureLimit: iv(2), Interval: "60s"}, v1alpha1.MetricResult{Failed: 3, Count: 3, Measurements: done}, false, v1alpha1.AnalysisPhaseFailed},
		{"failureLimit 3 failed 3", v1alpha1.Metric{Name: "m", FailureLimit: iv(3), Interval: "60s"}, v1alpha1.MetricResult{Failed: 3, Count: 3, Measurements: done}, false, v1alpha1.AnalysisPhaseRunning},
		{"failureLimit 3 failed 3 terminating", v1alpha1.Metric{Name: "m", FailureLimit: iv(3), Interval: "60s"}, v1alpha1.MetricResult{Failed: 3, Count: 3, Measurements: done}, true, v1alpha1.AnalysisPhaseSuccessful},
		// TestAssessMetricStatusConsecutiveSuccessLimit
		{"csl 3 reached", fl(-1, 3, 0), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseSuccessful},
		{"csl 5 not reached", fl(-1, 5, 0), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseRunning},
		{"csl 5 not reached terminating", fl(-1, 5, 0), res(3, 4, 3, 7), true, v1alpha1.AnalysisPhaseSuccessful},
		{"csl 5 count 7 reached", fl(-1, 5, 7), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseFailed},
		{"csl 3 count 7 reached", fl(-1, 3, 7), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseSuccessful},
		{"csl 3 count 9", fl(-1, 3, 9), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseSuccessful},
		{"csl 5 count 9", fl(-1, 5, 9), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseRunning},
		// TestAssessMetricStatusFailureLimitAndConsecutiveSuccessLimit
		{"fl4 csl4 running", fl(4, 4, 0), res(3, 4, 3, 7), false, v1alpha1.AnalysisPhaseRunning},
		{"fl4 csl4 running terminating", fl(4, 4, 0), res(3, 4, 3, 7), true, v1alpha1.AnalysisPhaseSuccessful},
		{"fl4 csl4 failed", fl(4, 4, 0), res(5, 9, 0, 9), false, v1alpha1.AnalysisPhaseFailed},
		{"fl4 csl4 success", fl(4, 4, 0), res(3, 5, 4, 8), false, v1alpha1.AnalysisPhaseSuccessful},
		{"fl4 csl4 both", fl(4, 4, 0), res(5, 5, 4, 10), true, v1alpha1.AnalysisPhaseFailed},
		{"fl4 csl4 count10 neither", fl(4, 4, 10), res(4, 6, 3, 10), false, v1alpha1.AnalysisPhaseInconclusive},
		{"fl4 csl4 count10 neither terminating", fl(4, 4, 10), res(4, 6, 3, 10), true, v1alpha1.AnalysisPhaseInconclusive},
		{"fl4 csl4 count10 failed", fl(4, 4, 10), res(5, 5, 3, 10), false, v1alpha1.AnalysisPhaseFailed},
		{"fl4 csl4 count10 success", fl(4, 4, 10), res(4, 6, 4, 10), false, v1alpha1.AnalysisPhaseSuccessful},
		{"fl4 csl4 count10 not reached", fl(4, 4, 10), res(3, 5, 3, 8), false, v1alpha1.AnalysisPhaseRunning},
		{"fl4 csl4 count10 not reached failed", fl(4, 4, 10), res(5, 3, 3, 8), false, v1alpha1.AnalysisPhaseFailed},
		{"fl4 csl4 count10 not reached success", fl(4, 4, 10), res(3, 5, 4, 8), false, v1alpha1.AnalysisPhaseSuccessful},
		// TestAssessMetricStatusInconclusiveLimit
		{"inconclusiveLimit 2", v1alpha1.Metric{Name: "m", InconclusiveLimit: iv(2), Interval: "60s"}, v1alpha1.MetricResult{Inconclusive: 3, Count: 3, Measurements: done}, false, v1alpha1.AnalysisPhaseInconclusive},
		{"inconclusiveLimit 3", v1alpha1.Metric{Name: "m", InconclusiveLimit: iv(3), Interval: "60s"}, v1alpha1.MetricResult{Inconclusive: 3, Count: 3, Measurements: done}, false, v1alpha1.AnalysisPhaseRunning},
		// TestAssessMetricStatusConsecutiveErrors
		{"consecutive errors 5", v1alpha1.Metric{Name: "m", Interval: "60s"}, v1alpha1.MetricResult{ConsecutiveError: 5, Count: 5, Measurements: done}, false, v1alpha1.AnalysisPhaseError},
		{"consecutive errors 4", v1alpha1.Metric{Name: "m", Interval: "60s"}, v1alpha1.MetricResult{ConsecutiveError: 4, Count: 5, Measurements: done}, false, v1alpha1.AnalysisPhaseRunning},
		// TestAssessMetricStatusCountReached
		{"count reached", v1alpha1.Metric{Name: "m", Count: iv(10)}, v1alpha1.MetricResult{Successful: 10, Count: 10, Measurements: done}, false, v1alpha1.AnalysisPhaseSuccessful},
		{"count reached inconclusive", v1alpha1.Metric{Name: "m", Count: iv(10)}, v1alpha1.MetricResult{Successful: 5, Inconclusive: 5, Count: 10, Measurements: done}, false, v1alpha1.AnalysisPhaseInconclusive},
	}
	for _, c := range cases {
		if got := assessMetricStatus(c.metric, c.result, c.terminating); got != c.want {
			t.Errorf("%s: assessMetricStatus = %s, want %s (Argo's own test)", c.name, got, c.want)
		}
	}
}
