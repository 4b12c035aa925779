package sidecar_test

// End-to-end test of canary analyses (SPEC §5.2, §6): the whole App against
// a real NATS server, driven only through NATS and HTTP, time moved only by
// the fake clock (events carry ts = the fake now, so no traffic waits).

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// TestAnalysesE2E walks canary analyses through their verdicts with
// generated traffic: one started by a verdict request passes on a healthy
// canary, a second one on a degraded canary fails, and every output is
// checked on the way: the verdict and analyses APIs, the Flagger hooks,
// the Kayenta judge, /metrics and the verdict messages on NATS. Then the
// API's refusals: bad requests (400), a full table (429) and the admin
// token on DELETE.
func TestAnalysesE2E(t *testing.T) {
	t.Parallel()
	const (
		seed, items = 20310305, 300
		maxActive   = 8
		token       = "s3cret-admin-token"
		// A Flagger canary without metadata (Flagger's own payload).
		flaggerNS, flaggerName, checksum = "test", "podinfo", "85d557f47b"
	)
	flaggerID := "flagger:" + flaggerNS + ":" + flaggerName + ":" + checksum
	genOpt := gen.Options{Seed: seed, Items: items, Awkward: -1, Quality: 1}
	goldFile := writeGenGold(t, genOpt)
	tokenFile := testenv.WriteFile(t, t.TempDir(), "admin-token", []byte(token+"\n"))
	h := startApp(t, appOptions{
		embedded: true, // JetStream for the checkpoints' KV bucket
		goldFile: goldFile,
		configure: func(c *config.Config) {
			c.HTTP.AdminTokenFile = tokenFile
			c.Analysis.MaxActive = maxActive
			// The generated traffic's citation accuracy sits at or below
			// the shipped floor of 0.95: a lower floor lets a healthy arm
			// pass eligibility within this test's traffic.
			for i, ch := range c.Analysis.Checks[config.EligibilityCheckSet] {
				if ch.Metric == "citation_accuracy" {
					c.Analysis.Checks[config.EligibilityCheckSet][i].Threshold = 0.80
				}
			}
		},
	})
	verdicts := subscribe(t, h.NC, "shadoweval.verdicts.>")
	genOpt.Arms = []string{"live", "canary", "shadow"}
	tr := h.Traffic(genOpt)
	t0 := h.Clock.Now()

	// 1. A verdict request naming an unknown analysis starts it.
	x := h.verdict("/api/v1/verdict?arm=canary&analysis=X")
	if x.Analysis != "X" || x.Arm != "canary" || x.Baseline != "live" || x.CheckSet != "canary" ||
		x.Verdict != analysis.Inconclusive || !x.Since.Equal(t0) || x.Events != (analysis.Samples{}) || x.Ended != nil || x.Reason == "" {
		t.Fatalf("GET /api/v1/verdict started %+v, want X on canary vs live, inconclusive, since %v", x, t0)
	}
	if code, body := h.PostJSON("/api/v1/analyses", `{"id":"X","arm":"canary","baseline":"live","checks":"canary"}`); code != http.StatusOK {
		t.Errorf("POST /api/v1/analyses for the running X: %d, want 200: %s", code, body)
	}
	// Flagger: a payload without metadata gets one analysis per canary and
	// revision; metadata.analysis names one (eligibility reads the shadow
	// arm by default, under <analysis>.eligibility).
	noMeta := flaggerBody(flaggerNS, flaggerName, checksum, nil)
	metaX := flaggerBody(flaggerNS, flaggerName, checksum, map[string]string{"analysis": "X"})
	for hook, want := range map[string]struct {
		id, arm, checks string
	}{
		"rollout":         {flaggerID, "canary", "canary"},
		"confirm-rollout": {flaggerID + ".eligibility", "shadow", "eligibility"},
	} {
		_, r := h.flagger(hook, noMeta)
		if r.Analysis != want.id || r.Arm != want.arm || r.Baseline != "live" || r.CheckSet != want.checks || r.Hook != hook {
			t.Errorf("POST /api/v1/flagger/%s without metadata answered %s on %s vs %s (%s checks, hook %q), want %s on %s vs live (%s)",
				hook, r.Analysis, r.Arm, r.Baseline, r.CheckSet, r.Hook, want.id, want.arm, want.checks)
		}
		if got := h.analysis(want.id); got.Arm != want.arm || !got.Since.Equal(t0) {
			t.Errorf("GET /api/v1/analyses/%s: arm %s since %v, want %s since %v", want.id, got.Arm, got.Since, want.arm, t0)
		}
	}
	h.checkFlagger("X inconclusive", metaX, analysis.Inconclusive)
	h.checkFlagger("flagger id inconclusive", noMeta, analysis.Inconclusive)
	h.checkJudge("X inconclusive", kayentaBody("", "X", 95, 75), "", "X", analysis.Inconclusive, 85)
	h.checkJudge("X inconclusive, marginal over pass", kayentaBody("", "X", 70, 75), "", "X", analysis.Inconclusive, 69)

	// 2. Healthy canary, live and shadow traffic: still inconclusive with
	// little of it, then pass. An inconclusive first verdict sends no
	// message (the messages are checked at the end).
	tr.Send(100, "live", "canary", "shadow")
	h.waitAnalysisEvents("X", tr.Sent("canary"), tr.Sent("live"))
	h.Sidecar.TickAnalysesNow()
	if r := h.analysis("X"); r.Verdict != analysis.Inconclusive {
		t.Fatalf("X after 100 events per arm: %s (%s), want inconclusive", r.Verdict, r.Reason)
	}
	for x.Verdict != analysis.Pass {
		if tr.Sent("canary") >= 40000 {
			t.Fatalf("X still %s after %d events per arm: %s", x.Verdict, tr.Sent("canary"), x.Reason)
		}
		if x.Verdict == analysis.Fail {
			t.Fatalf("healthy canary failed: %s", x.Reason)
		}
		tr.Send(2500, "live", "canary", "shadow")
		x = h.waitAnalysisEvents("X", tr.Sent("canary"), tr.Sent("live"))
		h.Sidecar.TickAnalysesNow()
	}
	t.Logf("X passed after %d events per arm", tr.Sent("canary"))
	checkPassed(t, x)
	for _, id := range []string{flaggerID, "X.eligibility", flaggerID + ".eligibility"} {
		if r := h.analysis(id); r.Verdict != analysis.Pass {
			t.Errorf("%s: %s (%s), want pass on healthy traffic", id, r.Verdict, r.Reason)
		}
	}
	h.checkFlagger("X passed", metaX, analysis.Pass)
	h.checkFlagger("flagger id passed", noMeta, analysis.Pass)
	h.checkJudge("X passed", kayentaBody("", "X", 95, 75), "", "X", analysis.Pass, 100)
	h.checkJudge("flagger id passed, named by a tag", kayentaBody(flaggerID, "", 95, 75), "", flaggerID, analysis.Pass, 100)

	// /metrics: the running analyses, each verdict and check, labelled
	// only by analysis, arm, baseline, verdict, check and metric.
	h.CheckMetric("shadoweval_analyses_active", nil, 4)
	h.CheckMetric("shadoweval_analysis_checkpoint_errors_total", nil, 0)
	fams := h.Scrape()
	for name, labels := range map[string]string{
		"shadoweval_analysis_verdict":        "analysis,arm,baseline,verdict",
		"shadoweval_analysis_check_estimate": "analysis,check,metric",
		"shadoweval_analysis_check_lower":    "analysis,check,metric",
		"shadoweval_analysis_check_upper":    "analysis,check,metric",
		"shadoweval_analysis_check_limit":    "analysis,check,metric",
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("/metrics: no %s", name)
			continue
		}
		if got := testenv.LabelNames(f); got != labels {
			t.Errorf("/metrics: %s has labels %s, want %s", name, got, labels)
		}
	}
	for _, v := range []analysis.Verdict{analysis.Pass, analysis.Fail, analysis.Inconclusive} {
		want := 0.0
		if v == analysis.Pass {
			want = 1
		}
		h.CheckMetric("shadoweval_analysis_verdict", map[string]string{"analysis": "X", "arm": "canary", "baseline": "live", "verdict": string(v)}, want)
	}
	// Each check has its limit, and an estimate and bounds once it has
	// data (their values, the latest tick's judgement: TestAnalysisGauges).
	x = h.analysis("X")
	for _, c := range x.Checks {
		labels := map[string]string{"analysis": "X", "check": c.Name, "metric": c.Metric}
		// The limit a comparison is judged against lies on the failing
		// side of 0.
		limit := -c.Tolerance
		if c.LowerIsBetter {
			limit = c.Tolerance
		}
		h.CheckMetric("shadoweval_analysis_check_limit", labels, limit)
		for _, name := range []string{"shadoweval_analysis_check_estimate", "shadoweval_analysis_check_lower", "shadoweval_analysis_check_upper"} {
			if _, ok := fams.Series(name, labels); ok != (c.Estimate != nil) {
				t.Errorf("/metrics: %s for %s: %v, want %v (estimate %v)", name, c.Name, ok, c.Estimate != nil, c.Estimate)
			}
		}
	}

	// 3. Ending wants the admin token; the verdict and the start do not
	// (every other request of this test goes without it). An ended
	// analysis stays readable and leaves /metrics.
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for what, hdr := range map[string]http.Header{"no token": nil, "a wrong token": bearer("guess"), "basic auth": {"Authorization": {"Basic eDp5"}}} {
		if code, _, body := h.Do(http.MethodDelete, "/api/v1/analyses/X", hdr, "", ""); code != http.StatusUnauthorized {
			t.Errorf("DELETE /api/v1/analyses/X with %s: %d, want 401: %s", what, code, body)
		}
	}
	if r := h.analysis("X"); r.Ended != nil {
		t.Fatalf("X ended by an unauthorised DELETE: %+v", r)
	}
	for _, id := range []string{"X", flaggerID} {
		code, _, body := h.Do(http.MethodDelete, "/api/v1/analyses/"+url.PathEscape(id), bearer(token), "", "")
		var r analysis.Result
		if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || r.Ended == nil || !r.Ended.Equal(t0) || r.EndReason != "ended" || r.Verdict != analysis.Pass {
			t.Errorf("DELETE /api/v1/analyses/%s with the token: %d %s, want 200, ended at %v, still pass", id, code, body, t0)
		}
	}
	if code, _, body := h.Do(http.MethodDelete, "/api/v1/analyses/nosuch", bearer(token), "", ""); code != http.StatusNotFound {
		t.Errorf("DELETE of an unknown analysis: %d, want 404: %s", code, body)
	}
	if r := h.verdict("/api/v1/verdict?arm=canary&analysis=X"); r.Ended == nil || r.Verdict != analysis.Pass {
		t.Errorf("verdict of the ended X: %+v, want it ended and pass", r)
	}
	h.CheckMetric("shadoweval_analyses_active", nil, 2)
	for _, f := range h.Scrape() {
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "analysis" && (lp.GetValue() == "X" || lp.GetValue() == flaggerID) {
					t.Errorf("/metrics: %s still has the ended analysis %s", f.GetName(), lp.GetValue())
				}
			}
		}
	}

	// 4. A second analysis from a minute later, on a degraded canary,
	// fails; so does the canary's eligibility.
	h.Clock.Advance(time.Minute)
	t1 := h.Clock.Now()
	for i, want := range []int{http.StatusCreated, http.StatusOK} {
		code, body := h.PostJSON("/api/v1/analyses", `{"id":"Y","arm":"canary","baseline":"live","checks":"canary"}`)
		var r analysis.Result
		if err := json.Unmarshal(body, &r); code != want || err != nil || r.Analysis != "Y" || !r.Since.Equal(t1) {
			t.Fatalf("POST /api/v1/analyses Y (%d): %d %s, want %d since %v", i+1, code, body, want, t1)
		}
	}
	metaY := flaggerBody(flaggerNS, flaggerName, "b1c2d3e4f5", map[string]string{"analysis": "Y", "arm": "canary", "baseline": "live"})
	if code, r := h.flagger("pre-rollout", metaY); code != http.StatusOK || r.Analysis != "Y.eligibility" || r.Arm != "canary" || r.Verdict != analysis.Inconclusive {
		t.Errorf("pre-rollout for Y: %d %s on %s %s, want 200 from Y.eligibility on canary, inconclusive", code, r.Analysis, r.Arm, r.Verdict)
	}
	tr.SetQuality("canary", 0)
	h.failOn("Y", tr)
	if r := h.analysis("Y.eligibility"); r.Verdict != analysis.Fail {
		t.Errorf("Y.eligibility on the degraded canary: %s (%s), want fail", r.Verdict, r.Reason)
	}
	h.checkFlagger("Y failed", metaY, analysis.Fail)
	h.checkJudge("Y failed", kayentaBody("", "", 95, 75), "?analysis=Y", "Y", analysis.Fail, 0)
	h.CheckMetric("shadoweval_analysis_verdict", map[string]string{"analysis": "Y", "arm": "canary", "baseline": "live", "verdict": "fail"}, 1)
	if r := h.analysis("X"); r.Events != x.Events {
		t.Errorf("the ended X took events: %+v, had %+v", r.Events, x.Events)
	}

	// 5. Verdict messages: one per change, each carrying its analysis.
	// More ticks change nothing; a last analysis that fails is the mark
	// that every message published before it has arrived.
	h.Sidecar.TickAnalysesNow()
	h.Sidecar.TickAnalysesNow()
	h.Clock.Advance(time.Minute)
	if code, body := h.PostJSON("/api/v1/analyses", `{"id":"Z"}`); code != http.StatusCreated {
		t.Fatalf("POST /api/v1/analyses Z: %d %s", code, body)
	}
	h.failOn("Z", tr)
	got := map[string][]analysis.Verdict{}
	for done := false; !done; {
		var r analysis.Result
		m := receiveJSONMsg(t, verdicts, "the verdict messages up to Z's fail", &r)
		if m.Subject != "shadoweval.verdicts."+r.Arm {
			t.Errorf("verdict of %s (arm %s) on %s", r.Analysis, r.Arm, m.Subject)
		}
		if r.Analysis == "" || len(r.Checks) == 0 || r.Since.IsZero() {
			t.Errorf("verdict message without its analysis, checks or start: %s", m.Data)
		}
		got[r.Analysis] = append(got[r.Analysis], r.Verdict)
		done = r.Analysis == "Z"
	}
	want := map[string][]analysis.Verdict{
		"X": {analysis.Pass}, flaggerID: {analysis.Pass},
		"X.eligibility": {analysis.Pass}, flaggerID + ".eligibility": {analysis.Pass},
		"Y": {analysis.Fail}, "Y.eligibility": {analysis.Fail}, "Z": {analysis.Fail},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("verdict messages per analysis %v, want %v", got, want)
	}

	// 6. Refusals, with the reason.
	long := strings.Repeat("a", 129)
	for _, c := range []struct {
		body, reason string
	}{
		{`{"id":"bad",`, "bad analysis request"},
		{`{"id":"a"} {"id":"b"}`, "trailing data"},
		{`{"id":"bad","checks":"nosuch"}`, `unknown check set "nosuch" (configured: canary, eligibility)`},
		{`{"id":"bad","arm":"` + long + `"}`, "arm is 129 bytes long, at most 128"},
		{`{"id":"` + long + `"}`, "id is 129 bytes long, at most 128"},
		{`{"id":"a b"}`, `id "a b" has ' '`},
		{`{"id":"a/b"}`, `id "a/b" has '/'`},
		{`{"id":"ok","arm":"canary.v2"}`, `arm "canary.v2" has '.'`},
		{`{"id":"ok","arm":"can*"}`, `arm "can*" has '*'`},
		{`{"id":"ok","arm":"live"}`, `arm and baseline are both "live"`},
	} {
		code, out := h.PostJSON("/api/v1/analyses", c.body)
		if code != http.StatusBadRequest || !strings.Contains(errorOf(out), c.reason) {
			t.Errorf("POST /api/v1/analyses %s: %d %s, want 400 saying %q", c.body, code, out, c.reason)
		}
	}
	if code, out := h.Get("/api/v1/verdict?arm=can%3Ebad&analysis=ok"); code != http.StatusBadRequest || !strings.Contains(errorOf(out), `arm "can>bad" has '>'`) {
		t.Errorf("GET /api/v1/verdict with a bad arm: %d %s, want 400 with the reason", code, out)
	}
	// An arm nothing knows (not live, shadow or canary, not configured,
	// no event named it) is a typo: 404 with the known arms, and nothing
	// starts; so is an unknown parameter (400).
	for _, path := range []string{"/api/v1/verdict?arm=canray", "/api/v1/verdict?arm=canary&baseline=lvie&analysis=typo"} {
		code, out := h.Get(path)
		var body struct {
			Error     string   `json:"error"`
			KnownArms []string `json:"known_arms"`
		}
		if err := json.Unmarshal(out, &body); err != nil || code != http.StatusNotFound || !strings.Contains(body.Error, "unknown arm") ||
			!slices.Contains(body.KnownArms, "canary") || !slices.Contains(body.KnownArms, "live") || slices.Contains(body.KnownArms, "canray") {
			t.Errorf("GET %s: %d %s, want 404 with the known arms", path, code, out)
		}
	}
	if code, out := h.Get("/api/v1/verdict?arm=canary&window=5m"); code != http.StatusBadRequest || !strings.Contains(errorOf(out), `unknown parameter "window"`) {
		t.Errorf("GET /api/v1/verdict with window=5m: %d %s, want 400", code, out)
	}
	if code, out := h.PostJSON("/api/v1/flagger/rollout", `{"name":`); code != http.StatusBadRequest || !strings.Contains(errorOf(out), "bad Flagger webhook payload") {
		t.Errorf("Flagger hook with bad JSON: %d %s, want 400", code, out)
	}
	if code, out := h.PostJSON("/api/v1/flagger/post-rollout", noMeta); code != http.StatusNotFound || !strings.Contains(errorOf(out), "unknown Flagger hook") {
		t.Errorf("unknown Flagger hook: %d %s, want 404", code, out)
	}
	if code, out := h.PostJSON("/judge", `[`); code != http.StatusBadRequest || !strings.Contains(errorOf(out), "bad Kayenta remote judge request") {
		t.Errorf("Kayenta judge with bad JSON: %d %s, want 400", code, out)
	}
	if n := h.countRunning(); n != 5 {
		t.Errorf("%d analyses running after the refusals, want 5 (X.eligibility, %s.eligibility, Y, Y.eligibility, Z)", n, flaggerID)
	}

	// 7. analysis.max_active: the table fills, then 429 with the reason,
	// from the verdict endpoint too; ending one makes room.
	for i := h.countRunning(); i < maxActive; i++ {
		if code, out := h.PostJSON("/api/v1/analyses", fmt.Sprintf(`{"id":"fill-%d"}`, i)); code != http.StatusCreated {
			t.Fatalf("POST /api/v1/analyses fill-%d with %d running: %d %s", i, i, code, out)
		}
	}
	tooMany := fmt.Sprintf("%d of analysis.max_active %d are running", maxActive, maxActive)
	if code, out := h.PostJSON("/api/v1/analyses", `{"id":"one-more"}`); code != http.StatusTooManyRequests || !strings.Contains(errorOf(out), tooMany) {
		t.Errorf("POST /api/v1/analyses past max_active: %d %s, want 429 saying %q", code, out, tooMany)
	}
	if code, out := h.Get("/api/v1/verdict?arm=canary&analysis=one-more"); code != http.StatusTooManyRequests || !strings.Contains(errorOf(out), tooMany) {
		t.Errorf("GET /api/v1/verdict past max_active: %d %s, want 429", code, out)
	}
	if code, _ := h.PostJSON("/api/v1/analyses", `{"id":"Y"}`); code != http.StatusOK {
		t.Errorf("POST /api/v1/analyses for the running Y with the table full: %d, want 200", code)
	}
	if code, _, out := h.Do(http.MethodDelete, "/api/v1/analyses/Z", bearer(token), "", ""); code != http.StatusOK {
		t.Fatalf("DELETE Z: %d %s", code, out)
	}
	if code, out := h.PostJSON("/api/v1/analyses", `{"id":"one-more"}`); code != http.StatusCreated {
		t.Errorf("POST /api/v1/analyses after ending one: %d %s, want 201", code, out)
	}
	h.CheckMetric("shadoweval_analyses_active", nil, maxActive)
	if n := len(h.Scrape()["shadoweval_analysis_verdict"].GetMetric()); n != 3*maxActive {
		t.Errorf("/metrics: %d shadoweval_analysis_verdict series, want 3 per running analysis (%d)", n, 3*maxActive)
	}
}

// checkPassed checks a passed result: every check with data passes, the
// others are no_data (no judgement events flowed), each interval holds its
// estimate and lies within the tolerance.
func checkPassed(t *testing.T, r analysis.Result) {
	t.Helper()
	if r.Reason != "" {
		t.Errorf("%s passed with a reason: %s", r.Analysis, r.Reason)
	}
	for _, c := range r.Checks {
		switch c.Metric {
		case "agreement", "kappa":
			if c.Verdict != analysis.NoData || c.Estimate != nil || c.Interval != nil {
				t.Errorf("%s: %s %+v, want no_data without numbers", r.Analysis, c.Name, c)
			}
			continue
		}
		if c.Verdict != analysis.Pass || c.Estimate == nil || c.Interval == nil {
			t.Errorf("%s: %s %s (%s), want pass with numbers", r.Analysis, c.Name, c.Verdict, c.Reason)
			continue
		}
		lo, hi := c.Interval[0], c.Interval[1]
		if !(lo <= *c.Estimate && *c.Estimate <= hi) || c.Samples.Arm < int64(c.MinSamples) || c.Samples.Baseline < int64(c.MinSamples) {
			t.Errorf("%s: %s estimate %v interval [%v, %v] samples %+v (min %d)", r.Analysis, c.Name, *c.Estimate, lo, hi, c.Samples, c.MinSamples)
		}
		if c.LowerIsBetter && !(hi < c.Tolerance) || !c.LowerIsBetter && !(lo > -c.Tolerance) {
			t.Errorf("%s: %s passed with [%v, %v] against tolerance %v", r.Analysis, c.Name, lo, hi, c.Tolerance)
		}
		if want := 1 - r.Alpha/10; math.Abs(c.Level-want) > 1e-12 { // 10 checks with data
			t.Errorf("%s: %s level %v, want %v", r.Analysis, c.Name, c.Level, want)
		}
	}
}

// ---- helpers of the analysis tests ----

// decodeResult decodes an analysis Result from an HTTP answer.
func decodeResult(t testing.TB, what string, code int, body []byte) analysis.Result {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", what, code, body)
	}
	var r analysis.Result
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	return r
}

// verdict is GET path (an /api/v1/verdict URL), which answers 200.
func (h *testApp) verdict(path string) analysis.Result {
	h.T.Helper()
	code, body := h.Get(path)
	return decodeResult(h.T, "GET "+path, code, body)
}

// analysis is GET /api/v1/analyses/{id}.
func (h *testApp) analysis(id string) analysis.Result {
	h.T.Helper()
	path := "/api/v1/analyses/" + url.PathEscape(id)
	code, body := h.Get(path)
	return decodeResult(h.T, "GET "+path, code, body)
}

// waitAnalysisEvents waits until analysis id has accumulated exactly arm
// and baseline events and returns it.
func (h *testApp) waitAnalysisEvents(id string, arm, baseline int64) analysis.Result {
	h.T.Helper()
	var r analysis.Result
	poll(h.T, fmt.Sprintf("analysis %s to count %d and %d events", id, arm, baseline), func() string {
		r = h.analysis(id)
		if r.Events != (analysis.Samples{Arm: arm, Baseline: baseline}) {
			return fmt.Sprintf("it counts %+v", r.Events)
		}
		return ""
	})
	return r
}

// failOn sends degraded canary and live traffic of tr in steps, ticking
// the analyses after each, until analysis id, started before the first
// step, fails; it returns its Result then.
func (h *testApp) failOn(id string, tr *apptest.Traffic) analysis.Result {
	h.T.Helper()
	canary0, live0 := tr.Sent("canary"), tr.Sent("live")
	for {
		r := h.analysis(id)
		switch {
		case r.Verdict == analysis.Fail:
			h.T.Logf("%s failed after %d canary events", id, r.Events.Arm)
			return r
		case r.Verdict == analysis.Pass:
			h.T.Fatalf("%s passed a degraded canary", id)
		case r.Events.Arm >= 10000:
			h.T.Fatalf("%s still %s after %d canary events: %s", id, r.Verdict, r.Events.Arm, r.Reason)
		}
		tr.Send(250, "live", "canary")
		h.waitAnalysisEvents(id, tr.Sent("canary")-canary0, tr.Sent("live")-live0)
		h.Sidecar.TickAnalysesNow()
	}
}

// countRunning is the number of running analyses in GET /api/v1/analyses.
func (h *testApp) countRunning() int {
	h.T.Helper()
	code, body := h.Get("/api/v1/analyses")
	if code != http.StatusOK {
		h.T.Fatalf("GET /api/v1/analyses: %d %s", code, body)
	}
	var list struct {
		Analyses []analysis.Result `json:"analyses"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		h.T.Fatalf("GET /api/v1/analyses: %v in %s", err, body)
	}
	n := 0
	for _, r := range list.Analyses {
		if r.Ended == nil {
			n++
		}
	}
	return n
}

// errorOf is the "error" of a JSON error answer, else the whole body.
func errorOf(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return string(body)
	}
	return e.Error
}

// flaggerBody is a webhook payload as Flagger sends it.
func flaggerBody(namespace, name, checksum string, metadata map[string]string) string {
	p := map[string]any{"name": name, "namespace": namespace, "phase": "Progressing", "checksum": checksum}
	if metadata != nil {
		p["metadata"] = metadata
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// flagger posts body to a Flagger hook.
func (h *testApp) flagger(hook, body string) (int, analysis.FlaggerResponse) {
	h.T.Helper()
	code, out := h.PostJSON("/api/v1/flagger/"+hook, body)
	var r analysis.FlaggerResponse
	if err := json.Unmarshal(out, &r); err != nil {
		h.T.Fatalf("POST /api/v1/flagger/%s: %d, %v in %s", hook, code, err, out)
	}
	return code, r
}

// flaggerHooks is the status each Flagger webhook answers for an
// analysis of each verdict.
var flaggerHooks = map[analysis.Verdict]map[string]int{
	analysis.Inconclusive: {
		"rollout": 200, "confirm-traffic-increase": 200, "confirm-promotion": 412, "rollback": 412,
		"confirm-rollout": 412, "pre-rollout": 200,
	},
	analysis.Pass: {
		"rollout": 200, "confirm-traffic-increase": 200, "confirm-promotion": 200, "rollback": 412,
		"confirm-rollout": 200, "pre-rollout": 200,
	},
	analysis.Fail: {
		"rollout": 412, "confirm-traffic-increase": 412, "confirm-promotion": 412, "rollback": 200,
		"confirm-rollout": 412, "pre-rollout": 412,
	},
}

// checkFlagger posts body to each hook and checks that it answers the
// status of verdict v (flaggerHooks) and that the canary hooks read an
// analysis whose verdict is v.
func (h *testApp) checkFlagger(what, body string, v analysis.Verdict) {
	h.T.Helper()
	want := flaggerHooks[v]
	for _, hook := range slices.Sorted(maps.Keys(want)) {
		code, r := h.flagger(hook, body)
		if code != want[hook] || r.Verdict != v {
			h.T.Errorf("%s: POST /api/v1/flagger/%s: %d with %s %s (%s), want %d and %s", what, hook, code, r.Analysis, r.Verdict, r.Reason, want[hook], v)
		}
	}
}

// kayentaBody is a Kayenta RemoteJudgeRequest naming the analysis in a
// metric set pair's tags (tagged) or in the judge's configuration (config).
func kayentaBody(tagged, config string, pass, marginal float64) string {
	judgeCfg := map[string]any{}
	if config != "" {
		judgeCfg["analysis"] = config
	}
	tags := map[string]string{}
	if tagged != "" {
		tags["analysis"] = tagged
	}
	req := map[string]any{
		"canaryConfig": map[string]any{
			"name": "rag-quality", "applications": []string{"rag"}, "configVersion": "1",
			"judge": map[string]any{"name": "shadoweval", "judgeConfigurations": judgeCfg},
			"metrics": []any{map[string]any{
				"name": "precision", "groups": []string{"quality"}, "scopeName": "default",
				"query":                  map[string]any{"type": "prometheus", "metricName": "shadoweval_window_value"},
				"analysisConfigurations": map[string]any{"canary": map[string]any{"direction": "decrease"}},
			}},
			"classifier": map[string]any{"groupWeights": map[string]float64{"quality": 100}},
		},
		"metricSetPairList": []any{map[string]any{
			"name": "precision", "id": "0b6a7a5e", "tags": tags,
			"values":     map[string][]float64{"control": {0.91, 0.92}, "experiment": {0.9, 0.93}},
			"attributes": map[string]any{"control": map[string]string{}, "experiment": map[string]string{}},
		}},
		"scoreThresholds": map[string]float64{"pass": pass, "marginal": marginal},
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkJudge posts a Kayenta request (query: the URL's query, "" for none)
// and checks the judge's score and classifications against analysis id's
// Result: a check that passes is Pass, one that fails Low or High (by the
// metric's direction), any other Nodata.
func (h *testApp) checkJudge(what, body, query, id string, v analysis.Verdict, score float64) {
	h.T.Helper()
	code, out := h.PostJSON("/judge"+query, body)
	if code != http.StatusOK {
		h.T.Fatalf("%s: POST /judge: %d %s", what, code, out)
	}
	var res analysis.KayentaJudgeResult
	if err := json.Unmarshal(out, &res); err != nil {
		h.T.Fatalf("%s: POST /judge: %v in %s", what, err, out)
	}
	class := map[analysis.Verdict]string{analysis.Pass: "Pass", analysis.Fail: "Fail", analysis.Inconclusive: "Nodata"}[v]
	r := h.analysis(id)
	if r.Verdict != v || res.JudgeName != "shadoweval" || res.Score.Score != score || res.Score.Classification != class ||
		len(res.GroupScores) != 1 || res.GroupScores[0].Score != score || res.GroupScores[0].Classification != class ||
		!strings.Contains(res.Score.ClassificationReason, id) {
		h.T.Errorf("%s: POST /judge answered %s %v (%s), want %s %v from %s (now %s)", what, res.Score.Classification, res.Score.Score, res.Score.ClassificationReason, class, score, id, r.Verdict)
	}
	if len(res.Results) != len(r.Checks) {
		h.T.Fatalf("%s: POST /judge: %d results for %d checks", what, len(res.Results), len(r.Checks))
	}
	for i, c := range r.Checks {
		want := "Nodata"
		switch {
		case c.Verdict == analysis.Pass:
			want = "Pass"
		case c.Verdict == analysis.Fail && c.LowerIsBetter:
			want = "High"
		case c.Verdict == analysis.Fail:
			want = "Low"
		}
		got := res.Results[i]
		if got.Name != c.Name || got.Classification != want || got.Tags["analysis"] != id || got.Tags["metric"] != c.Metric {
			h.T.Errorf("%s: POST /judge result %d: %s %s (tags %v), want %s %s", what, i, got.Name, got.Classification, got.Tags, c.Name, want)
		}
	}
}
