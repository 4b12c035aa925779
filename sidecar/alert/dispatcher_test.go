package alert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
)

const waitLimit = 20 * time.Second

func ptr(v float64) *float64 { return &v }

func testAlert(gate, arm, status string) Alert {
	return Alert{
		Result: gates.Result{
			Gate: gate, Arm: arm, Severity: "page", Metric: "precision", Op: ">=", Window: "5m",
			Value: ptr(0.7), Threshold: 0.8, Samples: 250,
		},
		Status: status, StartsAt: time.Now().Add(-time.Hour).Truncate(time.Second),
	}
}

// counter reads a counter of reg; 0 when it has no such series.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	v, _ := testenv.Gather(t, reg).Value(name, labels)
	return v
}

func notifications(t *testing.T, reg *prometheus.Registry, receiver, result string) float64 {
	t.Helper()
	return counter(t, reg, "shadoweval_alert_notifications_total", map[string]string{"receiver": receiver, "result": result})
}

func retries(t *testing.T, reg *prometheus.Registry, receiver string) float64 {
	t.Helper()
	return counter(t, reg, "shadoweval_alert_retries_total", map[string]string{"receiver": receiver})
}

// newDispatcher builds a Dispatcher on a new registry, logging nowhere
// unless o.Logger says otherwise; it does not run it.
func newDispatcher(t *testing.T, o Options) (*Dispatcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	o.Registerer = reg
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return d, reg
}

// start builds a Dispatcher on a new registry, runs it, and stops it (with
// a deadline) when the test ends.
func start(t *testing.T, o Options) (*Dispatcher, *prometheus.Registry) {
	t.Helper()
	d, reg := newDispatcher(t, o)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.Stop(ctx)
		select {
		case <-ran:
		case <-time.After(waitLimit):
			t.Error("Run did not return after Stop")
		}
	})
	return d, reg
}

// request is one request a fake receiver got.
type request struct {
	path, contentType string
	body              []byte
	at                time.Time
}

// fakeReceiver is an HTTP server recording requests and answering with
// answer(r) (200 when nil).
type fakeReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []request
	answer   func(body []byte) int
}

func newFakeReceiver(t *testing.T, answer func(body []byte) int) *fakeReceiver {
	f := &fakeReceiver{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, request{r.URL.Path, r.Header.Get("Content-Type"), body, time.Now()})
		f.mu.Unlock()
		code := http.StatusOK
		if f.answer != nil {
			code = f.answer(body)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeReceiver) got() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

// postedAlerts decodes an Alertmanager request body.
func postedAlerts(t *testing.T, body []byte) []PostableAlert {
	t.Helper()
	var list []PostableAlert
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("bad Alertmanager body %s: %v", body, err)
	}
	return list
}

// TestNATSOutput publishes through the app's Publisher to a real NATS
// server.
func TestNATSOutput(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	msgs := testenv.Collect(t, testenv.Connect(t, s.ClientURL()), "shadoweval.alerts.>", 10)
	d, reg := start(t, Options{
		Config:        config.AlertingConfig{Resend: config.Duration(time.Minute)},
		Publish:       stream.NewPublisher(nc).PublishJSON,
		SubjectPrefix: "shadoweval.alerts",
	})
	if got := d.Receivers(); len(got) != 1 || got[0] != ReceiverNATS {
		t.Fatalf("receivers %v, want just nats", got)
	}

	firing := testAlert("precision_floor", "canary", StatusFiring)
	d.Notify(firing)
	m := testenv.Next(t, msgs)
	if m.Subject != "shadoweval.alerts.canary" {
		t.Errorf("subject %q", m.Subject)
	}
	var raw map[string]any
	if err := json.Unmarshal(m.Data, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["ends_at"]; ok {
		t.Errorf("a firing alert has ends_at: %s", m.Data)
	}
	if _, ok := raw["compare_to"]; ok {
		t.Errorf("compare_to is sent empty: %s", m.Data)
	}
	var got Alert
	if err := json.Unmarshal(m.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Gate != "precision_floor" || got.Arm != "canary" || got.Status != StatusFiring || got.Value == nil ||
		*got.Value != 0.7 || got.Threshold != 0.8 || got.Samples != 250 || !got.StartsAt.Equal(firing.StartsAt) {
		t.Errorf("firing message %s", m.Data)
	}

	resolved := testAlert("precision_floor", "canary", StatusResolved)
	resolved.Value = nil
	resolved.EndsAt = firing.StartsAt.Add(7 * time.Minute)
	d.Notify(resolved)
	m = testenv.Next(t, msgs)
	got = Alert{}
	if err := json.Unmarshal(m.Data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusResolved || got.Value != nil || !got.EndsAt.Equal(resolved.EndsAt) {
		t.Errorf("resolved message %s", m.Data)
	}
	if !strings.Contains(string(m.Data), `"value":null`) {
		t.Errorf("no value is not sent as null: %s", m.Data)
	}
	testenv.Eventually(t, waitLimit, "two sent", func() bool { return notifications(t, reg, ReceiverNATS, resultSent) == 2 })
}

// TestAlertmanagerPayloadAndResend checks the postable alert and that a
// firing alert is re-sent every resend until resolved.
func TestAlertmanagerPayloadAndResend(t *testing.T) {
	am := newFakeReceiver(t, nil)
	const resend = 30 * time.Millisecond
	d, reg := start(t, Options{
		Config:       config.AlertingConfig{AlertmanagerURL: am.URL + "/prefix/", Resend: config.Duration(resend)},
		GeneratorURL: "http://sidecar:9464/",
	})
	firing := testAlert("precision_floor", "canary", StatusFiring)
	d.Notify(firing)
	testenv.Eventually(t, waitLimit, "three posts (one send, two re-sends)", func() bool { return len(am.got()) >= 3 })
	for i, r := range am.got() {
		if r.path != "/prefix/api/v2/alerts" || r.contentType != "application/json" {
			t.Fatalf("request %d: path %q, content type %q", i, r.path, r.contentType)
		}
		list := postedAlerts(t, r.body)
		if len(list) != 1 {
			t.Fatalf("request %d: %d alerts", i, len(list))
		}
		p := list[0]
		checkFiringPrecisionFloor(t, p.Labels, p.Annotations)
		if !p.StartsAt.Equal(firing.StartsAt) || p.GeneratorURL != "http://sidecar:9464/" {
			t.Errorf("startsAt %v generatorURL %q", p.StartsAt, p.GeneratorURL)
		}
		// endsAt is 3 × resend after the send, which is before the receipt.
		if ends := p.EndsAt.Sub(r.at); ends > 3*resend || ends < 3*resend-5*time.Second {
			t.Errorf("endsAt is %v after the receipt, want just under %v", ends, 3*resend)
		}
	}

	resolved := testAlert("precision_floor", "canary", StatusResolved)
	resolved.EndsAt = time.Now().Add(-time.Second).Truncate(time.Millisecond)
	d.Notify(resolved)
	// Another firing alert: once it has been re-sent twice after the
	// resolved one was posted, the first would have been re-sent too.
	other := testAlert("other_gate", "shadow", StatusFiring)
	d.Notify(other)
	resolvedAt := -1
	testenv.Eventually(t, waitLimit, "the resolved alert and two re-sends of another", func() bool {
		got := am.got()
		others := 0
		for i, r := range got {
			p := postedAlerts(t, r.body)[0]
			switch {
			case p.Labels["gate"] == "precision_floor" && p.EndsAt.Equal(resolved.EndsAt):
				resolvedAt = i
			case resolvedAt >= 0 && p.Labels["gate"] == "other_gate":
				others++
			}
		}
		return resolvedAt >= 0 && others >= 2
	})
	for _, r := range am.got()[resolvedAt+1:] {
		if p := postedAlerts(t, r.body)[0]; p.Labels["gate"] == "precision_floor" {
			t.Errorf("re-sent after it resolved: %s", r.body)
		}
	}
	p := postedAlerts(t, am.got()[resolvedAt].body)[0]
	if p.Annotations["summary"] != "Gate precision_floor resolved on arm canary" {
		t.Errorf("resolved summary %q", p.Annotations["summary"])
	}
	if notifications(t, reg, ReceiverAlertmanager, resultFailed) != 0 {
		t.Error("failures counted")
	}
}

// checkFiringPrecisionFloor checks the labels and annotations that
// testAlert("precision_floor", "canary", StatusFiring) is sent with, as
// the Dispatcher posts them and as Alertmanager lists them.
func checkFiringPrecisionFloor(t *testing.T, labels, annotations map[string]string) {
	t.Helper()
	wantLabels := map[string]string{"alertname": "precision_floor", "gate": "precision_floor", "arm": "canary", "severity": "page", "metric": "precision"}
	if !maps.Equal(labels, wantLabels) {
		t.Errorf("labels %v, want %v", labels, wantLabels)
	}
	wantAnn := map[string]string{
		"value": "0.7", "threshold": "0.8", "window": "5m", "samples": "250",
		"summary":     "Gate precision_floor firing on arm canary",
		"description": "precision over 5m is 0.7; the gate wants >= 0.8 (250 samples).",
	}
	if !maps.Equal(annotations, wantAnn) {
		t.Errorf("annotations %v, want %v", annotations, wantAnn)
	}
}

func TestWebhookBody(t *testing.T) {
	hook := newFakeReceiver(t, nil)
	d, reg := start(t, Options{Config: config.AlertingConfig{WebhookURL: hook.URL + "/hook?token=x"}})
	a := testAlert("recall5_vs_live", "canary", StatusFiring)
	a.CompareTo = "live"
	a.Metric = "recall_at_5"
	a.Value = ptr(-0.05)
	d.Notify(a)
	testenv.Eventually(t, waitLimit, "the webhook post", func() bool { return len(hook.got()) == 1 })
	r := hook.got()[0]
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if r.path != "/hook" || string(r.body) != string(want) {
		t.Errorf("webhook got %s %s, want %s", r.path, r.body, want)
	}
	testenv.Eventually(t, waitLimit, "sent counted", func() bool { return notifications(t, reg, ReceiverWebhook, resultSent) == 1 })
}

// closedURL is an http URL on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// chanPublish is a NATS stand-in delivering to a channel; the subject
// is checked.
func chanPublish(t *testing.T, ch chan<- Alert) PublishFunc {
	return func(subject string, v any) error {
		a := v.(Alert)
		if subject != "shadoweval.alerts."+a.Arm {
			t.Errorf("subject %q for arm %q", subject, a.Arm)
		}
		ch <- a
		return nil
	}
}

// TestDeadReceiver: with Alertmanager and the webhook on a closed port,
// NATS still gets its messages, and the others count failures and retries.
func TestDeadReceiver(t *testing.T) {
	dead := closedURL(t)
	published := make(chan Alert, 10)
	d, reg := start(t, Options{
		Config:        config.AlertingConfig{AlertmanagerURL: dead, WebhookURL: dead + "/hook"},
		Publish:       chanPublish(t, published),
		SubjectPrefix: "shadoweval.alerts",
		MaxAttempts:   3,
		MinBackoff:    time.Millisecond,
		MaxBackoff:    2 * time.Millisecond,
	})
	d.Notify(testAlert("g", "canary", StatusFiring))
	if got := testenv.Next(t, published); got.Gate != "g" {
		t.Errorf("published %+v", got)
	}
	for _, r := range []string{ReceiverAlertmanager, ReceiverWebhook} {
		testenv.Eventually(t, waitLimit, r+" failure counted", func() bool { return notifications(t, reg, r, resultFailed) == 1 })
		if got := retries(t, reg, r); got != 2 {
			t.Errorf("%s: %v retries, want 2 (3 attempts)", r, got)
		}
		if got := notifications(t, reg, r, resultSent); got != 0 {
			t.Errorf("%s: %v sent", r, got)
		}
	}
	if got := notifications(t, reg, ReceiverNATS, resultSent); got != 1 {
		t.Errorf("nats: %v sent", got)
	}
}

// TestHangingReceiver: an Alertmanager that never answers blocks neither
// Notify nor NATS; its queue drops the oldest when full, and Stop gives up
// at its deadline.
func TestHangingReceiver(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(am.Close)
	t.Cleanup(func() { close(release) }) // runs before am.Close

	published := make(chan Alert, 200)
	d, reg := newDispatcher(t, Options{
		Config:        config.AlertingConfig{AlertmanagerURL: am.URL},
		Publish:       chanPublish(t, published),
		SubjectPrefix: "shadoweval.alerts",
		QueueSize:     4,
	})
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()

	d.Notify(testAlert("g0", "canary", StatusFiring))
	testenv.Next(t, arrived) // the first is now in flight, for ever
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		for i := 1; i < 100; i++ {
			d.Notify(testAlert(fmt.Sprintf("g%d", i), "canary", StatusFiring))
		}
	}()
	testenv.Next(t, notified) // Notify did not block
	// NATS keeps delivering (its own queue of 4 may overflow in the flood).
	testenv.Eventually(t, waitLimit, "nats done with the flood", func() bool {
		return notifications(t, reg, ReceiverNATS, resultSent)+notifications(t, reg, ReceiverNATS, resultDropped) == 100
	})
	d.Notify(testAlert("last", "canary", StatusFiring))
	testenv.Eventually(t, waitLimit, "the last alert on nats", func() bool {
		for {
			select {
			case a := <-published:
				if a.Gate == "last" {
					return true
				}
			default:
				return false
			}
		}
	})
	// 100 queued behind the one in flight, in a queue of 4.
	if got := notifications(t, reg, ReceiverAlertmanager, resultDropped); got != 96 {
		t.Errorf("dropped %v, want 96", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop: %v, want the deadline", err)
	}
	if err := testenv.Next(t, ran); err != nil {
		t.Errorf("Run after Stop: %v", err)
	}
	// The one in flight and the four queued are abandoned.
	if got := notifications(t, reg, ReceiverAlertmanager, resultDropped); got != 101 {
		t.Errorf("dropped %v after Stop, want 101", got)
	}
	if got := notifications(t, reg, ReceiverAlertmanager, resultSent) + notifications(t, reg, ReceiverAlertmanager, resultFailed); got != 0 {
		t.Errorf("sent or failed %v", got)
	}
	before := notifications(t, reg, ReceiverNATS, resultDropped)
	d.Notify(testAlert("late", "canary", StatusFiring))
	if got := notifications(t, reg, ReceiverNATS, resultDropped); got != before+1 {
		t.Errorf("a Notify after Stop: nats dropped %v, want %v", got, before+1)
	}
}

// TestSuperseded: a firing alert that keeps failing is given up once its
// resolved state is queued, and the resolved one is delivered.
func TestSuperseded(t *testing.T) {
	am := newFakeReceiver(t, func(body []byte) int {
		if strings.Contains(string(body), "resolved on arm") {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	d, reg := start(t, Options{
		Config:      config.AlertingConfig{AlertmanagerURL: am.URL},
		MaxAttempts: 1000,
		MinBackoff:  5 * time.Millisecond,
		MaxBackoff:  10 * time.Millisecond,
	})
	d.Notify(testAlert("g", "canary", StatusFiring))
	testenv.Eventually(t, waitLimit, "a failed attempt", func() bool { return len(am.got()) >= 1 })
	d.Notify(testAlert("g", "canary", StatusResolved))
	testenv.Eventually(t, waitLimit, "the resolved alert sent", func() bool { return notifications(t, reg, ReceiverAlertmanager, resultSent) == 1 })
	if got := notifications(t, reg, ReceiverAlertmanager, resultDropped); got != 1 {
		t.Errorf("dropped %v, want 1 (superseded)", got)
	}
	if got := notifications(t, reg, ReceiverAlertmanager, resultFailed); got != 0 {
		t.Errorf("failed %v", got)
	}
}

// TestRefused: a 4xx answer is not retried.
func TestRefused(t *testing.T) {
	am := newFakeReceiver(t, func([]byte) int { return http.StatusBadRequest })
	d, reg := start(t, Options{Config: config.AlertingConfig{AlertmanagerURL: am.URL}, MinBackoff: time.Millisecond})
	d.Notify(testAlert("g", "canary", StatusFiring))
	testenv.Eventually(t, waitLimit, "the failure counted", func() bool { return notifications(t, reg, ReceiverAlertmanager, resultFailed) == 1 })
	if got := retries(t, reg, ReceiverAlertmanager); got != 0 || len(am.got()) != 1 {
		t.Errorf("%v retries, %d requests", got, len(am.got()))
	}
}

// TestStopDrains: Stop delivers what is queued before returning.
func TestStopDrains(t *testing.T) {
	hook := newFakeReceiver(t, nil)
	published := make(chan Alert, 100)
	d, reg := newDispatcher(t, Options{
		Config:        config.AlertingConfig{WebhookURL: hook.URL},
		Publish:       chanPublish(t, published),
		SubjectPrefix: "shadoweval.alerts",
	})
	// Queued before Run starts: all of it must still go out.
	for i := range 20 {
		d.Notify(testAlert("g"+string(rune('a'+i)), "canary", StatusFiring))
	}
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := testenv.Next(t, ran); err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := len(hook.got()); got != 20 {
		t.Errorf("webhook got %d posts, want 20", got)
	}
	for _, r := range []string{ReceiverNATS, ReceiverWebhook} {
		if got := notifications(t, reg, r, resultSent); got != 20 {
			t.Errorf("%s sent %v, want 20", r, got)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	d, err := New(Options{Publish: chanPublish(t, make(chan Alert, 1))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx) }()
	cancel()
	if err := testenv.Next(t, ran); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
	if err := d.Run(context.Background()); err == nil {
		t.Error("a second Run is accepted")
	}
	// Stop without a deadline returns: Run has ended.
	if err := d.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func TestStopWithoutRun(t *testing.T) {
	d, err := New(Options{Publish: chanPublish(t, make(chan Alert, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
	d.Notify(testAlert("g", "a", StatusFiring)) // must not block or panic
}

func TestBackoff(t *testing.T) {
	d, err := New(Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for attempt, full := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond,
		4: 800 * time.Millisecond, 5: time.Second, 40: time.Second,
	} {
		for range 50 {
			if b := d.backoff(attempt); b < full/2 || b > full {
				t.Fatalf("attempt %d: backoff %v not in [%v, %v]", attempt, b, full/2, full)
			}
		}
	}
}

func TestNotifyNormalizes(t *testing.T) {
	published := make(chan Alert, 4)
	d, _ := start(t, Options{Publish: func(_ string, v any) error { published <- v.(Alert); return nil }})
	nan := 0.0
	nan /= nan
	a := testAlert("g", "a", StatusFiring)
	a.StartsAt = time.Time{}
	a.Value = &nan
	a.EndsAt = time.Now()
	d.Notify(a)
	got := testenv.Next(t, published)
	if got.Value != nil || got.StartsAt.IsZero() || !got.EndsAt.IsZero() {
		t.Errorf("firing normalized to %+v", got)
	}
	r := testAlert("g", "a", StatusResolved)
	r.StartsAt = time.Time{}
	d.Notify(r)
	got = testenv.Next(t, published)
	if got.EndsAt.IsZero() || !got.StartsAt.Equal(got.EndsAt) {
		t.Errorf("resolved normalized to %+v", got)
	}
	d.Notify(testAlert("g", "a", "pending"))
	d.Notify(testAlert("g", "a", StatusResolved))
	if got := testenv.Next(t, published); got.Status != StatusResolved {
		t.Errorf("an unknown status was sent: %+v", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []config.AlertingConfig{
		{AlertmanagerURL: "ftp://x"},
		{WebhookURL: "http://"},
		{WebhookURL: ":bad"},
	} {
		if _, err := New(Options{Config: c}); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	// A second Dispatcher on the same registry (after a reload) shares
	// the metrics.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := New(Options{Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}
