package sidecar_test

// End-to-end test of alert gates and alerts (SPEC §5.1, §6): the
// whole App against a real NATS server and the real Alertmanager binary
// (Debian prometheus-alertmanager), time moved only by the fake clock.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/alert"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/wire/gen"

	"github.com/shadoweval/shadoweval/testenv"
)

// TestGateCanaryPrecisionE2E walks one canary precision alert gate through
// inconclusive → ok → pending → firing → resolved with traffic sent through
// NATS, and checks every output of the alert path on the way: the gate
// state and value on /metrics, the NATS alert messages and the alert as the
// real Alertmanager holds it. Promotion verdicts come from analyses, not
// gates (analyses_e2e_test.go).
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
	amBase := testenv.StartAlertmanager(t, "", testenv.AlertmanagerNullConfig)

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
	goldFile := writeGenGold(t, genOpt)

	var trMu sync.Mutex
	var transitions []gates.Transition
	h := startApp(t, appOptions{
		goldFile:   goldFile,
		clockStart: t0,
		options: func(o *sidecar.Options) {
			o.OnGateTransition = func(tr gates.Transition) {
				trMu.Lock()
				transitions = append(transitions, tr)
				trMu.Unlock()
			}
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
	alerts := subscribe(t, h.NC, "shadoweval.alerts."+gateArm)

	genOpt.Arms = []string{"live", gateArm}
	traffic := h.Traffic(genOpt)
	// gate is the engine's result for the gate and arm: its active_at,
	// value and samples are on no HTTP endpoint.
	gate := func() gates.Result {
		t.Helper()
		for _, r := range h.Sidecar.Gates().Results(gateArm, win) {
			if r.Gate == gateName && r.Arm == gateArm {
				return r
			}
		}
		t.Fatalf("gate %s of arm %s has no result", gateName, gateArm)
		return gates.Result{}
	}
	stateLabels := func(state string) map[string]string {
		return map[string]string{"gate": gateName, "arm": gateArm, "window": win, "state": state}
	}
	// checkState checks the gate is in state on /metrics (1 there, 0 in
	// every other state) and in the engine.
	checkState := func(what string, want gates.State) {
		t.Helper()
		for _, s := range []gates.State{gates.Inconclusive, gates.OK, gates.Pending, gates.Firing, gates.Resolved} {
			v := 0.0
			if s == want {
				v = 1
			}
			h.CheckMetric("shadoweval_gate_state", stateLabels(s.String()), v)
		}
		if g := gate(); g.State != want {
			t.Errorf("%s: gate %s (%s), want %s", what, g.State, g.Reason, want)
		}
	}
	valueLabels := map[string]string{"gate": gateName, "arm": gateArm, "window": win, "metric": "precision"}

	// 1. Healthy traffic on both arms: the gate is ok.
	traffic.Send(100, gateArm)
	traffic.Send(100, "live")
	h.waitWindow("live", win, 100)
	healthy := h.waitWindow(gateArm, win, 100)
	if p, n := value(t, healthy, "precision"), samples(t, healthy, "precision"); p != 1 || n < 50 {
		t.Fatalf("healthy canary: precision %v over %d samples, want 1 over >= 50", p, n)
	}
	h.Sidecar.EvaluateGatesNow()
	checkState("healthy", gates.OK)
	h.CheckMetric("shadoweval_gate_value", valueLabels, 1)
	h.CheckMetric("shadoweval_gate_threshold", map[string]string{"gate": gateName, "window": win, "metric": "precision", "op": ">="}, 0.80)

	// 2. A burst of bad canary answers one bucket later: precision falls
	// below 0.80 and the gate turns pending (it must break for `for`).
	h.Clock.Advance(tBad.Sub(h.Clock.Now()))
	traffic.SetQuality(gateArm, 0)
	traffic.Send(100, gateArm)
	broken := h.waitWindow(gateArm, win, 200)
	badPrecision, badSamples := value(t, broken, "precision"), samples(t, broken, "precision")
	if badPrecision >= 0.80 {
		t.Fatalf("after the bad burst precision is %v (%d samples), want < 0.80", badPrecision, badSamples)
	}
	h.Sidecar.EvaluateGatesNow()
	checkState("bad burst", gates.Pending)
	if g := gate(); !g.ActiveAt.Equal(tBad) || g.Value == nil || *g.Value != badPrecision || g.Samples != badSamples {
		t.Errorf("pending gate %+v, want active_at %v, value %v, samples %d", g, tBad, badPrecision, badSamples)
	}
	h.CheckMetric("shadoweval_gate_value", valueLabels, badPrecision)

	// 3. `for` later, still broken: firing. The alert goes to NATS and to
	// Alertmanager.
	h.Clock.Advance(tFire.Sub(h.Clock.Now()))
	h.Sidecar.EvaluateGatesNow()
	checkState("after for", gates.Firing)
	if g := gate(); !g.ActiveAt.Equal(tBad) {
		t.Errorf("firing gate active since %v, want %v", g.ActiveAt, tBad)
	}
	var fired alert.Alert
	receiveJSON(t, alerts, "the firing alert on NATS", &fired)
	if fired.Status != alert.StatusFiring || fired.Gate != gateName || fired.Arm != gateArm || fired.Severity != "page" ||
		fired.Metric != "precision" || fired.Op != ">=" || fired.Window != win || fired.Threshold != 0.80 ||
		fired.Value == nil || *fired.Value != badPrecision || fired.Samples != badSamples || !fired.StartsAt.Equal(tBad) {
		t.Errorf("NATS alert %+v, want firing with value %v, samples %d, starts_at %v", fired, badPrecision, badSamples, tBad)
	}
	am := testenv.WaitAlert(t, waitTimeout, amBase, gateName, gateArm, func(a testenv.AlertmanagerAlert, ok bool) string {
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
	h.CheckMetric("shadoweval_gate_value", valueLabels, badPrecision)

	// 4. The bad bucket leaves the window and good traffic fills it: the
	// gate resolves and the alert leaves Alertmanager.
	h.Clock.Advance(tResolve.Sub(h.Clock.Now()))
	traffic.SetQuality(gateArm, 1)
	traffic.Send(100, gateArm)
	traffic.Send(100, "live")
	h.waitWindow("live", win, 100)
	good := h.waitWindow(gateArm, win, 100) // the earlier events have left the window
	goodPrecision := value(t, good, "precision")
	if n := samples(t, good, "precision"); goodPrecision < 0.80 || n < 50 {
		t.Fatalf("good canary: precision %v over %d samples, want >= 0.80 over >= 50", goodPrecision, n)
	}
	h.Sidecar.EvaluateGatesNow()
	var resolved alert.Alert
	receiveJSON(t, alerts, "the resolved alert on NATS", &resolved)
	if resolved.Status != alert.StatusResolved || resolved.Gate != gateName || resolved.Arm != gateArm ||
		!resolved.StartsAt.Equal(tBad) || !resolved.EndsAt.Equal(tResolve) || resolved.Value == nil || *resolved.Value < 0.80 {
		t.Errorf("NATS alert %+v, want resolved at %v, started %v, value >= 0.80", resolved, tResolve, tBad)
	}
	testenv.WaitAlert(t, waitTimeout, amBase, gateName, gateArm, func(a testenv.AlertmanagerAlert, ok bool) string {
		if ok {
			return fmt.Sprintf("still listed, state %s, endsAt %v", a.Status.State, a.EndsAt)
		}
		return ""
	})
	for status, want := range map[string]float64{"firing": 1, "resolved": 1} {
		if got := testenv.AlertmanagerMetric(t, amBase, "alertmanager_alerts_received_total", `status="`+status+`"`); got != want {
			t.Errorf("Alertmanager alertmanager_alerts_received_total{status=%q} = %v, want %v", status, got, want)
		}
	}
	h.WaitMetric("shadoweval_alert_notifications_total", map[string]string{"receiver": "alertmanager", "result": "sent"}, 2)
	h.WaitMetric("shadoweval_alert_notifications_total", map[string]string{"receiver": "nats", "result": "sent"}, 2)

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
	checkState("recovered", final)
	h.CheckMetric("shadoweval_gate_value", valueLabels, goodPrecision)
}

// writeGenGold writes the generated gold set of opt to a temp file.
func writeGenGold(t testing.TB, opt gen.Options) string {
	t.Helper()
	var buf bytes.Buffer
	if err := gen.WriteGold(&buf, opt); err != nil {
		t.Fatal(err)
	}
	path := testenv.WriteFile(t, t.TempDir(), "gold.jsonl", buf.Bytes())
	return path
}

// ---- helpers of the gate test ----

// waitWindow waits until arm's window win counts exactly n scored events
// and nothing else, and returns its report.
func (h *testApp) waitWindow(arm, win string, n int64) sidecar.WindowReport {
	h.T.Helper()
	var rep sidecar.WindowReport
	poll(h.T, fmt.Sprintf("%d scored events in arm %s over %s", n, arm, win), func() string {
		code, body := h.Get("/api/v1/windows?arm=" + arm + "&window=" + win)
		if code != http.StatusOK {
			return fmt.Sprintf("status %d: %s", code, body)
		}
		var r sidecar.WindowReport
		if err := json.Unmarshal(body, &r); err != nil {
			h.T.Fatalf("GET /api/v1/windows: %v in %s", err, body)
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
