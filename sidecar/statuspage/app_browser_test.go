//go:build unix

package statuspage_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/statuspage"
	"github.com/shadoweval/shadoweval/stream/gen"
)

// appSource is the statuspage.Source of a running App: the adapter the
// sidecar mounts (all content types together).
type appSource struct {
	app *sidecar.App
	now func() time.Time
}

func (s appSource) Arms() []string { return s.app.Windows().Arms() }

func (s appSource) Windows() []string {
	var names []string
	for _, sp := range s.app.Windows().Specs() {
		names = append(names, sp.Name)
	}
	return names
}

func (s appSource) Report(arm, window string) (map[string]statuspage.Value, map[string]int64, bool) {
	rep, ok := s.app.Report(arm, window, "", s.now())
	if !ok {
		return nil, nil, false
	}
	m := make(map[string]statuspage.Value, len(rep.Metrics))
	for name, v := range rep.Metrics {
		sv := statuspage.Value{Samples: v.Samples}
		if v.Value != nil {
			sv.Value, sv.Valid = *v.Value, true
		}
		m[name] = sv
	}
	return m, rep.Events, true
}

// pointGates stands in for the gate engine (another package's work): it
// judges a few shipped gates on the point value of the App's windows, with
// no `for` and no history: ok, firing, or inconclusive below minSamples.
type pointGates struct {
	src   statuspage.Source
	gates []statuspage.GateState
}

const minSamples = 50

func (g pointGates) GateStates(arm string) []statuspage.GateState {
	var out []statuspage.GateState
	for _, gate := range g.gates {
		m, _, ok := g.src.Report(arm, gate.Window)
		v := m[gate.Metric]
		gate.Samples = v.Samples
		switch {
		case !ok || !v.Valid || v.Samples < minSamples:
			gate.State = "inconclusive"
		case gate.Op == ">=" && v.Value >= gate.Threshold, gate.Op == "<=" && v.Value <= gate.Threshold:
			gate.State = "ok"
		default:
			gate.State = "firing"
		}
		if v.Valid {
			x := v.Value
			gate.Value = &x
		}
		out = append(out, gate)
	}
	return out
}

type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestBrowserRealApp runs the whole sidecar (embedded NATS, generated gold
// set), publishes 3 minutes of fake-clock traffic for live and canary with
// the canary degrading half-way, records the history as the sidecar's
// ticker would, and has Chromium load the status page over the App's own
// windows.
func TestBrowserRealApp(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	genOpt := gen.Options{Seed: 11, Items: 3000, Awkward: 0.02}
	f, err := os.Create(goldPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(gen.WriteGold(f, genOpt), f.Close()); err != nil {
		t.Fatal(err)
	}

	clk := &clock{}
	clk.ns.Store(time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC).UnixNano())
	cfg := config.Default()
	cfg.NATS.URL = ""
	cfg.NATS.StoreDir = filepath.Join(dir, "nats")
	cfg.Gold.File = goldPath
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.Lambda.MinRuns = 3
	app, err := sidecar.New(sidecar.Options{Config: &cfg, Logger: slog.New(slog.DiscardHandler), Now: clk.Now, GoldWatchInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := app.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	nc, err := nats.Connect(app.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	src := appSource{app: app, now: clk.Now}
	hist := statuspage.NewHistory(60)
	for _, sp := range app.Windows().Specs() {
		hist.SetResolution(sp.Name, sp.Resolution)
	}
	traffic := genOpt
	traffic.Quality, traffic.Arms, traffic.Now = 0.95, []string{"live", "canary"}, clk.Now
	traces := gen.NewTraceSource(traffic)
	sent := map[string]int64{}
	const batches, perBatch = 18, 40 // 3 min of the fake clock, 10 s a batch
	for b := range batches {
		if b == batches/2 {
			traces.SetQuality("canary", 0.4)
		}
		for range perBatch {
			for _, arm := range traffic.Arms {
				if err := nc.Publish("rag.trace."+arm, traces.NextFor(arm)); err != nil {
					t.Fatal(err)
				}
				sent[arm]++
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, src, sent)
		hist.Collect(clk.Now(), src) // the sidecar's ticker, every resolution
		clk.Advance(10 * time.Second)
	}

	gates := pointGates{src: src, gates: []statuspage.GateState{
		{Name: "precision_floor", Metric: "precision", Op: ">=", Threshold: 0.80, Window: "5m", Severity: "page"},
		{Name: "chr_floor", Metric: "chr", Op: ">=", Threshold: 0.75, Window: "5m", Severity: "page"},
		{Name: "under_refusal_ceiling", Metric: "under_refusal", Op: "<=", Threshold: 0.05, Window: "5m", Severity: "page"},
		{Name: "kappa_floor", Metric: "kappa", Op: ">=", Threshold: 0.75, Window: "5m", Severity: "ticket"},
	}}
	for _, g := range gates.GateStates("canary") {
		t.Logf("canary %s: %s (%v, %d samples)", g.Name, g.State, deref(g.Value), g.Samples)
	}
	if g := gates.GateStates("canary")[0]; g.State != "firing" {
		t.Fatalf("the degraded canary's precision gate is %s, not firing: the traffic did not degrade it", g.State)
	}

	var fragments atomic.Int64
	h := statuspage.Handler(src, gates, hist, clk.Now)
	// each refresh lands 5 s later on the fake clock, so the DOM shows
	// the fragment's time, not the first page's
	srv := httptest.NewServer(countFragments(h, &fragments, func() { clk.Advance(5 * time.Second) }))
	defer srv.Close()

	dom, _ := browse(t, srv.URL+"/", "statuspage-app")
	checkDOM(t, dom, []string{"live", "canary"}, "precision_floor", fragments.Load(),
		`datetime="`+clk.Now().Format(time.RFC3339)+`"`,
		`<th scope="row">triage_ok</th>`, `<th scope="col">History, last 3m`)
}

// waitApplied waits until the App has counted every event sent per arm.
func waitApplied(t *testing.T, src appSource, sent map[string]int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		done := true
		var got map[string]int64
		for arm, n := range sent {
			_, ev, _ := src.Report(arm, "5m")
			var sum int64
			for _, c := range ev {
				sum += c
			}
			if sum < n {
				done, got = false, ev
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the App has not applied the events sent (%v) after 20 s: %v", sent, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func deref(p *float64) any {
	if p == nil {
		return "—"
	}
	return *p
}
