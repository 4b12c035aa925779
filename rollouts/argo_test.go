package rollouts

// Argo Rollouts' own code (v1.9.0) drives GET /api/v1/verdict: the
// AnalysisTemplate the README gives is parsed into Argo's types, turned into
// an AnalysisRun by Argo's factory functions for a canary step of a Rollout,
// validated, and measured by Argo's web metric provider against the sidecar;
// each measurement goes through the controller's phase logic
// (argo_controller_test.go).

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	analysisutil "github.com/argoproj/argo-rollouts/utils/analysis"
)

// readmeSidecarURL is the sidecar's address in the README's template; the
// tests put the address of the sidecar under test in its place.
const readmeSidecarURL = "http://shadoweval.monitoring.svc:9464"

// readmeAnalysisTemplate is the AnalysisTemplate the README gives, as it
// gives it.
//
// Why this shape (Argo v1.9.0):
//   - Both conditions: utils/evaluate.EvaluateResult makes a result that
//     matches neither condition Inconclusive; with successCondition alone
//     an inconclusive verdict would be a Failed measurement.
//   - An Inconclusive measurement counts (analysis/analysis.go
//     runMeasurements: Inconclusive++, Count++), and
//     assessMetricFailureInconclusiveOrError ends the metric Inconclusive
//     once Inconclusive > inconclusiveLimit (default 0: the very first
//     measurement, taken before any evidence, would pause the rollout). So
//     inconclusiveLimit is set to count: an inconclusive verdict never ends
//     the metric early.
//   - consecutiveSuccessLimit: 1 ends the metric Successful at the first
//     pass (assessMetricStatus), without waiting for count. It also closes
//     a trap: with count reached, failureLimit ≥ 0 and no
//     consecutiveSuccessLimit, assessMetricStatus answers Successful, so
//     `count` inconclusive answers in a row would pass the canary with no
//     evidence; with consecutiveSuccessLimit > 0 it answers Inconclusive,
//     and the rollout pauses (rollout/analysis.go adds the
//     InconclusiveAnalysisRun pause condition) for a human to promote or
//     abort.
//   - failureLimit: 0: the first fail ends the metric Failed and aborts the
//     rollout. The sidecar's confidence sequences are anytime-valid, so
//     reading the verdict every interval does not raise the false-fail
//     rate and there is no need to wait for a second fail.
//   - count × interval is the time budget for a decision (2 h here).
//     Argo refuses an inconclusiveLimit above count and any negative one
//     (utils/analysis ValidateMetric), so the budget cannot be infinite.
//   - One analysis per Rollout revision: the id is the Rollout's name and
//     its pod-template hash; the first read starts it (SPEC §6).
const readmeAnalysisTemplate = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: shadoweval
  namespace: search
spec:
  args:
  - name: rollout          # the Rollout's name
  - name: revision         # its pod-template hash: one analysis per revision
  - name: arm
    value: canary
  - name: baseline
    value: live
  metrics:
  - name: shadoweval
    interval: 1m
    count: 120                 # at most 2 h of measurements, then pause
    inconclusiveLimit: 120     # = count: "inconclusive" never ends it early
    failureLimit: 0            # the first "fail" aborts the rollout
    consecutiveSuccessLimit: 1 # the first "pass" ends it Successful
    successCondition: result.verdict == "pass"
    failureCondition: result.verdict == "fail"
    provider:
      web:
        url: "http://shadoweval.monitoring.svc:9464/api/v1/verdict?arm={{args.arm}}&baseline={{args.baseline}}&analysis={{args.rollout}}-{{args.revision}}"
        jsonPath: "{$}"
        timeoutSeconds: 10
`

// readmeRollout is the Rollout the README gives, whole (Argo's CRD accepts
// it: manifests_test.go): a canary step that runs the template, with the
// args it needs, and the arm label on each pod (canaryMetadata,
// stableMetadata) that the retriever reads through the Downward API to tag
// its events.
const readmeRollout = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: retriever
  namespace: search
spec:
  replicas: 4
  selector:
    matchLabels:
      app: retriever
  template:
    metadata:
      labels:
        app: retriever
    spec:
      containers:
      - name: retriever
        image: registry.example.com/search/retriever:1.8.0
        env:
        - name: NATS_URL
          value: nats://nats.nats.svc:4222
        volumeMounts:
        - name: podinfo              # the pod's labels, arm among them
          mountPath: /etc/podinfo
      volumes:
      - name: podinfo
        downwardAPI:
          items:
          - path: labels
            fieldRef:
              fieldPath: metadata.labels
  strategy:
    canary:
      canaryMetadata:                # the canary's pods publish as arm canary,
        labels:
          arm: canary
      stableMetadata:                # the stable ones as live; promotion relabels them
        labels:
          arm: live
      steps:
      - setWeight: 20
      - analysis:
          templates:
          - templateName: shadoweval
          args:
          - name: rollout
            valueFrom:
              fieldRef:
                fieldPath: metadata.name
          - name: revision
            valueFrom:
              podTemplateHashValue: Latest
      - setWeight: 100
`

// newReadmeRun builds the AnalysisRun that the canary step of readmeRollout
// creates for revision hash podHash, the way the rollout controller does
// (rollout/analysis.go newAnalysisRunFromRollout), with base in place of
// the README's sidecar address and edit, when set, applied to the template.
func newReadmeRun(t testing.TB, base, podHash string, edit func(*v1alpha1.Metric)) *argoRun {
	t.Helper()
	var tmpl v1alpha1.AnalysisTemplate
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(readmeAnalysisTemplate, readmeSidecarURL, base)), &tmpl); err != nil {
		t.Fatalf("README AnalysisTemplate: %v", err)
	}
	if edit != nil {
		edit(&tmpl.Spec.Metrics[0])
	}
	var ro v1alpha1.Rollout
	if err := yaml.UnmarshalStrict([]byte(readmeRollout), &ro); err != nil {
		t.Fatalf("README Rollout: %v", err)
	}
	var step *v1alpha1.RolloutAnalysis
	for _, s := range ro.Spec.Strategy.Canary.Steps {
		if s.Analysis != nil {
			step = s.Analysis
		}
	}
	if step == nil {
		t.Fatal("README Rollout: no analysis step")
	}
	rs := func(hash string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.DefaultRolloutUniqueLabelKey: hash}}}
	}
	args, err := analysisutil.BuildArgumentsForRolloutAnalysisRun(step.Args, rs("stable0hash"), rs(podHash), &ro)
	if err != nil {
		t.Fatalf("BuildArgumentsForRolloutAnalysisRun: %v", err)
	}
	run, err := analysisutil.NewAnalysisRunFromTemplates([]*v1alpha1.AnalysisTemplate{&tmpl}, nil, args, step.DryRun, step.MeasurementRetention,
		nil, nil, ro.Name+"-"+podHash+"-2", "", ro.Namespace)
	if err != nil {
		t.Fatalf("NewAnalysisRunFromTemplates: %v", err)
	}
	return &argoRun{t: t, run: run}
}

// TestArgoTemplate checks the README's template with Argo's own
// validation and argument resolution: what a cluster would accept.
func TestArgoTemplate(t *testing.T) {
	r := newReadmeRun(t, readmeSidecarURL, "6f9c7d5b8", nil)
	if err := analysisutil.ValidateMetrics(r.run.Spec.Metrics); err != nil {
		t.Fatalf("Argo refuses the README template: %v", err)
	}
	m, err := analysisutil.ResolveMetricArgs(r.run.Spec.Metrics[0], r.run.Spec.Args)
	if err != nil {
		t.Fatal(err)
	}
	want := readmeSidecarURL + "/api/v1/verdict?arm=canary&baseline=live&analysis=retriever-6f9c7d5b8"
	if m.Provider.Web.URL != want {
		t.Errorf("resolved URL %q, want %q", m.Provider.Web.URL, want)
	}
	if err := analysisutil.ValidateMetric(*m); err != nil {
		t.Errorf("resolved metric invalid: %v", err)
	}
	// The limits the reasoning in readmeAnalysisTemplate rests on.
	if c := m.EffectiveCount(); c == nil || m.InconclusiveLimit == nil || m.InconclusiveLimit.IntValue() != c.IntValue() {
		t.Errorf("inconclusiveLimit %v should equal count %v", m.InconclusiveLimit, c)
	}
	if m.ConsecutiveSuccessLimit == nil || m.ConsecutiveSuccessLimit.IntValue() != 1 {
		t.Errorf("consecutiveSuccessLimit %v, want 1", m.ConsecutiveSuccessLimit)
	}
	// Argo's own validation refuses what would make the budget infinite.
	bad := *m
	neg := intstr.FromInt(-1)
	bad.InconclusiveLimit = &neg
	if analysisutil.ValidateMetric(bad) == nil {
		t.Error("Argo accepts inconclusiveLimit -1: an unbounded budget is possible after all; revisit the template")
	}
	over := intstr.FromInt(m.EffectiveCount().IntValue() + 1)
	bad.InconclusiveLimit = &over
	if analysisutil.ValidateMetric(bad) == nil {
		t.Error("Argo accepts inconclusiveLimit > count; revisit the template")
	}
}

// verdictScript is a stand-in for the sidecar that answers a scripted
// sequence of verdicts, to show what Argo's code makes of each template
// shape; the sidecar itself is driven by the tests further down.
type verdictScript struct {
	mu    sync.Mutex
	seq   []string
	calls int
}

func (v *verdictScript) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	verdict := v.seq[min(v.calls, len(v.seq)-1)]
	v.calls++
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"verdict": verdict, "analysis": r.URL.Query().Get("analysis"), "arm": r.URL.Query().Get("arm"),
		"baseline": r.URL.Query().Get("baseline"), "since": "2031-03-04T05:06:00Z", "checks": []any{},
	})
}

func repeat(v string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// runScript measures until the run completes (at most limit
// measurements) and returns the phase after each measurement.
func runScript(t *testing.T, seq []string, edit func(*v1alpha1.Metric), limit int) []v1alpha1.AnalysisPhase {
	t.Helper()
	srv := httptest.NewServer(&verdictScript{seq: seq})
	defer srv.Close()
	r := newReadmeRun(t, srv.URL, "6f9c7d5b8", edit)
	var phases []v1alpha1.AnalysisPhase
	for range limit {
		p := r.measure()
		phases = append(phases, p)
		if p.Completed() {
			break
		}
	}
	return phases
}

// TestArgoTemplateSemantics shows, with Argo's code and a scripted
// verdict sequence, that the README template keeps measuring while the
// verdict is inconclusive, succeeds on pass, fails on fail and pauses
// (Inconclusive) when the budget runs out; and what the shapes it was
// chosen over would do.
func TestArgoTemplateSemantics(t *testing.T) {
	const budget = 120 // the README template's count
	iv := func(i int) *intstr.IntOrString { v := intstr.FromInt(i); return &v }
	cases := []struct {
		name  string
		seq   []string
		edit  func(*v1alpha1.Metric)
		want  v1alpha1.AnalysisPhase
		after int // measurements until the run completes
	}{
		{"readme: inconclusive then pass", append(repeat("inconclusive", 30), "pass"), nil, v1alpha1.AnalysisPhaseSuccessful, 31},
		{"readme: inconclusive then fail", append(repeat("inconclusive", 30), "fail"), nil, v1alpha1.AnalysisPhaseFailed, 31},
		{"readme: pass at once", []string{"pass"}, nil, v1alpha1.AnalysisPhaseSuccessful, 1},
		{"readme: inconclusive for the whole budget pauses", repeat("inconclusive", budget+5), nil, v1alpha1.AnalysisPhaseInconclusive, budget},
		// The brief's first draft: no count, inconclusiveLimit 0, no
		// consecutiveSuccessLimit: the first (evidence-free) answer
		// pauses the rollout.
		{"draft inconclusiveLimit 0", append(repeat("inconclusive", 3), "pass"), func(m *v1alpha1.Metric) {
			m.Count, m.InconclusiveLimit, m.ConsecutiveSuccessLimit, m.FailureLimit = nil, iv(0), nil, nil
		}, v1alpha1.AnalysisPhaseInconclusive, 1},
		// successCondition alone: inconclusive is a failed measurement.
		{"successCondition only", append(repeat("inconclusive", 3), "pass"), func(m *v1alpha1.Metric) {
			m.FailureCondition = ""
		}, v1alpha1.AnalysisPhaseFailed, 1},
		// count = inconclusiveLimit without consecutiveSuccessLimit: the
		// trap, count inconclusive answers pass the canary.
		{"no consecutiveSuccessLimit: inconclusive passes", repeat("inconclusive", budget+5), func(m *v1alpha1.Metric) {
			m.ConsecutiveSuccessLimit = nil
		}, v1alpha1.AnalysisPhaseSuccessful, budget},
		// "inconclusive as success" (successCondition != "fail"), count
		// based: it also passes with no evidence at all.
		{"inconclusive as success", repeat("inconclusive", budget+5), func(m *v1alpha1.Metric) {
			m.SuccessCondition, m.FailureCondition, m.ConsecutiveSuccessLimit = `result.verdict != "fail"`, "", nil
		}, v1alpha1.AnalysisPhaseSuccessful, budget},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			phases := runScript(t, c.seq, c.edit, budget+5)
			last := phases[len(phases)-1]
			if last != c.want || len(phases) != c.after {
				t.Fatalf("run ended %s after %d measurements, want %s after %d", last, len(phases), c.want, c.after)
			}
			for i, p := range phases[:len(phases)-1] {
				if p != v1alpha1.AnalysisPhaseRunning {
					t.Fatalf("measurement %d left the run %s, want Running until the end", i+1, p)
				}
			}
		})
	}
}

// Traffic of the live Argo tests: every interval, argoBatch events of each
// arm (a healthy canary needs some 50 000 of each to pass the shipped
// canary checks; a degraded one fails after a few hundred, so its tests
// take smaller steps); argoInterval is the fake time between measurements.
const (
	argoInterval      = 10 * time.Second
	argoBatch         = 1000
	argoBatchDegraded = 100
)

// runArgo measures the README template against the sidecar, publishing
// a batch of live and canary traffic each interval, until the run
// completes or the template's count runs out; it returns the run, the
// phases after each measurement and the verdict read from the sidecar
// after each.
func runArgo(t *testing.T, s *sidecarUnderTest, podHash string, batch int) (*argoRun, []v1alpha1.AnalysisPhase, []string) {
	t.Helper()
	r := newReadmeRun(t, s.Base, podHash, nil)
	var phases []v1alpha1.AnalysisPhase
	var verdicts []string
	budget := r.run.Spec.Metrics[0].EffectiveCount().IntValue()
	for i := 0; i < budget; i++ {
		if i > 0 {
			s.tick(argoInterval, batch, "live", "canary")
		}
		p := r.measure()
		m := r.last()
		if m.Phase == v1alpha1.AnalysisPhaseError {
			t.Fatalf("measurement %d: Error: %s", i+1, m.Message)
		}
		var body verdictResponse
		if err := json.Unmarshal([]byte(m.Value), &body); err != nil {
			t.Fatalf("measurement %d: value %q is not the verdict JSON: %v", i+1, m.Value, err)
		}
		phases = append(phases, p)
		verdicts = append(verdicts, body.Verdict)
		if i%10 == 0 || p.Completed() || batch < argoBatch {
			t.Logf("measurement %d (%d events per arm): %s → run %s", i+1, i*batch, body.summary(), p)
		}
		if p.Completed() {
			break
		}
	}
	return r, phases, verdicts
}

// checkKeptMeasuring asserts that the run stayed Running on every
// measurement but the last, and that some of those were inconclusive:
// the template kept measuring while evidence accumulated.
func checkKeptMeasuring(t *testing.T, phases []v1alpha1.AnalysisPhase, verdicts []string) {
	t.Helper()
	inconclusive := 0
	for i, p := range phases[:len(phases)-1] {
		if p != v1alpha1.AnalysisPhaseRunning {
			t.Errorf("measurement %d (verdict %s) left the run %s before the end", i+1, verdicts[i], p)
		}
		if verdicts[i] == verdictInconclusive {
			inconclusive++
		}
	}
	if verdicts[0] != verdictInconclusive {
		t.Errorf("the first measurement, before any traffic, read %q, want inconclusive", verdicts[0])
	}
	if inconclusive == 0 {
		t.Error("no inconclusive measurement kept the run going")
	}
}

// TestArgoHealthyCanarySucceeds: a canary as good as live. The run stays
// Running while the verdict is inconclusive and ends Successful on pass.
func TestArgoHealthyCanarySucceeds(t *testing.T) {
	s := startSidecar(t, nil)
	r, phases, verdicts := runArgo(t, s, "6f9c7d5b8", argoBatch)
	checkKeptMeasuring(t, phases, verdicts)
	last := phases[len(phases)-1]
	if last != v1alpha1.AnalysisPhaseSuccessful {
		t.Fatalf("healthy canary: run %s after %d measurements (last verdict %s), want Successful", last, len(phases), verdicts[len(verdicts)-1])
	}
	if res := r.result(); res.Failed != 0 || res.Error != 0 {
		t.Errorf("healthy canary: result %+v has failed or errored measurements", res)
	}
}

// TestArgoDegradedCanaryFails: a canary whose precision is 10+ points
// below live. The run is never Successful and ends Failed on fail.
func TestArgoDegradedCanaryFails(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("canary", qualityDegraded)
	_, phases, verdicts := runArgo(t, s, "7c4d9e2a1", argoBatchDegraded)
	checkKeptMeasuring(t, phases, verdicts)
	s.checkDegraded("canary", "live")
	for i, v := range verdicts {
		if v == verdictPass {
			t.Fatalf("degraded canary: measurement %d read pass", i+1)
		}
	}
	if last := phases[len(phases)-1]; last != v1alpha1.AnalysisPhaseFailed {
		t.Fatalf("degraded canary: run %s after %d measurements, want Failed", last, len(phases))
	}
}

// TestArgoRevisionsAreSeparateAnalyses: a new revision of the same Rollout
// starts from nothing: the evidence against the old revision does not
// carry over (the id holds the pod-template hash).
func TestArgoRevisionsAreSeparateAnalyses(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("canary", qualityDegraded)
	_, phases, _ := runArgo(t, s, "7c4d9e2a1", argoBatchDegraded)
	if last := phases[len(phases)-1]; last != v1alpha1.AnalysisPhaseFailed {
		t.Fatalf("degraded revision: run %s, want Failed", last)
	}
	// The fix: a new revision, as good as live.
	s.traffic.SetQuality("canary", qualityLive)
	r := newReadmeRun(t, s.Base, "5b8e1f3c2", nil)
	if p := r.measure(); p != v1alpha1.AnalysisPhaseRunning {
		t.Fatalf("new revision, first measurement: run %s (%s), want Running", p, r.last().Value)
	}
	var v verdictResponse
	if err := json.Unmarshal([]byte(r.last().Value), &v); err != nil {
		t.Fatal(err)
	}
	if v.Verdict != verdictInconclusive || v.Analysis != "retriever-5b8e1f3c2" {
		t.Fatalf("new revision: analysis %q verdict %q, want a fresh analysis retriever-5b8e1f3c2, inconclusive", v.Analysis, v.Verdict)
	}
}

// TestArgoOverlongAnalysisIDNeverPasses: a Rollout name long enough that
// the analysis id exceeds what the sidecar takes. Whatever the sidecar
// answers, Argo's measurement must not read it as a pass.
func TestArgoOverlongAnalysisIDNeverPasses(t *testing.T) {
	s := startSidecar(t, nil)
	long := strings.Repeat("r", 240)
	r := newReadmeRun(t, s.Base, long, nil)
	for i := range 6 {
		s.tick(argoInterval, argoBatch, "live", "canary")
		p := r.measure()
		m := r.last()
		if m.Phase == v1alpha1.AnalysisPhaseSuccessful || p == v1alpha1.AnalysisPhaseSuccessful {
			t.Fatalf("measurement %d of an overlong id: measurement %s, run %s (%s)", i+1, m.Phase, p, m.Value)
		}
		t.Logf("measurement %d: %s %s %s → run %s", i+1, m.Phase, m.Message, m.Value, p)
		if p.Completed() {
			break
		}
	}
}

// TestArgoMeasurementValueCarriesChecks: the measurement Argo stores (and
// shows in kubectl argo rollouts get) holds the whole verdict, so the
// checks that decided are visible on the AnalysisRun.
func TestArgoMeasurementValueCarriesChecks(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("canary", qualityDegraded)
	r := newReadmeRun(t, s.Base, "7c4d9e2a1", nil)
	r.measure()
	for range 5 {
		s.tick(argoInterval, argoBatch, "live", "canary")
		r.measure()
	}
	var v verdictResponse
	if err := json.Unmarshal([]byte(r.last().Value), &v); err != nil {
		t.Fatalf("value %q: %v", r.last().Value, err)
	}
	if len(v.Checks) == 0 {
		t.Fatalf("value %q has no checks", r.last().Value)
	}
	names := map[string]bool{}
	for _, c := range v.Checks {
		names[c.Metric] = true
		if c.Verdict == "" {
			t.Errorf("check %q has no verdict", c.Name)
		}
	}
	if !names["precision"] {
		t.Errorf("no precision check among %v", names)
	}
	if v.Since.IsZero() {
		t.Error("no since in the verdict")
	}
	t.Logf("last value: %s", v.summary())
}

// TestArgoNoEvidencePauses: the canary gets no traffic (say its pods never
// become ready behind the mesh), so the verdict stays inconclusive; the
// README template keeps measuring for its whole budget and then ends
// Inconclusive, which pauses the rollout: never Successful.
func TestArgoNoEvidencePauses(t *testing.T) {
	s := startSidecar(t, nil)
	r := newReadmeRun(t, s.Base, "4e2f8a6d0", nil)
	budget := r.run.Spec.Metrics[0].EffectiveCount().IntValue()
	var p v1alpha1.AnalysisPhase
	n := 0
	for !p.Completed() {
		if n > budget {
			t.Fatalf("still %s after %d measurements, budget %d", p, n, budget)
		}
		if n > 0 {
			s.tick(argoInterval, 50, "live")
		}
		p = r.measure()
		n++
		if m := r.last(); m.Phase != v1alpha1.AnalysisPhaseInconclusive {
			t.Fatalf("measurement %d: %s (%s %s), want Inconclusive", n, m.Phase, m.Message, m.Value)
		}
	}
	if p != v1alpha1.AnalysisPhaseInconclusive || n != budget {
		t.Fatalf("run %s after %d measurements, want Inconclusive after %d", p, n, budget)
	}
}

// TestArgoReadsStartedAnalysis: an operator (or a pipeline step) starts the
// analysis with POST /api/v1/analyses before the Rollout's step reads it;
// Argo's reads then answer from that analysis. DELETE ends it; it stays
// readable.
func TestArgoReadsStartedAnalysis(t *testing.T) {
	s := startSidecar(t, nil)
	const id = "retriever-9a8b7c6d5"
	body := `{"id":"` + id + `","arm":"canary","baseline":"live","checks":"canary"}`
	if code, out := s.PostJSON("/api/v1/analyses", body); code != http.StatusCreated {
		t.Fatalf("POST /api/v1/analyses: %d, want 201: %s", code, out)
	}
	if code, out := s.PostJSON("/api/v1/analyses", body); code != http.StatusOK {
		t.Fatalf("POST /api/v1/analyses again: %d, want 200: %s", code, out)
	}
	if code, out := s.Get("/api/v1/analyses"); code != http.StatusOK || !strings.Contains(string(out), id) {
		t.Fatalf("GET /api/v1/analyses: %d, want 200 listing %s: %s", code, id, out)
	}
	s.traffic.SetQuality("canary", qualityDegraded)
	s.tick(argoInterval, argoBatch, "live", "canary")
	r := newReadmeRun(t, s.Base, "9a8b7c6d5", nil)
	p := r.measure()
	for i := 0; !p.Completed() && i < 20; i++ {
		s.tick(argoInterval, argoBatch, "live", "canary")
		p = r.measure()
	}
	if p != v1alpha1.AnalysisPhaseFailed {
		t.Fatalf("run %s (%s), want Failed: the traffic since the POST is degraded", p, r.last().Value)
	}
	if code, _, out := s.Do(http.MethodDelete, "/api/v1/analyses/"+id, nil, "", ""); code != http.StatusOK {
		t.Fatalf("DELETE /api/v1/analyses/%s: %d, want 200: %s", id, code, out)
	}
	if code, out := s.Get("/api/v1/analyses/" + id); code != http.StatusOK {
		t.Fatalf("GET /api/v1/analyses/%s after DELETE: %d, want 200 (kept for analysis.retention): %s", id, code, out)
	}
	if code, _, out := s.Do(http.MethodDelete, "/api/v1/analyses/no-such-analysis", nil, "", ""); code != http.StatusNotFound {
		t.Errorf("DELETE of an unknown analysis: %d, want 404: %s", code, out)
	}
}
