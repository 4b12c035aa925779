package sidecar_test

// Helpers of the end-to-end tests: the whole App runs in-process on
// 127.0.0.1:0 against a real NATS server (its embedded one or one from
// testenv), started by testenv/apptest, and the tests talk to it only
// through NATS and HTTP. Nothing sleeps: the helpers poll the HTTP API
// until a condition holds, under one generous deadline, and time moves
// only through the fake clock given as Options.Now.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
)

// waitTimeout bounds every wait for the app: long enough for a loaded
// 2-core CI machine, reached only when something is broken.
const waitTimeout = apptest.DefaultTimeout

// clockBase is where every fake clock starts.
var clockBase = testenv.ClockBase

// appOptions say how to run one app (apptest.Options, its names short).
type appOptions struct {
	embedded   bool
	goldFile   string
	goldWatch  time.Duration
	registry   *prometheus.Registry
	configure  func(*config.Config)
	clockStart time.Time
	options    func(*sidecar.Options)
	logs       *syncBuffer
}

// testApp is one running sidecar and a NATS client next to it.
type testApp struct{ *apptest.App }

// syncBuffer collects output, safe to read while it is written.
type syncBuffer = testenv.SyncBuffer

// testConfig is config.Default() made fit for a test: an ephemeral HTTP
// port, the gold file given, NATS at url ("" = embedded).
func testConfig(t testing.TB, url, goldPath string) *config.Config {
	return apptest.Config(t, url, goldPath)
}

// copyFile copies src into dir/name and returns the new path.
func copyFile(t testing.TB, src, dir, name string) string {
	t.Helper()
	return apptest.CopyFile(t, src, dir, name)
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
	return &testApp{apptest.Start(t, apptest.Options{
		Embedded: o.embedded, GoldFile: o.goldFile, GoldWatch: o.goldWatch, Registry: o.registry,
		Configure: o.configure, ClockStart: o.clockStart, Options: o.options,
		Logs: o.logs, LogLevel: slog.LevelDebug, Timeout: waitTimeout,
	})}
}

// startFails makes an app of cfg whose Start must fail with an error
// naming each of want, and not be ready; it returns the app for more
// checks.
func startFails(t testing.TB, cfg *config.Config, want ...string) *sidecar.App {
	t.Helper()
	app, _ := startFailsLogged(t, cfg, want...)
	return app
}

// startFailsLogged is startFails that also returns what the app logged.
func startFailsLogged(t testing.TB, cfg *config.Config, want ...string) (*sidecar.App, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	app, err := sidecar.New(sidecar.Options{Config: cfg, Now: testenv.NewFakeClock(time.Time{}).Now, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := testenv.Context(t, waitTimeout)
	if err = app.Start(ctx); err == nil {
		app.Stop(ctx)
		t.Fatalf("Start with gold file %q succeeded", cfg.Gold.File)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Start error %q does not name %q", err, w)
		}
	}
	if app.Ready() == nil {
		t.Error("ready after a failed Start")
	}
	return app, logs
}

// replay replays the JSON lines file path on subject and returns what it
// sent.
func (h *testApp) replay(path, subject string) stream.ReplayStats {
	h.T.Helper()
	f, err := os.Open(path)
	if err != nil {
		h.T.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := stream.Replay(ctx, h.NC, f, stream.ReplayOptions{Name: path, Subject: subject})
	if err != nil {
		h.T.Fatalf("replay %s: %v", path, err)
	}
	return st
}

// report is GET /api/v1/windows?arm=&window=5m; ok is false on 404 (the
// arm has nothing in its windows yet).
func (h *testApp) report(arm string) (sidecar.WindowReport, bool) {
	h.T.Helper()
	return h.Windows(arm, "5m")
}

// mustReport is report that fails the test on 404.
func (h *testApp) mustReport(arm string) sidecar.WindowReport {
	h.T.Helper()
	rep, ok := h.report(arm)
	if !ok {
		h.T.Fatalf("GET /api/v1/windows?arm=%s&window=5m: 404", arm)
	}
	return rep
}

// poll calls cond until it returns "" (done) or waitTimeout passes, then
// fails with cond's last explanation.
func poll(t testing.TB, what string, cond func() string) {
	t.Helper()
	testenv.Poll(t, waitTimeout, what, cond)
}

// outcomes are the event outcomes of the windows API.
var outcomes = apptest.Outcomes

// eventsDiffer explains how the events of rep differ from want, every
// outcome not named being 0; "" when they do not.
func eventsDiffer(rep sidecar.WindowReport, want map[string]int64) string {
	for _, k := range outcomes {
		if rep.Events[k] != want[k] {
			return fmt.Sprintf("events are %v", rep.Events)
		}
	}
	return ""
}

// waitEvents waits until the 5m window of arm counts exactly want, every
// outcome not named being 0, and returns the report. An event is counted
// after it is applied, so the report's metrics hold every event counted.
func (h *testApp) waitEvents(arm string, want map[string]int64) sidecar.WindowReport {
	h.T.Helper()
	var rep sidecar.WindowReport
	poll(h.T, fmt.Sprintf("events %v in arm %q", want, arm), func() string {
		r, ok := h.report(arm)
		if !ok {
			return "GET /api/v1/windows answers 404 for the arm"
		}
		rep = r
		return eventsDiffer(r, want)
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

// checkSamples fails unless metric name of rep has want samples; why,
// when set, says why that many.
func checkSamples(t testing.TB, rep sidecar.WindowReport, name string, want int64, why string) {
	t.Helper()
	if got := samples(t, rep, name); got != want {
		if why != "" {
			why = " (" + why + ")"
		}
		t.Errorf("arm %s: %s has %d samples, want %d%s", rep.Arm, name, got, want, why)
	}
}

// checkValue fails unless metric name of rep has the value want.
func checkValue(t testing.TB, rep sidecar.WindowReport, name string, want float64) {
	t.Helper()
	if got := value(t, rep, name); got != want {
		t.Errorf("arm %s: %s = %v, want %v", rep.Arm, name, got, want)
	}
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
	return testenv.Collect(t, nc, subject, 64)
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
	m := testenv.Receive(t, ch, waitTimeout, what)
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("%s on %s: %v in %s", what, m.Subject, err, m.Data)
	}
	return m
}

// ---- /metrics ----

// waitPending waits until shadoweval_join_pending is n.
func (h *testApp) waitPending(n int) {
	h.T.Helper()
	h.WaitMetric("shadoweval_join_pending", nil, float64(n))
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
	TS           string    `json:"ts,omitempty"`
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
