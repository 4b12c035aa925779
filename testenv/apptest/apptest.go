// Package apptest runs the shadoweval sidecar for a test: sidecar.New,
// Start and Stop in process on 127.0.0.1:0, against a real NATS server
// (one of testenv's, or the app's embedded one), with a fake clock as
// Options.Now, and talks to it only through NATS and HTTP. Nothing
// sleeps: the helpers poll the HTTP API until a condition holds, under
// one generous deadline.
//
// It is apart from testenv because it imports the sidecar, whose own
// packages' tests use testenv. Production code must not import it.
package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
)

// DefaultTimeout bounds every wait for the app unless Options.Timeout
// says otherwise: long enough for a loaded 2-core CI machine, reached only
// when something is broken.
const DefaultTimeout = 60 * time.Second

// Outcomes are the event outcomes of the windows API (SPEC §8).
var Outcomes = []string{"scored", "unlabeled", "rejected", "duplicate", "late", "join_timeout"}

// Options say how to run one app.
type Options struct {
	// Embedded leaves nats.url empty, so that the app starts its own
	// server, stored in t.TempDir(); otherwise a testenv server is
	// started for the test.
	Embedded bool
	// GoldFile is copied to gold.jsonl in a temp dir, or GoldData written
	// there; that file is the configured gold file (App.GoldPath).
	GoldFile string
	GoldData []byte
	// GoldWatch is Options.GoldWatchInterval; 0: one hour, so that only
	// POST /-/reload reloads unless a test asks for the watcher.
	GoldWatch time.Duration
	Registry  *prometheus.Registry
	// Configure edits the configuration (Config) before New.
	Configure func(*config.Config)
	// ClockStart is where the fake clock starts; zero: testenv.ClockBase.
	// An app that talks to a real-time peer (Alertmanager judges endsAt
	// by its own clock) starts it near the real time.
	ClockStart time.Time
	// LogLevel is the level of the app's log, kept in Logs (a new buffer
	// when nil) and shown when the test fails: its last LogTail bytes, or
	// all of it when LogTail is 0.
	LogLevel slog.Level
	Logs     *testenv.SyncBuffer
	LogTail  int
	// Timeout bounds the start, the stop and every wait; 0:
	// DefaultTimeout.
	Timeout time.Duration
	// Options, when set, edits the sidecar.Options before New.
	Options func(*sidecar.Options)
}

// App is one running sidecar and a NATS client next to it.
type App struct {
	T        testing.TB
	Sidecar  *sidecar.App
	NC       *nats.Conn
	Clock    *testenv.FakeClock
	Base     string // http://127.0.0.1:port
	GoldPath string
	Registry *prometheus.Registry
	Logs     *testenv.SyncBuffer
	Timeout  time.Duration
}

// Config is config.Default() made fit for a test: an ephemeral HTTP port,
// the gold file given, NATS at url ("": embedded, stored in t.TempDir()).
func Config(t testing.TB, url, goldPath string) *config.Config {
	cfg := config.Default()
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.NATS.URL = url
	cfg.Gold.File = goldPath
	if url == "" {
		cfg.NATS.StoreDir = t.TempDir()
	}
	return &cfg
}

// CopyFile copies src into dir/name and returns the new path.
func CopyFile(t testing.TB, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return WriteFile(t, dir, name, data)
}

// WriteFile writes data to dir/name and returns the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Start starts a sidecar and returns it with a NATS client on the same
// server; both stop when the test ends.
func Start(t testing.TB, o Options) *App {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.GoldWatch == 0 {
		o.GoldWatch = time.Hour
	}
	if o.Logs == nil {
		o.Logs = &testenv.SyncBuffer{}
	}
	natsURL := ""
	if !o.Embedded {
		natsURL = testenv.RunBasic(t).ClientURL()
	}
	dir := t.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	switch {
	case o.GoldData != nil:
		WriteFile(t, dir, "gold.jsonl", o.GoldData)
	case o.GoldFile != "":
		CopyFile(t, o.GoldFile, dir, "gold.jsonl")
	}
	cfg := Config(t, natsURL, goldPath)
	if o.Configure != nil {
		o.Configure(cfg)
	}
	clock := testenv.NewFakeClock(o.ClockStart)
	opts := sidecar.Options{
		Config:            cfg,
		Logger:            slog.New(slog.NewTextHandler(o.Logs, &slog.HandlerOptions{Level: o.LogLevel})),
		Registry:          o.Registry,
		Now:               clock.Now,
		GoldWatchInterval: o.GoldWatch,
	}
	if o.Options != nil {
		o.Options(&opts)
	}
	app, err := sidecar.New(opts)
	if err != nil {
		t.Fatalf("sidecar.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("Start: %v\napp log:\n%s", err, o.Logs.String())
	}
	// Cleanups run last-in first-out: the app stops (draining what it has
	// received) before the NATS server started above shuts down.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			log := o.Logs.String()
			if o.LogTail > 0 {
				log = testenv.Tail(log, o.LogTail)
			}
			t.Logf("app log:\n%s", log)
		}
	})
	if natsURL == "" {
		natsURL = app.NATSURL()
	}
	return &App{
		T: t, Sidecar: app, Clock: clock, GoldPath: goldPath, Registry: o.Registry, Logs: o.Logs, Timeout: o.Timeout,
		NC:   testenv.Connect(t, natsURL),
		Base: "http://" + app.Addr(),
	}
}

// Poll calls cond until it returns "" (testenv.Poll under the app's
// timeout).
func (a *App) Poll(what string, cond func() string) {
	a.T.Helper()
	testenv.Poll(a.T, a.Timeout, what, cond)
}

// ---- NATS ----

// Publish sends data on subject and flushes, so that the server has it
// when Publish returns.
func (a *App) Publish(subject string, data []byte) {
	a.T.Helper()
	testenv.Publish(a.T, a.NC, subject, data)
}

// PublishJSON marshals v, publishes it and returns it.
func (a *App) PublishJSON(subject string, v any) []byte {
	a.T.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		a.T.Fatal(err)
	}
	a.Publish(subject, data)
	return data
}

// ---- HTTP ----

// Do sends a request to the app: header is added, contentType "" sends
// none, body "" is no body.
func (a *App) Do(method, path string, header http.Header, contentType, body string) (int, http.Header, []byte) {
	a.T.Helper()
	return testenv.Fetch(a.T, a.Timeout, method, a.Base+path, header, contentType, body)
}

// Get is GET path: the status and the body.
func (a *App) Get(path string) (int, []byte) {
	a.T.Helper()
	code, _, body := a.Do(http.MethodGet, path, nil, "", "")
	return code, body
}

// Post is POST path with no body.
func (a *App) Post(path string) (int, []byte) {
	a.T.Helper()
	code, _, body := a.Do(http.MethodPost, path, nil, "", "")
	return code, body
}

// PostJSON posts a JSON body and returns the status and the answer.
func (a *App) PostJSON(path, body string) (int, []byte) {
	a.T.Helper()
	code, _, out := a.Do(http.MethodPost, path, nil, "application/json", body)
	return code, out
}

// GetJSON is GET path decoded into v; it fails the test unless the answer
// is want and decodes.
func (a *App) GetJSON(path string, want int, v any) {
	a.T.Helper()
	code, body := a.Get(path)
	if code != want {
		a.T.Fatalf("GET %s: status %d, want %d: %s", path, code, want, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		a.T.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// Windows is GET /api/v1/windows?arm=&window=; ok is false on 404 (the
// arm has nothing in its windows yet). It fails the test on another
// status or when the report is of another arm or window.
func (a *App) Windows(arm, window string) (sidecar.WindowReport, bool) {
	a.T.Helper()
	path := "/api/v1/windows?arm=" + url.QueryEscape(arm) + "&window=" + url.QueryEscape(window)
	code, body := a.Get(path)
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return sidecar.WindowReport{}, false
	default:
		a.T.Fatalf("GET %s: status %d: %s", path, code, body)
	}
	var rep sidecar.WindowReport
	if err := json.Unmarshal(body, &rep); err != nil {
		a.T.Fatalf("GET %s: %v in %s", path, err, body)
	}
	if rep.Arm != arm || rep.Window != window {
		a.T.Fatalf("GET %s answered arm %q window %q", path, rep.Arm, rep.Window)
	}
	return rep, true
}

// Scrape is GET /metrics, parsed.
func (a *App) Scrape() testenv.Families {
	a.T.Helper()
	code, body := a.Get("/metrics")
	if code != http.StatusOK {
		a.T.Fatalf("GET /metrics: status %d: %s", code, body)
	}
	return testenv.ParseMetrics(a.T, body)
}

// MetricValue is the value of one series of /metrics; ok is false when it
// is not exported.
func (a *App) MetricValue(name string, labels map[string]string) (float64, bool) {
	a.T.Helper()
	return a.Scrape().Value(name, labels)
}

// WaitMetric waits until a series of /metrics has the value want.
func (a *App) WaitMetric(name string, labels map[string]string, want float64) {
	a.T.Helper()
	a.Poll(fmt.Sprintf("%s%v = %v", name, labels, want), func() string {
		got, ok := a.MetricValue(name, labels)
		switch {
		case !ok:
			return "not exported"
		case got != want:
			return fmt.Sprintf("it is %v", got)
		}
		return ""
	})
}

// CheckMetric fails unless a series of /metrics has the value want now.
func (a *App) CheckMetric(name string, labels map[string]string, want float64) {
	a.T.Helper()
	got, ok := a.MetricValue(name, labels)
	switch {
	case !ok:
		a.T.Errorf("/metrics: %s%v is not exported", name, labels)
	case got != want:
		a.T.Errorf("/metrics: %s%v = %v, want %v", name, labels, got, want)
	}
}
