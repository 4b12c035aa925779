package rollouts

// Flagger's own code (v1.36.1) drives POST /api/v1/flagger/{hook}: every
// webhook call is pkg/controller.CallWebhook with Flagger's Canary and
// CanaryWebhookPayload types, and the loop around it follows Flagger's
// scheduler (pkg/controller/scheduler.go advanceCanary, runCanary,
// runAnalysis; scheduler_hooks.go), whose Controller needs a cluster and
// cannot run here. Only the progressive canary strategy is imitated; the
// router, the workloads and the metric checks are left out.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	flaggerv1 "github.com/fluxcd/flagger/pkg/apis/flagger/v1beta1"
	"github.com/fluxcd/flagger/pkg/controller"

	"github.com/shadoweval/shadoweval/testenv"
)

// readmeCanary is the Flagger Canary the README gives, whole (Flagger's CRD
// accepts it: manifests_test.go). The candidate arm is metadata.arm
// (default canary), the baseline metadata.baseline (default live); without
// metadata.analysis there is one analysis per canary (namespace, name) and
// revision.
const readmeCanary = `apiVersion: flagger.app/v1beta1
kind: Canary
metadata:
  name: retriever
  namespace: search
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: retriever
  service:
    port: 8080
  analysis:
    interval: 1m
    threshold: 5
    maxWeight: 50
    stepWeight: 10
    webhooks:
    # Hold the rollout until the new version, run as the shadow arm, is
    # eligible (seed 001 floors); Flagger waits on it without counting.
    - name: shadoweval-eligibility
      type: confirm-rollout
      url: http://shadoweval.monitoring.svc:9464/api/v1/flagger/confirm-rollout
    - name: shadoweval-pre-rollout
      type: pre-rollout
      url: http://shadoweval.monitoring.svc:9464/api/v1/flagger/pre-rollout
    # Every interval: 200 unless the canary is worse than live.
    - name: shadoweval
      type: rollout
      url: http://shadoweval.monitoring.svc:9464/api/v1/flagger/rollout
    # Roll back at once when the verdict is fail.
    - name: shadoweval-rollback
      type: rollback
      url: http://shadoweval.monitoring.svc:9464/api/v1/flagger/rollback
    # Promote only on pass.
    - name: shadoweval-promotion
      type: confirm-promotion
      url: http://shadoweval.monitoring.svc:9464/api/v1/flagger/confirm-promotion
`

// newReadmeCanary parses readmeCanary with base in place of the sidecar's
// address, at revision rev (the payload checksum hashes the status'
// lastAppliedSpec).
func newReadmeCanary(t testing.TB, base, rev string) flaggerv1.Canary {
	t.Helper()
	var cd flaggerv1.Canary
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(readmeCanary, readmeSidecarURL, base)), &cd); err != nil {
		t.Fatalf("README Canary: %v", err)
	}
	cd.Status.LastAppliedSpec = rev
	cd.Status.Phase = flaggerv1.CanaryPhaseInitialized
	return cd
}

// hookCall is one webhook call and Flagger's reading of it.
type hookCall struct {
	tick int
	hook flaggerv1.HookType
	ok   bool // CallWebhook returned nil (2xx)
	err  string
}

// flaggerSim advances one Canary as Flagger's scheduler does, one
// analysis interval per step call.
type flaggerSim struct {
	t      testing.TB
	cd     flaggerv1.Canary
	tick   int
	calls  []hookCall
	events []string
	// maxFailedChecks is the highest Status.FailedChecks seen.
	maxFailedChecks int
}

func (f *flaggerSim) logf(format string, args ...any) {
	f.events = append(f.events, fmt.Sprintf("tick %d: ", f.tick)+fmt.Sprintf(format, args...))
}

// call runs the webhooks of one type through controller.CallWebhook.
// all: every one must succeed (pre-rollout, rollout, confirm-*); else
// any (rollback: one success signals a rollback).
func (f *flaggerSim) call(typ flaggerv1.HookType, phase flaggerv1.CanaryPhase, all bool) bool {
	for _, w := range f.cd.GetAnalysis().Webhooks {
		if w.Type != typ && !(typ == flaggerv1.RolloutHook && w.Type == "") {
			continue
		}
		err := controller.CallWebhook(f.cd, phase, w)
		c := hookCall{tick: f.tick, hook: typ, ok: err == nil}
		if err != nil {
			c.err = bodySummary(err.Error())
		}
		f.calls = append(f.calls, c)
		if all && err != nil {
			return false
		}
		if !all && err == nil {
			return true
		}
	}
	return all
}

// bodySummary shortens the error CallWebhook returns (the response body)
// to the hook, verdict and reason, or the error message.
func bodySummary(body string) string {
	var b struct {
		Hook    string `json:"hook"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		Error   string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &b) != nil {
		return testenv.Tail(strings.TrimSpace(body), 200)
	}
	if b.Error != "" {
		return "error: " + b.Error
	}
	return fmt.Sprintf("%s: verdict %s: %s", b.Hook, b.Verdict, testenv.Tail(b.Reason, 200))
}

func (f *flaggerSim) setFailedChecks(n int) {
	f.cd.Status.FailedChecks = n
	f.maxFailedChecks = max(f.maxFailedChecks, n)
}

func (f *flaggerSim) rollback(why string) {
	f.logf("rolling back: %s", why)
	f.cd.Status = flaggerv1.CanaryStatus{Phase: flaggerv1.CanaryPhaseFailed, CanaryWeight: 0, FailedChecks: f.cd.Status.FailedChecks, LastAppliedSpec: f.cd.Status.LastAppliedSpec}
}

func (f *flaggerSim) done() bool {
	switch f.cd.Status.Phase {
	case flaggerv1.CanaryPhaseSucceeded, flaggerv1.CanaryPhaseFailed:
		return true
	}
	return false
}

// step is one run of advanceCanary for a canary whose target has a new
// revision, from the confirm-rollout gate on (scheduler.go).
func (f *flaggerSim) step() {
	f.tick++
	cd := &f.cd
	an := cd.GetAnalysis()
	if f.done() {
		return
	}
	// checkCanaryStatus: a new revision waits on the confirm-rollout
	// gate; once approved the canary is Progressing and this run ends.
	switch cd.Status.Phase {
	case flaggerv1.CanaryPhaseProgressing, flaggerv1.CanaryPhaseWaitingPromotion, flaggerv1.CanaryPhasePromoting, flaggerv1.CanaryPhaseFinalising:
	default:
		if !f.call(flaggerv1.ConfirmRolloutHook, cd.Status.Phase, true) {
			if cd.Status.Phase != flaggerv1.CanaryPhaseWaiting {
				f.logf("halt advancement waiting for approval")
			}
			cd.Status.Phase = flaggerv1.CanaryPhaseWaiting
			return
		}
		f.logf("new revision detected, progressing")
		cd.Status = flaggerv1.CanaryStatus{Phase: flaggerv1.CanaryPhaseProgressing, LastAppliedSpec: cd.Status.LastAppliedSpec}
		return
	}
	// rollback hooks
	switch cd.Status.Phase {
	case flaggerv1.CanaryPhaseProgressing, flaggerv1.CanaryPhaseWaiting, flaggerv1.CanaryPhaseWaitingPromotion:
		if f.call(flaggerv1.RollbackHook, cd.Status.Phase, false) {
			f.rollback("manual webhook invoked")
			return
		}
	}
	// promotion (traffic shift, then scale down), one step per run
	switch cd.Status.Phase {
	case flaggerv1.CanaryPhasePromoting:
		cd.Status.Phase = flaggerv1.CanaryPhaseFinalising
		return
	case flaggerv1.CanaryPhaseFinalising:
		f.logf("promotion completed")
		cd.Status.Phase = flaggerv1.CanaryPhaseSucceeded
		return
	}
	// failed checks threshold
	if (cd.Status.Phase == flaggerv1.CanaryPhaseProgressing || cd.Status.Phase == flaggerv1.CanaryPhaseWaitingPromotion) &&
		cd.Status.FailedChecks >= cd.GetAnalysisThreshold() {
		f.rollback(fmt.Sprintf("failed checks threshold reached %d", cd.Status.FailedChecks))
		return
	}
	if cd.Status.CanaryWeight == 0 && cd.Status.Iterations == 0 {
		if !f.call(flaggerv1.PreRolloutHook, flaggerv1.CanaryPhaseProgressing, true) {
			f.setFailedChecks(cd.Status.FailedChecks + 1)
			f.logf("pre-rollout check failed (%d failed checks)", cd.Status.FailedChecks)
			return
		}
	} else if !f.call(flaggerv1.RolloutHook, flaggerv1.CanaryPhaseProgressing, true) {
		f.setFailedChecks(cd.Status.FailedChecks + 1)
		f.logf("halt advancement: external check failed (%d failed checks)", cd.Status.FailedChecks)
		return
	}
	// progressive traffic increase (runCanary)
	if an.StepWeight <= 0 {
		f.t.Fatal("the imitated scheduler needs stepWeight")
	}
	if cd.Status.Phase != flaggerv1.CanaryPhaseWaitingPromotion &&
		!f.call(flaggerv1.ConfirmTrafficIncreaseHook, flaggerv1.CanaryPhaseProgressing, true) {
		return
	}
	maxWeight := an.MaxWeight
	if maxWeight <= 0 {
		maxWeight = 100
	}
	if cd.Status.CanaryWeight < maxWeight {
		cd.Status.CanaryWeight = min(cd.Status.CanaryWeight+an.StepWeight, 100)
		f.logf("advance canary weight %d", cd.Status.CanaryWeight)
		return
	}
	if !f.call(flaggerv1.ConfirmPromotionHook, flaggerv1.CanaryPhaseProgressing, true) {
		if cd.Status.Phase != flaggerv1.CanaryPhaseWaitingPromotion {
			f.logf("halt advancement waiting for promotion approval")
		}
		cd.Status.Phase = flaggerv1.CanaryPhaseWaitingPromotion
		return
	}
	f.logf("copying the canary spec to the primary: promoting")
	cd.Status.Phase = flaggerv1.CanaryPhasePromoting
}

// lastCall is the last call of a hook type, or nil.
func (f *flaggerSim) lastCall(typ flaggerv1.HookType) *hookCall {
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].hook == typ {
			return &f.calls[i]
		}
	}
	return nil
}

func (f *flaggerSim) report() string {
	return strings.Join(f.events, "\n")
}

// Traffic of the Flagger tests: every interval, flaggerBatch events of
// live, of shadow until the canary progresses, and of canary once it has
// weight.
const (
	flaggerInterval = 10 * time.Second
	flaggerBatch    = 500
	flaggerMaxTicks = 300
)

// runFlagger steps the canary until it is promoted or rolled back. Each
// tick is one interval: Flagger runs its hooks, then the interval's
// traffic arrives. It returns the verdict of the canary analysis analysisID
// (read after each tick the rollout hook ran, "" for the others).
func runFlagger(t *testing.T, s *sidecarUnderTest, f *flaggerSim, analysisID string) []string {
	t.Helper()
	var verdicts []string
	for !f.done() {
		if f.tick >= flaggerMaxTicks {
			t.Fatalf("canary neither promoted nor rolled back after %d intervals (phase %s):\n%s", f.tick, f.cd.Status.Phase, f.report())
		}
		n := len(f.calls)
		f.step()
		// Each canary-analysis hook of this tick answered as SPEC §6 says
		// for the verdict (no traffic arrives between the calls and this
		// read).
		v := ""
		for _, c := range f.calls[n:] {
			if _, ours := hookOK(c.hook, ""); !ours {
				continue
			}
			if v == "" {
				v = s.verdict(analysisID, "canary", "live").Verdict
			}
			if want, _ := hookOK(c.hook, v); c.ok != want {
				t.Errorf("tick %d: %s hook answered ok=%v (%s) while the verdict is %s", f.tick, c.hook, c.ok, c.err, v)
			}
		}
		if c := f.lastCall(flaggerv1.RolloutHook); c == nil || c.tick != f.tick {
			v = "" // only the verdicts of rollout ticks are returned
		}
		verdicts = append(verdicts, v)
		arms := []string{"live"}
		switch f.cd.Status.Phase {
		case flaggerv1.CanaryPhaseInitialized, flaggerv1.CanaryPhaseWaiting:
			arms = append(arms, "shadow")
		}
		if f.cd.Status.CanaryWeight > 0 {
			arms = append(arms, "canary")
		}
		if !f.done() {
			s.tick(flaggerInterval, flaggerBatch, arms...)
		}
	}
	t.Logf("after %d intervals, phase %s, max failed checks %d:\n%s", f.tick, f.cd.Status.Phase, f.maxFailedChecks, f.report())
	return verdicts
}

// hookOK says whether a canary-analysis hook answers 2xx for verdict
// (SPEC §6); ours is false for the other hooks.
func hookOK(hook flaggerv1.HookType, verdict string) (ok, ours bool) {
	switch hook {
	case flaggerv1.RolloutHook:
		return verdict != verdictFail, true
	case flaggerv1.ConfirmPromotionHook:
		return verdict == verdictPass, true
	case flaggerv1.RollbackHook:
		return verdict == verdictFail, true
	}
	return false, false
}

// withAnalysis names the canary analysis of the rollout, rollback and
// confirm-promotion hooks, so the test can read its verdict.
func withAnalysis(cd *flaggerv1.Canary, id string) {
	for i, w := range cd.Spec.Analysis.Webhooks {
		switch w.Type {
		case flaggerv1.RolloutHook, flaggerv1.RollbackHook, flaggerv1.ConfirmPromotionHook:
			md := map[string]string{"analysis": id}
			cd.Spec.Analysis.Webhooks[i].Metadata = &md
		}
	}
}

// TestFlaggerHealthyCanaryPromoted: an eligible shadow and a canary as
// good as live. The confirm-rollout gate holds the canary until the
// shadow's eligibility passes, the rollout hook keeps it advancing while
// the verdict is inconclusive (with a threshold of 1, a single failed
// check would roll it back), and confirm-promotion promotes on pass.
func TestFlaggerHealthyCanaryPromoted(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("shadow", qualityShadowGood)
	s.exactOffsets("shadow")
	cd := newReadmeCanary(t, s.Base, "rev-1")
	cd.Spec.Analysis.Threshold = 1
	withAnalysis(&cd, "retriever-rev-1")
	f := &flaggerSim{t: t, cd: cd}
	verdicts := runFlagger(t, s, f, "retriever-rev-1")
	if f.cd.Status.Phase != flaggerv1.CanaryPhaseSucceeded {
		t.Fatalf("healthy canary: phase %s, want Succeeded (promoted)", f.cd.Status.Phase)
	}
	if f.maxFailedChecks != 0 {
		t.Errorf("healthy canary: %d failed checks", f.maxFailedChecks)
	}
	inconclusive := 0
	for _, v := range verdicts {
		if v == verdictInconclusive {
			inconclusive++
		}
	}
	if inconclusive == 0 {
		t.Error("no rollout hook ran while the verdict was inconclusive: the test shows nothing about it")
	}
	t.Logf("%d rollout hooks answered while inconclusive, none counted as a failed check", inconclusive)
	waited := 0
	for _, c := range f.calls {
		if c.hook == flaggerv1.ConfirmRolloutHook && !c.ok {
			waited++
		}
		if c.hook == flaggerv1.RollbackHook && c.ok {
			t.Errorf("tick %d: rollback hook signalled a rollback for a healthy canary", c.tick)
		}
	}
	if waited == 0 {
		t.Error("confirm-rollout never held the canary: the shadow's eligibility was never inconclusive")
	}
	if v := s.verdict("retriever-rev-1", "canary", "live"); v.Verdict != verdictPass {
		t.Errorf("after promotion the analysis reads %s", v.summary())
	}
}

// TestFlaggerDegradedCanaryRolledBack: a canary whose precision is 10+
// points below live is rolled back and never promoted.
func TestFlaggerDegradedCanaryRolledBack(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("shadow", qualityShadowGood)
	s.exactOffsets("shadow")
	s.traffic.SetQuality("canary", qualityDegraded)
	cd := newReadmeCanary(t, s.Base, "rev-2")
	withAnalysis(&cd, "retriever-rev-2")
	f := &flaggerSim{t: t, cd: cd}
	runFlagger(t, s, f, "retriever-rev-2")
	if f.cd.Status.Phase != flaggerv1.CanaryPhaseFailed {
		t.Fatalf("degraded canary: phase %s, want Failed (rolled back)", f.cd.Status.Phase)
	}
	for _, c := range f.calls {
		if c.hook == flaggerv1.ConfirmPromotionHook && c.ok {
			t.Errorf("tick %d: confirm-promotion let a degraded canary through", c.tick)
		}
	}
	if v := s.verdict("retriever-rev-2", "canary", "live"); v.Verdict != verdictFail {
		t.Errorf("rolled back, but the analysis reads %s", v.summary())
	}
	s.checkDegraded("canary", "live")
}

// TestFlaggerIneligibleShadowHeld: a shadow arm below the eligibility
// floors never gets past confirm-rollout, and waiting there is not a
// failed check; pre-rollout fails it.
func TestFlaggerIneligibleShadowHeld(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("shadow", qualityDegraded)
	s.exactOffsets("shadow")
	cd := newReadmeCanary(t, s.Base, "rev-3")
	f := &flaggerSim{t: t, cd: cd}
	for range 30 {
		f.step()
		if f.cd.Status.Phase != flaggerv1.CanaryPhaseWaiting {
			t.Fatalf("tick %d: phase %s, want Waiting on confirm-rollout:\n%s", f.tick, f.cd.Status.Phase, f.report())
		}
		s.tick(flaggerInterval, flaggerBatch, "live", "shadow")
	}
	if f.maxFailedChecks != 0 {
		t.Errorf("waiting on confirm-rollout counted %d failed checks", f.maxFailedChecks)
	}
	last := f.lastCall(flaggerv1.ConfirmRolloutHook)
	t.Logf("confirm-rollout after %d intervals: %s", f.tick, last.err)
	for _, w := range cd.Spec.Analysis.Webhooks {
		if w.Type == flaggerv1.PreRolloutHook {
			if err := controller.CallWebhook(cd, flaggerv1.CanaryPhaseProgressing, w); err == nil {
				t.Error("pre-rollout answered 2xx for an ineligible shadow arm")
			}
		}
	}
}

// TestFlaggerEligibilityWhileInconclusive: before the shadow arm has
// evidence, confirm-rollout (a gate Flagger waits on) answers non-2xx, so
// the canary does not start, while pre-rollout (whose failures Flagger
// counts towards rollback) answers 2xx: "not enough data yet" is no
// failed check. TestFlaggerIneligibleShadowHeld has pre-rollout refuse an
// ineligible shadow.
func TestFlaggerEligibilityWhileInconclusive(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("shadow", qualityShadowGood)
	s.exactOffsets("shadow")
	cd := newReadmeCanary(t, s.Base, "rev-4")
	for _, w := range cd.Spec.Analysis.Webhooks {
		err := controller.CallWebhook(cd, flaggerv1.CanaryPhaseProgressing, w)
		switch w.Type {
		case flaggerv1.ConfirmRolloutHook:
			if err == nil {
				t.Errorf("%s answered 2xx with no shadow traffic yet (inconclusive eligibility)", w.Type)
			}
		case flaggerv1.PreRolloutHook:
			if err != nil {
				t.Errorf("%s failed with no shadow traffic yet (inconclusive eligibility): %v", w.Type, err)
			}
		}
	}
}

// TestFlaggerDefaultAnalysisPerCanaryAndRevision: webhooks without
// metadata. The analysis is one per canary (namespace, name) and revision:
// a canary failed at one revision says nothing of another canary, the same
// canary in another namespace, or its next revision.
func TestFlaggerDefaultAnalysisPerCanaryAndRevision(t *testing.T) {
	s := startSidecar(t, nil)
	s.traffic.SetQuality("canary", qualityDegraded)
	hook := func(cd flaggerv1.Canary, typ flaggerv1.HookType) error {
		t.Helper()
		for _, w := range cd.Spec.Analysis.Webhooks {
			if w.Type == typ {
				if w.Metadata != nil {
					t.Fatalf("README webhook %s has metadata %v", w.Name, *w.Metadata)
				}
				return controller.CallWebhook(cd, flaggerv1.CanaryPhaseProgressing, w)
			}
		}
		t.Fatalf("no %s webhook", typ)
		return nil
	}
	a := newReadmeCanary(t, s.Base, "rev-a")
	if err := hook(a, flaggerv1.RolloutHook); err != nil {
		t.Fatalf("first rollout hook, no evidence yet: %v", err)
	}
	if err := hook(a, flaggerv1.RollbackHook); err == nil {
		t.Fatal("rollback hook answered 2xx with no evidence (inconclusive)")
	}
	// Evidence against revision a accumulates until the rollback hook says
	// roll back.
	var ticks int
	for ticks = 1; ; ticks++ {
		if ticks > flaggerMaxTicks {
			t.Fatal("the degraded canary never failed")
		}
		s.tick(flaggerInterval, flaggerBatch, "live", "canary")
		if hook(a, flaggerv1.RollbackHook) == nil {
			break
		}
	}
	if err := hook(a, flaggerv1.RolloutHook); err == nil {
		t.Error("rollout hook answered 2xx for a failed canary")
	}
	if err := hook(a, flaggerv1.ConfirmPromotionHook); err == nil {
		t.Error("confirm-promotion answered 2xx for a failed canary")
	}
	t.Logf("revision a failed after %d intervals", ticks)

	other := newReadmeCanary(t, s.Base, "rev-a")
	other.Name = "ranker"
	otherNS := newReadmeCanary(t, s.Base, "rev-a")
	otherNS.Namespace = "search-staging"
	next := newReadmeCanary(t, s.Base, "rev-b")
	for name, cd := range map[string]flaggerv1.Canary{"another canary": other, "another namespace": otherNS, "the next revision": next} {
		if err := hook(cd, flaggerv1.RollbackHook); err == nil {
			t.Errorf("%s: rollback hook answered 2xx: it reads revision a's analysis", name)
		}
		if err := hook(cd, flaggerv1.RolloutHook); err != nil {
			t.Errorf("%s: rollout hook failed with no evidence of its own: %v", name, err)
		}
	}
	// The same canary and revision still reads its failed analysis.
	if err := hook(a, flaggerv1.RollbackHook); err != nil {
		t.Errorf("revision a: rollback hook no longer signals a rollback: %v", err)
	}
}

// TestFlaggerBadInput: mistakes in a Canary's webhooks, as Flagger sends
// them. Each must be an error to Flagger (a failed check, or a gate that
// stays shut), never a silent pass.
func TestFlaggerBadInput(t *testing.T) {
	s := startSidecar(t, nil)
	cd := newReadmeCanary(t, s.Base, "rev-5")
	md := func(kv ...string) *map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &m
	}
	cases := []struct {
		name string
		w    flaggerv1.CanaryWebhook
	}{
		{"misspelt hook", flaggerv1.CanaryWebhook{Name: "typo", Type: flaggerv1.RolloutHook, URL: s.Base + "/api/v1/flagger/rolout"}},
		{"analysis id with a slash and spaces", flaggerv1.CanaryWebhook{Name: "bad-id", Type: flaggerv1.RolloutHook,
			URL: s.Base + "/api/v1/flagger/rollout", Metadata: md("analysis", "retriever / rev 5")}},
		{"arm name with a space", flaggerv1.CanaryWebhook{Name: "bad-arm", Type: flaggerv1.RolloutHook,
			URL: s.Base + "/api/v1/flagger/rollout", Metadata: md("arm", "can ary")}},
		{"overlong analysis id", flaggerv1.CanaryWebhook{Name: "long-id", Type: flaggerv1.RolloutHook,
			URL: s.Base + "/api/v1/flagger/rollout", Metadata: md("analysis", strings.Repeat("a", 300))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := controller.CallWebhook(cd, flaggerv1.CanaryPhaseProgressing, c.w)
			if err == nil {
				t.Fatal("answered 2xx")
			}
			t.Logf("%s", bodySummary(err.Error()))
		})
	}
}
