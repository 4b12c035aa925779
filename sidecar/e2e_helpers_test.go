package sidecar_test

// Helpers of the end-to-end tests: the whole App runs in-process on
// 127.0.0.1:0 against a real NATS server (its embedded one or one from
// streamtest), and the tests talk to it only through NATS and HTTP. Nothing
// sleeps: the helpers poll the HTTP API until a condition holds, under one
// generous deadline, and time moves only through the fake clock given as
// Options.Now.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/stream/streamtest"

	"github.com/shadoweval/shadoweval/sidecar/internal/testtools"
)

// waitTimeout bounds every wait for the app: long enough for a loaded
// 2-core CI machine, reached only when something is broken.
const waitTimeout = 60 * time.Second

// clockBase is where every fake clock starts: a fixed instant, so windows
// and buckets never depend on when the test runs.
var clockBase = time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)

// fakeClock is the app's Options.Now: it moves only when the test says so.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(clockBase.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// appOptions say how to run one app.
type appOptions struct {
	// embedded leaves nats.url empty, so the app starts its own server;
	// otherwise a streamtest server is started for the test.
	embedded bool
	// goldFile is copied to gold.jsonl in a temp dir, which is the
	// configured gold file (goldPath of the testApp).
	goldFile string
	// goldWatch is Options.GoldWatchInterval; 0: one hour, so that only
	// POST /-/reload reloads unless a test asks for the watcher.
	goldWatch time.Duration
	registry  *prometheus.Registry
	configure func(*config.Config)
	// clockStart is where the fake clock starts; zero: clockBase. A test
	// whose app talks to a real-time peer (Alertmanager judges endsAt by
	// its own clock) starts it near the real time.
	clockStart time.Time
	// onGateTransition is Options.OnGateTransition.
	onGateTransition func(gates.Transition)
	// options, when set, edits the Options before New (tracing tests).
	options func(*sidecar.Options)
}

// testApp is one running sidecar and a NATS client next to it.
type testApp struct {
	t        testing.TB
	app      *sidecar.App
	nc       *nats.Conn
	clock    *fakeClock
	base     string // http://127.0.0.1:port
	goldPath string
	reg      *prometheus.Registry
}

// syncBuffer collects output, safe to read while it is written.
type syncBuffer = testtools.SyncBuffer

// testConfig is config.Default() made fit for a test: an ephemeral HTTP
// port, the gold file given, NATS at url ("" = embedded).
func testConfig(t testing.TB, url, goldPath string) *config.Config {
	cfg := config.Default()
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.NATS.URL = url
	cfg.Gold.File = goldPath
	if url == "" {
		cfg.NATS.StoreDir = t.TempDir()
	}
	return &cfg
}

// copyFile copies src into dir/name and returns the new path.
func copyFile(t testing.TB, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// replaceFile swaps the content of path for src's by writing a temp file
// and renaming it over path, as a ConfigMap update or a careful editor
// does (a new inode: the watcher cannot miss it).
func replaceFile(t testing.TB, src, path string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startApp starts a sidecar and returns it with a NATS client on the same
// server; both stop when the test ends.
func startApp(t testing.TB, o appOptions) *testApp {
	t.Helper()
	url := ""
	if !o.embedded {
		url = streamtest.RunBasic(t).ClientURL()
	}
	dir := t.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	if o.goldFile != "" {
		goldPath = copyFile(t, o.goldFile, dir, "gold.jsonl")
	}
	cfg := testConfig(t, url, goldPath)
	if o.configure != nil {
		o.configure(cfg)
	}
	if o.goldWatch == 0 {
		o.goldWatch = time.Hour
	}
	logs := &syncBuffer{}
	clock := newFakeClock()
	if !o.clockStart.IsZero() {
		clock.ns.Store(o.clockStart.UnixNano())
	}
	opts := sidecar.Options{
		Config:            cfg,
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registry:          o.registry,
		Now:               clock.Now,
		GoldWatchInterval: o.goldWatch,
		OnGateTransition:  o.onGateTransition,
	}
	if o.options != nil {
		o.options(&opts)
	}
	app, err := sidecar.New(opts)
	if err != nil {
		t.Fatalf("sidecar.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("Start: %v\napp log:\n%s", err, logs.String())
	}
	// Cleanups run last-in first-out: the app stops (draining what it has
	// received) before the NATS server started above shuts down.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			t.Logf("app log:\n%s", logs.String())
		}
	})
	if url == "" {
		url = app.NATSURL()
	}
	return &testApp{
		t: t, app: app, clock: clock, goldPath: goldPath, reg: o.registry,
		nc:   streamtest.Connect(t, url),
		base: "http://" + app.Addr(),
	}
}

// ---- NATS ----

// publish sends raw bytes on subject and flushes, so the server has them
// when it returns.
func (h *testApp) publish(subject string, data []byte) {
	h.t.Helper()
	if err := h.nc.Publish(subject, data); err != nil {
		h.t.Fatalf("publish %s: %v", subject, err)
	}
	if err := h.nc.FlushTimeout(streamtest.Timeout); err != nil {
		h.t.Fatalf("flush: %v", err)
	}
}

// publishJSON marshals v and publishes it.
func (h *testApp) publishJSON(subject string, v any) []byte {
	h.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(subject, data)
	return data
}

// ---- HTTP ----

func (h *testApp) do(method, path string, header http.Header) (int, http.Header, []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, body
}

func (h *testApp) get(path string) (int, []byte) {
	h.t.Helper()
	code, _, body := h.do(http.MethodGet, path, nil)
	return code, body
}

func (h *testApp) post(path string) (int, []byte) {
	h.t.Helper()
	code, _, body := h.do(http.MethodPost, path, nil)
	return code, body
}

// doBody is do with a request body; contentType "" sends none.
func (h *testApp) doBody(method, path, contentType, body string, header http.Header) (int, []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// postJSON posts a JSON body and returns the status and the answer.
func (h *testApp) postJSON(path, body string) (int, []byte) {
	h.t.Helper()
	return h.doBody(http.MethodPost, path, "application/json", body, nil)
}

// report is GET /api/v1/windows?arm=&window=5m; ok is false on 404 (the
// arm has nothing in its windows yet).
func (h *testApp) report(arm string) (sidecar.WindowReport, bool) {
	h.t.Helper()
	code, body := h.get("/api/v1/windows?arm=" + arm + "&window=5m")
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return sidecar.WindowReport{}, false
	default:
		h.t.Fatalf("GET /api/v1/windows?arm=%s&window=5m: status %d: %s", arm, code, body)
	}
	var rep sidecar.WindowReport
	if err := json.Unmarshal(body, &rep); err != nil {
		h.t.Fatalf("GET /api/v1/windows: %v in %s", err, body)
	}
	if rep.Arm != arm || rep.Window != "5m" {
		h.t.Fatalf("GET /api/v1/windows?arm=%s&window=5m answered arm %q window %q", arm, rep.Arm, rep.Window)
	}
	return rep, true
}

// mustReport is report that fails the test on 404.
func (h *testApp) mustReport(arm string) sidecar.WindowReport {
	h.t.Helper()
	rep, ok := h.report(arm)
	if !ok {
		h.t.Fatalf("GET /api/v1/windows?arm=%s&window=5m: 404", arm)
	}
	return rep
}

// poll calls cond until it returns "" (done) or waitTimeout passes, then
// fails with cond's last explanation. The pause between calls only keeps
// the loop from spinning; no result depends on it.
func poll(t testing.TB, what string, cond func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		why := cond()
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up after %v waiting for %s: %s", waitTimeout, what, why)
		case <-tick.C:
		}
	}
}

// outcomes are the event outcomes of the windows API.
var outcomes = []string{"scored", "unlabeled", "rejected", "duplicate", "late", "join_timeout"}

// waitEvents waits until the 5m window of arm counts exactly want, every
// outcome not named being 0, and returns the report. An event is counted
// after it is applied, so the report's metrics hold every event counted.
func (h *testApp) waitEvents(arm string, want map[string]int64) sidecar.WindowReport {
	h.t.Helper()
	var rep sidecar.WindowReport
	poll(h.t, fmt.Sprintf("events %v in arm %q", want, arm), func() string {
		r, ok := h.report(arm)
		if !ok {
			return "GET /api/v1/windows answers 404 for the arm"
		}
		for _, k := range outcomes {
			if r.Events[k] != want[k] {
				return fmt.Sprintf("events are %v", r.Events)
			}
		}
		rep = r
		return ""
	})
	return rep
}

// checkEvents fails unless the report counts exactly want, every outcome
// not named being 0.
func checkEvents(t testing.TB, rep sidecar.WindowReport, want map[string]int64) {
	t.Helper()
	for _, name := range outcomes {
		if got := rep.Events[name]; got != want[name] {
			t.Errorf("arm %s: events[%s] = %d, want %d (all: %v)", rep.Arm, name, got, want[name], rep.Events)
		}
	}
}

// metric returns a metric of a report, failing when it is missing.
func metric(t testing.TB, rep sidecar.WindowReport, name string) sidecar.MetricValue {
	t.Helper()
	m, ok := rep.Metrics[name]
	if !ok {
		t.Fatalf("arm %s: no metric %q in the report", rep.Arm, name)
	}
	return m
}

// value is a metric's value, failing when it has none.
func value(t testing.TB, rep sidecar.WindowReport, name string) float64 {
	t.Helper()
	m := metric(t, rep, name)
	if m.Value == nil {
		t.Fatalf("arm %s: metric %q has no value (samples %d)", rep.Arm, name, m.Samples)
	}
	return *m.Value
}

func samples(t testing.TB, rep sidecar.WindowReport, name string) int64 {
	t.Helper()
	return metric(t, rep, name).Samples
}

func fmtValue(m sidecar.MetricValue) string {
	if m.Value == nil {
		return fmt.Sprintf("null (%d samples)", m.Samples)
	}
	return fmt.Sprintf("%v (%d samples)", *m.Value, m.Samples)
}

// diffMetrics lists the metrics whose value or samples differ.
func diffMetrics(a, b sidecar.WindowReport) []string {
	names := map[string]bool{}
	for n := range a.Metrics {
		names[n] = true
	}
	for n := range b.Metrics {
		names[n] = true
	}
	var diffs []string
	for n := range names {
		ma, oka := a.Metrics[n]
		mb, okb := b.Metrics[n]
		same := oka == okb && ma.Samples == mb.Samples && (ma.Value == nil) == (mb.Value == nil) &&
			(ma.Value == nil || *ma.Value == *mb.Value)
		if !same {
			diffs = append(diffs, fmt.Sprintf("%s: %s %s vs %s %s", n, a.Arm, fmtValue(ma), b.Arm, fmtValue(mb)))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// ---- NATS subscriptions ----

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
	receiveJSONMsg(t, ch, what, v)
}

// receiveJSONMsg is receiveJSON that also returns the message.
func receiveJSONMsg(t testing.TB, ch <-chan *nats.Msg, what string, v any) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		if err := json.Unmarshal(m.Data, v); err != nil {
			t.Fatalf("%s on %s: %v in %s", what, m.Subject, err, m.Data)
		}
		return m
	case <-time.After(waitTimeout):
		t.Fatalf("gave up after %v waiting for %s", waitTimeout, what)
	}
	return nil
}

// ---- /metrics ----

// scrape is GET /metrics in the Prometheus text format, parsed.
func (h *testApp) scrape() map[string]*dto.MetricFamily {
	h.t.Helper()
	code, body := h.get("/metrics")
	if code != http.StatusOK {
		h.t.Fatalf("GET /metrics: status %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("GET /metrics: %v", err)
	}
	return fams
}

// series finds the sample of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
	for _, m := range f.GetMetric() {
		match := true
		for k, v := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
					break
				}
			}
			if !found {
				match = false
				break
			}
		}
		if match {
			return m, true
		}
	}
	return nil, false
}

// sampleValue is the value of a counter, gauge or untyped sample.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// metricValue is the value of one series of /metrics; ok is false when
// it is not exported.
func (h *testApp) metricValue(name string, labels map[string]string) (float64, bool) {
	h.t.Helper()
	m, ok := series(h.scrape(), name, labels)
	if !ok {
		return 0, false
	}
	return sampleValue(m), true
}

// waitMetric waits until a series of /metrics has the value want.
func (h *testApp) waitMetric(name string, labels map[string]string, want float64) {
	h.t.Helper()
	poll(h.t, fmt.Sprintf("%s%v = %v", name, labels, want), func() string {
		got, ok := h.metricValue(name, labels)
		switch {
		case !ok:
			return "not exported"
		case got != want:
			return fmt.Sprintf("it is %v", got)
		}
		return ""
	})
}

// checkMetric fails unless a series of /metrics has the value want now.
func (h *testApp) checkMetric(name string, labels map[string]string, want float64) {
	h.t.Helper()
	got, ok := h.metricValue(name, labels)
	switch {
	case !ok:
		h.t.Errorf("/metrics: %s%v is not exported", name, labels)
	case got != want:
		h.t.Errorf("/metrics: %s%v = %v, want %v", name, labels, got, want)
	}
}

// waitPending waits until shadoweval_join_pending is n.
func (h *testApp) waitPending(n int) {
	h.t.Helper()
	h.waitMetric("shadoweval_join_pending", nil, float64(n))
}

// labelNames lists the label names of a family's first sample, sorted.
func labelNames(f *dto.MetricFamily) string {
	if len(f.GetMetric()) == 0 {
		return ""
	}
	var names []string
	for _, lp := range f.GetMetric()[0].GetLabel() {
		names = append(names, lp.GetName())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// ---- events ----

// answer is an answer_json.
type answer struct {
	Claim     string   `json:"claim"`
	Citations []string `json:"citations"`
}

// event is a trace event or one of its halves, as a producer would send
// it; zero fields are left out.
type event struct {
	QID          string    `json:"qid,omitempty"`
	RequestID    string    `json:"request_id,omitempty"`
	Arm          string    `json:"arm,omitempty"`
	RetrievedIDs []string  `json:"retrieved_ids,omitempty"`
	DeltaS       []float64 `json:"delta_s,omitempty"`
	Answer       *answer   `json:"answer_json,omitempty"`
	Lambda       string    `json:"lambda_state,omitempty"`
}

// goodTrace is a right, shipped answer for a gold item of gold_v1.jsonl.
func goodTrace(qid string) event {
	switch qid {
	case "A1":
		return event{QID: "A1", RetrievedIDs: []string{"p1#1", "p9#9"}, DeltaS: []float64{0.2, 0.7},
			Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}}
	case "A2":
		return event{QID: "A2", RetrievedIDs: []string{"p2#2", "p2#1"}, DeltaS: []float64{0.3, 0.25},
			Answer: &answer{Claim: "Gamma listens on 8443 by default.", Citations: []string{"p2#1"}}}
	case "U1":
		return event{QID: "U1", RetrievedIDs: []string{"p8#8"}, DeltaS: []float64{0.9},
			Answer: &answer{Claim: "not in context", Citations: []string{}}}
	case "N1":
		return event{QID: "N1", RetrievedIDs: []string{"p4#1"}, DeltaS: []float64{0.1},
			Answer: &answer{Claim: "Epsilon is new.", Citations: []string{"p4#1"}}}
	}
	panic("goodTrace: no event for " + qid)
}
