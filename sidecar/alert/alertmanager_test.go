package alert

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/shadoweval/shadoweval/testenv"

	"github.com/shadoweval/shadoweval/config"
)

// notification is the part of an Alertmanager webhook notification the
// test reads.
type notification struct {
	Alerts []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      time.Time         `json:"endsAt"`
	} `json:"alerts"`
}

// startAlertmanager runs the real alertmanager with a null receiver by
// default and, for alertname precision_floor, a webhook to capture, which
// sees what Alertmanager made of our alerts, resolved ones included. It
// returns the base URL.
func startAlertmanager(t *testing.T, addr, capture string) string {
	t.Helper()
	return testenv.StartAlertmanager(t, addr, fmt.Sprintf(`route:
  receiver: "null"
  group_by: ["..."]
  group_wait: 10ms
  group_interval: 100ms
  repeat_interval: 1h
  routes:
    - matchers: ['alertname="precision_floor"']
      receiver: capture
receivers:
  - name: "null"
  - name: capture
    webhook_configs:
      - url: %q
        send_resolved: true
`, capture))
}

// TestRealAlertmanager sends a firing then a resolved alert through the
// Dispatcher to the real alertmanager binary.
func TestRealAlertmanager(t *testing.T) {
	var mu sync.Mutex
	var notes []notification
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &n, json.RejectUnknownMembers(false)); err != nil {
			t.Errorf("Alertmanager notification %s: %v", body, err)
		}
		mu.Lock()
		notes = append(notes, n)
		mu.Unlock()
	}))
	t.Cleanup(capture.Close)
	base := startAlertmanager(t, "", capture.URL)

	const resend = time.Minute
	d, reg := start(t, Options{
		Config:       config.AlertingConfig{AlertmanagerURL: base, Resend: config.Duration(resend)},
		GeneratorURL: "http://sidecar.example:9464/",
	})
	firing := testAlert("precision_floor", "canary", StatusFiring)
	// A bystander on another gate, routed to the null receiver: it must
	// stay active when ours resolves.
	bystander := testAlert("ship_chr", "live", StatusFiring)
	bystander.Metric, bystander.Severity = "chr", "warning"
	sent := time.Now()
	d.Notify(firing)
	d.Notify(bystander)

	var got testenv.AlertmanagerAlert
	testenv.Eventually(t, waitLimit, "the firing alert active in Alertmanager", func() bool {
		var ok bool
		got, ok = testenv.FindAlert(testenv.MustAlertmanagerAlerts(t, base), "precision_floor", "canary")
		return ok && got.Status.State == "active"
	})
	checkFiringPrecisionFloor(t, got.Labels, got.Annotations)
	if !got.StartsAt.Equal(firing.StartsAt) {
		t.Errorf("startsAt %v, want %v", got.StartsAt, firing.StartsAt)
	}
	// endsAt = send time + 3 × resend: Alertmanager resolves it by itself
	// if the re-sends stop.
	if lo, hi := sent.Add(3*resend-time.Second), time.Now().Add(3*resend+time.Second); got.EndsAt.Before(lo) || got.EndsAt.After(hi) {
		t.Errorf("endsAt %v, want in [%v, %v]", got.EndsAt, lo, hi)
	}
	if len(got.Receivers) != 1 || got.Receivers[0].Name != "capture" {
		t.Errorf("receivers %+v", got.Receivers)
	}
	testenv.Eventually(t, waitLimit, "the firing notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) > 0
	})

	resolved := firing
	resolved.Status = StatusResolved
	resolved.Value = ptr(0.85)
	resolved.EndsAt = time.Now().Truncate(time.Millisecond)
	d.Notify(resolved)
	// Alertmanager's API lists no resolved alert: ours leaves the list,
	// the bystander stays, and the notification of the capture receiver
	// says resolved with our endsAt.
	testenv.Eventually(t, waitLimit, "the alert resolved in Alertmanager", func() bool {
		_, ok := testenv.FindAlert(testenv.MustAlertmanagerAlerts(t, base), "precision_floor", "canary")
		return !ok
	})
	if a, ok := testenv.FindAlert(testenv.MustAlertmanagerAlerts(t, base), "ship_chr", "live"); !ok || a.Status.State != "active" || len(a.Receivers) != 1 || a.Receivers[0].Name != "null" {
		t.Errorf("the bystander: %+v %v", a, ok)
	}
	if n := testenv.AlertmanagerMetric(t, base, "alertmanager_alerts_received_total", `status="resolved"`); n != 1 {
		t.Errorf("alertmanager_alerts_received_total{status=resolved} = %v, want 1", n)
	}
	testenv.Eventually(t, waitLimit, "the resolved notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range notes {
			for _, a := range n.Alerts {
				if a.Status == "resolved" && a.Labels["gate"] == "precision_floor" {
					if !a.EndsAt.Equal(resolved.EndsAt) || !a.StartsAt.Equal(firing.StartsAt) ||
						a.Annotations["value"] != "0.85" || a.Annotations["summary"] != "Gate precision_floor resolved on arm canary" {
						t.Errorf("resolved alert as Alertmanager notifies it: %+v, want endsAt %v", a, resolved.EndsAt)
					}
					return true
				}
			}
		}
		return false
	})
	if n := notifications(t, reg, ReceiverAlertmanager, resultSent); n != 3 {
		t.Errorf("sent %v, want 3", n)
	}
	if n := notifications(t, reg, ReceiverAlertmanager, resultFailed) + retries(t, reg, ReceiverAlertmanager); n != 0 {
		t.Errorf("failures or retries: %v", n)
	}
}

// TestRealAlertmanagerComesBack: while Alertmanager is down, Notify
// stays non-blocking, NATS delivers, and the failed attempts are retried
// and counted; once it is up, the retry delivers.
func TestRealAlertmanagerComesBack(t *testing.T) {
	testenv.NeedAlertmanager(t)
	addr := testenv.FreeAddr(t)
	published := make(chan Alert, 10)
	d, reg := start(t, Options{
		Config:        config.AlertingConfig{AlertmanagerURL: "http://" + addr},
		Publish:       chanPublish(t, published),
		SubjectPrefix: "shadoweval.alerts",
		MaxAttempts:   1000,
		MinBackoff:    10 * time.Millisecond,
		MaxBackoff:    50 * time.Millisecond,
	})
	d.Notify(testAlert("ship_precision", "canary", StatusFiring))
	if a := <-published; a.Gate != "ship_precision" {
		t.Errorf("nats got %+v", a)
	}
	testenv.Eventually(t, waitLimit, "two retries", func() bool { return retries(t, reg, ReceiverAlertmanager) >= 2 })
	if n := notifications(t, reg, ReceiverAlertmanager, resultSent); n != 0 {
		t.Fatalf("sent %v with Alertmanager down", n)
	}
	base := startAlertmanager(t, addr, "http://127.0.0.1:1/unused")
	testenv.Eventually(t, waitLimit, "the alert in Alertmanager", func() bool {
		_, ok := testenv.FindAlert(testenv.MustAlertmanagerAlerts(t, base), "ship_precision", "canary")
		return ok
	})
	testenv.Eventually(t, waitLimit, "the send counted", func() bool { return notifications(t, reg, ReceiverAlertmanager, resultSent) == 1 })
	if n := notifications(t, reg, ReceiverAlertmanager, resultFailed) + notifications(t, reg, ReceiverAlertmanager, resultDropped); n != 0 {
		t.Errorf("failed or dropped: %v", n)
	}
}
