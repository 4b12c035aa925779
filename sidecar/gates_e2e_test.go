package sidecar_test

// End-to-end test of gates, alerts and canary verdicts (SPEC §5, §6): the
// whole App against a real NATS server and the real Alertmanager binary
// (Debian prometheus-alertmanager), time moved only by the fake clock.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/alert"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/stream/gen"

	"github.com/shadoweval/shadoweval/sidecar/internal/testtools"
)

// TestGateCanaryPrecisionE2E walks one canary precision gate through
// inconclusive → ok → pending → firing → resolved with traffic sent through
// NATS, and checks every output on the way: the verdict API, the Flagger
// hooks, the Kayenta judge, /metrics, the NATS alert and verdict messages
// and the alert as the real Alertmanager holds it.
//
// Alertmanager judges startsAt and endsAt by its own wall clock, so the fake
// clock starts in the real past: far enough back that the resolved alert's
// endsAt (the fake time of the resolving evaluation) is already past for
// Alertmanager, while the firing alert's endsAt (fake time of the send + 3 ×
// resend) is still ahead of it. The fake clock moves window − for between
// firing and resolving, so resend must exceed a third of that plus the
// test's own run time; it is 3m (no re-send happens during the test).
func TestGateCanaryPrecisionE2E(t *testing.T) {
	t.Parallel()
	amBase := startAlertmanager(t)

	// The gate judges the shortest configured window.
	def := config.Default()
	shortest := def.Windows[0]
	for _, w := range def.Windows {
		if w.Length < shortest.Length {
			shortest = w
		}
	}
	var (
		win     = shortest.Name()
		winLen  = time.Duration(shortest.Length)
		res     = time.Duration(shortest.Resolution)
		forDur  = time.Minute
		resend  = 3 * time.Minute
		gateArm = "canary"
	)
	const gateName = "canary_precision"
	// Timeline of the fake clock: healthy traffic at t0, the bad burst one
	// bucket later at tBad, firing at tBad+for, resolving at tBad+window
	// (the bad bucket has just left the window), which is ≤ real now.
	t0 := time.Now().Add(-(winLen + 2*res)).Truncate(res)
	tBad := t0.Add(res)
	tFire := tBad.Add(forDur)
	tResolve := tBad.Add(winLen)

	// Generated gold, and live events for it with ts = the fake now.
	const seed, items = 20310304, 300
	genOpt := gen.Options{Seed: seed, Items: items, Awkward: -1, Quality: 1}
	var goldBuf bytes.Buffer
	if err := gen.WriteGold(&goldBuf, genOpt); err != nil {
		t.Fatal(err)
	}
	goldFile := filepath.Join(t.TempDir(), "gold.jsonl")
	if err := os.WriteFile(goldFile, goldBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var trMu sync.Mutex
	var transitions []gates.Transition
	h := startApp(t, appOptions{
		goldFile:   goldFile,
		clockStart: t0,
		onGateTransition: func(tr gates.Transition) {
			trMu.Lock()
			transitions = append(transitions, tr)
			trMu.Unlock()
		},
		configure: func(c *config.Config) {
			c.Alerting = config.AlertingConfig{AlertmanagerURL: amBase, Resend: config.Duration(resend)}
			c.Gates = []config.Gate{{
				Name: gateName, Metric: "precision", Op: ">=", Threshold: 0.80,
				Window: win, MinSamples: 50, For: config.Duration(forDur),
				Arms: []string{gateArm}, Severity: "page",
			}}
		},
	})
	alerts := subscribe(t, h.nc, "shadoweval.alerts."+gateArm)
	verdicts := subscribe(t, h.nc, "shadoweval.verdicts."+gateArm)

	genOpt.Arms = []string{"live", gateArm}
	genOpt.Now = h.clock.Now
	src := gen.NewTraceSource(genOpt)
	send := func(arm string, n int) {
		t.Helper()
		for range n {
			if err := h.nc.Publish("rag.trace."+arm, src.NextFor(arm)); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.nc.FlushTimeout(waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	// nextVerdict is the next verdict message for the gate's window.
	nextVerdict := func(what string) gates.VerdictResponse {
		t.Helper()
		for {
			var v gates.VerdictResponse
			receiveJSON(t, verdicts, what, &v)
			if v.Window == win {
				return v
			}
		}
	}
	gateOf := func(rs []gates.Result) gates.Result {
		t.Helper()
		for _, r := range rs {
			if r.Gate == gateName && r.Arm == gateArm {
				return r
			}
		}
		t.Fatalf("gate %s of arm %s missing from %+v", gateName, gateArm, rs)
		return gates.Result{}
	}
	stateLabels := func(state string) map[string]string {
		return map[string]string{"gate": gateName, "arm": gateArm, "window": win, "state": state}
	}
	verdictPath := "/api/v1/verdict?arm=" + gateArm + "&window=" + win

	// 1. Healthy traffic on both arms: the gate passes.
	send(gateArm, 100)
	send("live", 100)
	h.waitWindow("live", win, 100)
	healthy := h.waitWindow(gateArm, win, 100)
	if p, n := value(t, healthy, "precision"), samples(t, healthy, "precision"); p != 1 || n < 50 {
		t.Fatalf("healthy canary: precision %v over %d samples, want 1 over >= 50", p, n)
	}
	h.app.EvaluateGatesNow()
	v := h.verdict(verdictPath)
	if g := gateOf(v.Gates); v.Verdict != gates.VerdictPass || g.State != gates.OK {
		t.Fatalf("healthy: verdict %s, gate %s (%s), want pass and ok", v.Verdict, g.State, g.Reason)
	}
	if m := nextVerdict("the pass verdict"); m.Verdict != gates.VerdictPass || m.Arm != gateArm || gateOf(m.Gates).State != gates.OK {
		t.Errorf("verdict message %+v, want pass with the gate ok", m)
	}
	h.checkMetric("shadoweval_gate_state", stateLabels("ok"), 1)
	h.checkHooks(gateArm, map[string]int{"confirm-promotion": http.StatusOK, "rollback": http.StatusPreconditionFailed})

	// 2. A burst of bad canary answers one bucket later: precision falls
	// below 0.80 and the gate turns pending (it must break for `for`).
	h.clock.Advance(tBad.Sub(h.clock.Now()))
	src.SetQuality(gateArm, 0)
	send(gateArm, 100)
	broken := h.waitWindow(gateArm, win, 200)
	badPrecision, badSamples := value(t, broken, "precision"), samples(t, broken, "precision")
	if badPrecision >= 0.80 {
		t.Fatalf("after the bad burst precision is %v (%d samples), want < 0.80", badPrecision, badSamples)
	}
	h.app.EvaluateGatesNow()
	v = h.verdict(verdictPath)
	g := gateOf(v.Gates)
	if v.Verdict != gates.VerdictFail || g.State != gates.Pending {
		t.Fatalf("bad burst: verdict %s, gate %s (%s), want fail and pending", v.Verdict, g.State, g.Reason)
	}
	if !g.ActiveAt.Equal(tBad) || g.Value == nil || *g.Value != badPrecision || g.Samples != badSamples {
		t.Errorf("pending gate %+v, want active_at %v, value %v, samples %d", g, tBad, badPrecision, badSamples)
	}
	if m := nextVerdict("the fail verdict"); m.Verdict != gates.VerdictFail || gateOf(m.Gates).State != gates.Pending {
		t.Errorf("verdict message %+v, want fail with the gate pending", m)
	}
	h.checkHooks(gateArm, map[string]int{"rollback": http.StatusOK, "confirm-promotion": http.StatusPreconditionFailed})
	h.checkJudge(gateArm, win, 0, "Fail", "Low")
	h.checkMetric("shadoweval_gate_state", stateLabels("pending"), 1)

	// 3. `for` later, still broken: firing. The alert goes to NATS and to
	// Alertmanager; the verdict stays fail, so no verdict message.
	h.clock.Advance(tFire.Sub(h.clock.Now()))
	h.app.EvaluateGatesNow()
	v = h.verdict(verdictPath)
	if g := gateOf(v.Gates); v.Verdict != gates.VerdictFail || g.State != gates.Firing || !g.ActiveAt.Equal(tBad) {
		t.Fatalf("after for: verdict %s, gate %s since %v (%s), want fail and firing since %v", v.Verdict, g.State, g.ActiveAt, g.Reason, tBad)
	}
	var fired alert.Alert
	receiveJSON(t, alerts, "the firing alert on NATS", &fired)
	if fired.Status != alert.StatusFiring || fired.Gate != gateName || fired.Arm != gateArm || fired.Severity != "page" ||
		fired.Metric != "precision" || fired.Op != ">=" || fired.Window != win || fired.Threshold != 0.80 ||
		fired.Value == nil || *fired.Value != badPrecision || fired.Samples != badSamples || !fired.StartsAt.Equal(tBad) {
		t.Errorf("NATS alert %+v, want firing with value %v, samples %d, starts_at %v", fired, badPrecision, badSamples, tBad)
	}
	am := waitAMAlert(t, amBase, gateName, gateArm, func(a testtools.AlertmanagerAlert, ok bool) string {
		switch {
		case !ok:
			return "not listed"
		case a.Status.State != "active":
			return "state " + a.Status.State
		}
		return ""
	})
	wantLabels := map[string]string{"alertname": gateName, "gate": gateName, "arm": gateArm, "severity": "page", "metric": "precision"}
	if !maps.Equal(am.Labels, wantLabels) {
		t.Errorf("Alertmanager labels %v, want %v", am.Labels, wantLabels)
	}
	for k, want := range map[string]string{
		"value": strconv.FormatFloat(badPrecision, 'g', -1, 64), "threshold": "0.8",
		"window": win, "samples": strconv.FormatInt(badSamples, 10),
	} {
		if got := am.Annotations[k]; got != want {
			t.Errorf("Alertmanager annotation %s = %q, want %q (all: %v)", k, got, want, am.Annotations)
		}
	}
	if !am.StartsAt.Equal(tBad) || !am.EndsAt.Equal(tFire.Add(3*resend)) {
		t.Errorf("Alertmanager startsAt %v endsAt %v, want %v and %v", am.StartsAt, am.EndsAt, tBad, tFire.Add(3*resend))
	}
	h.checkMetric("shadoweval_gate_state", stateLabels("firing"), 1)
	h.checkMetric("shadoweval_gate_state", stateLabels("pending"), 0)
	h.checkMetric("shadoweval_gate_value", map[string]string{"gate": gateName, "arm": gateArm, "window": win, "metric": "precision"}, badPrecision)
	h.checkHooks(gateArm, map[string]int{"rollback": http.StatusOK, "confirm-promotion": http.StatusPreconditionFailed})
	h.checkJudge(gateArm, win, 0, "Fail", "Low")

	// 4. The bad bucket leaves the window and good traffic fills it: the
	// gate resolves, the alert leaves Alertmanager, the verdict is pass.
	h.clock.Advance(tResolve.Sub(h.clock.Now()))
	src.SetQuality(gateArm, 1)
	send(gateArm, 100)
	send("live", 100)
	h.waitWindow("live", win, 100)
	good := h.waitWindow(gateArm, win, 100) // the earlier events have left the window
	if p, n := value(t, good, "precision"), samples(t, good, "precision"); p < 0.80 || n < 50 {
		t.Fatalf("good canary: precision %v over %d samples, want >= 0.80 over >= 50", p, n)
	}
	h.app.EvaluateGatesNow()
	var resolved alert.Alert
	receiveJSON(t, alerts, "the resolved alert on NATS", &resolved)
	if resolved.Status != alert.StatusResolved || resolved.Gate != gateName || resolved.Arm != gateArm ||
		!resolved.StartsAt.Equal(tBad) || !resolved.EndsAt.Equal(tResolve) || resolved.Value == nil || *resolved.Value < 0.80 {
		t.Errorf("NATS alert %+v, want resolved at %v, started %v, value >= 0.80", resolved, tResolve, tBad)
	}
	// The next verdict message after fail is pass: none came at firing.
	if m := nextVerdict("the pass verdict after resolving"); m.Verdict != gates.VerdictPass || !slices.Contains([]gates.State{gates.Resolved, gates.OK}, gateOf(m.Gates).State) {
		t.Errorf("verdict message %+v, want pass with the gate resolved", m)
	}
	waitAMAlert(t, amBase, gateName, gateArm, func(a testtools.AlertmanagerAlert, ok bool) string {
		if ok {
			return fmt.Sprintf("still listed, state %s, endsAt %v", a.Status.State, a.EndsAt)
		}
		return ""
	})
	for status, want := range map[string]float64{"firing": 1, "resolved": 1} {
		if got := testtools.AlertmanagerMetric(t, amBase, "alertmanager_alerts_received_total", `status="`+status+`"`); got != want {
			t.Errorf("Alertmanager alertmanager_alerts_received_total{status=%q} = %v, want %v", status, got, want)
		}
	}
	h.waitMetric("shadoweval_alert_notifications_total", map[string]string{"receiver": "alertmanager", "result": "sent"}, 2)
	h.waitMetric("shadoweval_alert_notifications_total", map[string]string{"receiver": "nats", "result": "sent"}, 2)

	// Resolved lasts one evaluation: the gate loop's own ticker may have
	// evaluated again since (resolved → ok); the transitions say which.
	trMu.Lock()
	trs := slices.Clone(transitions)
	trMu.Unlock()
	var steps []string
	for _, tr := range trs {
		if tr.Gate != gateName || tr.Arm != gateArm {
			t.Errorf("transition of another gate or arm: %+v", tr)
			continue
		}
		steps = append(steps, tr.From.String()+"→"+tr.State.String())
	}
	wantSteps := []string{"inconclusive→ok", "ok→pending", "pending→firing", "firing→resolved"}
	final := gates.Resolved
	if len(steps) == len(wantSteps)+1 && steps[len(steps)-1] == "resolved→ok" {
		steps, final = steps[:len(wantSteps)], gates.OK
	}
	if !slices.Equal(steps, wantSteps) {
		t.Errorf("transitions %v, want %v (then at most resolved→ok)", steps, wantSteps)
	}
	v = h.verdict(verdictPath)
	if g := gateOf(v.Gates); v.Verdict != gates.VerdictPass || g.State != final {
		t.Errorf("recovered: verdict %s, gate %s (%s), want pass and %s", v.Verdict, g.State, g.Reason, final)
	}
	h.checkMetric("shadoweval_gate_state", stateLabels("firing"), 0)
	h.checkMetric("shadoweval_gate_state", stateLabels(final.String()), 1)
	h.checkHooks(gateArm, map[string]int{"confirm-promotion": http.StatusOK, "rollback": http.StatusPreconditionFailed})
	h.checkJudge(gateArm, win, 100, "Pass", "Pass")
}

// ---- helpers of the gate test ----

// waitWindow waits until arm's window win counts exactly n scored events
// and nothing else, and returns its report.
func (h *testApp) waitWindow(arm, win string, n int64) sidecar.WindowReport {
	h.t.Helper()
	var rep sidecar.WindowReport
	poll(h.t, fmt.Sprintf("%d scored events in arm %s over %s", n, arm, win), func() string {
		code, body := h.get("/api/v1/windows?arm=" + arm + "&window=" + win)
		if code != http.StatusOK {
			return fmt.Sprintf("status %d: %s", code, body)
		}
		var r sidecar.WindowReport
		if err := json.Unmarshal(body, &r); err != nil {
			h.t.Fatalf("GET /api/v1/windows: %v in %s", err, body)
		}
		for _, k := range outcomes {
			want := int64(0)
			if k == "scored" {
				want = n
			}
			if r.Events[k] != want {
				return fmt.Sprintf("events are %v", r.Events)
			}
		}
		rep = r
		return ""
	})
	return rep
}

// verdict is GET path (an /api/v1/verdict URL), which always answers 200.
func (h *testApp) verdict(path string) gates.VerdictResponse {
	h.t.Helper()
	code, body := h.get(path)
	if code != http.StatusOK {
		h.t.Fatalf("GET %s: status %d: %s", path, code, body)
	}
	var v gates.VerdictResponse
	if err := json.Unmarshal(body, &v); err != nil {
		h.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	return v
}

// postJSON posts body and returns the status and the answer.
func (h *testApp) postJSON(path, body string) (int, []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	return resp.StatusCode, out
}

// checkHooks posts a Flagger webhook payload for arm to each hook and
// checks the status it answers.
func (h *testApp) checkHooks(arm string, want map[string]int) {
	h.t.Helper()
	body := `{"name":"x","namespace":"y","phase":"Progressing","metadata":{"arm":"` + arm + `"}}`
	for hook, status := range want {
		code, out := h.postJSON("/api/v1/flagger/"+hook, body)
		if code != status {
			h.t.Errorf("POST /api/v1/flagger/%s: status %d, want %d: %s", hook, code, status, out)
		}
	}
}

// checkJudge posts a Kayenta remote judge request for arm and win and
// checks the score, its classification and the gate's classification.
func (h *testApp) checkJudge(arm, win string, score float64, class, gateClass string) {
	h.t.Helper()
	body := `{"canaryConfig":{"name":"x","judge":{"name":"shadoweval","judgeConfigurations":{"arm":"` + arm + `","window":"` + win + `"}}},` +
		`"scoreThresholds":{"pass":95,"marginal":75},"metricSetPairList":[]}`
	code, out := h.postJSON("/judge", body)
	if code != http.StatusOK {
		h.t.Fatalf("POST /judge: status %d: %s", code, out)
	}
	var res gates.KayentaJudgeResult
	if err := json.Unmarshal(out, &res); err != nil {
		h.t.Fatalf("POST /judge: %v in %s", err, out)
	}
	if res.Score.Score != score || res.Score.Classification != class || len(res.Results) != 1 || res.Results[0].Classification != gateClass {
		h.t.Errorf("POST /judge: %s, want score %v %s with the gate %s", out, score, class, gateClass)
	}
}

// subscribe delivers the messages of subject on a channel, from before the
// call returns.
func subscribe(t testing.TB, nc *nats.Conn, subject string) <-chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(subject, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.FlushTimeout(waitTimeout); err != nil {
		t.Fatal(err)
	}
	return ch
}

// receiveJSON decodes the next message of ch into v, failing after
// waitTimeout.
func receiveJSON(t testing.TB, ch <-chan *nats.Msg, what string, v any) {
	t.Helper()
	select {
	case m := <-ch:
		if err := json.Unmarshal(m.Data, v); err != nil {
			t.Fatalf("%s on %s: %v in %s", what, m.Subject, err, m.Data)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("gave up after %v waiting for %s", waitTimeout, what)
	}
}

// ---- the real Alertmanager (as sidecar/alert's own tests run it) ----

// startAlertmanager runs the real Alertmanager (make deps installs it)
// with one null receiver and returns its base URL. Without the binary the
// test is skipped, or failed under CI.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	return testtools.StartAlertmanager(t, "", testtools.AlertmanagerNullConfig)
}

// waitAMAlert polls Alertmanager's alert list until cond, given the alert
// of gate and arm (ok false when it is not listed), returns "".
func waitAMAlert(t *testing.T, base, gate, arm string, cond func(a testtools.AlertmanagerAlert, ok bool) string) testtools.AlertmanagerAlert {
	t.Helper()
	var found testtools.AlertmanagerAlert
	poll(t, fmt.Sprintf("alert %s/%s in Alertmanager", gate, arm), func() string {
		list, err := testtools.AlertmanagerAlerts(base)
		if err != nil {
			return err.Error()
		}
		a, ok := testtools.FindAlert(list, gate, arm)
		found = a
		return cond(a, ok)
	})
	return found
}
