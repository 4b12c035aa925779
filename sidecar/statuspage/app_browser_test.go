//go:build unix

package statuspage_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/sidecar/statuspage"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// pointGates stands in for the gate engine (another package's work): it
// judges a few shipped gates on the point value of the App's windows, with
// no `for` and no history: ok, firing, or inconclusive below minSamples.
type pointGates struct {
	src   statuspage.Source
	gates []gates.Result
}

const minSamples = 50

func (g pointGates) GateStates(arm string) []gates.Result {
	var out []gates.Result
	for _, gate := range g.gates {
		m, _, ok := g.src.Report(arm, gate.Window)
		v := m[gate.Metric]
		gate.Samples = v.Samples
		switch {
		case !ok || !v.Valid || v.Samples < minSamples:
			gate.State = gates.Inconclusive
		case gate.Op == ">=" && v.Value >= gate.Threshold, gate.Op == "<=" && v.Value <= gate.Threshold:
			gate.State = gates.OK
		default:
			gate.State = gates.Firing
		}
		if v.Valid {
			x := v.Value
			gate.Value = &x
		}
		out = append(out, gate)
	}
	return out
}

// TestBrowserRealApp runs the whole sidecar (embedded NATS, generated gold
// set), publishes 3 minutes of fake-clock traffic for live and canary with
// the canary degrading half-way, records the history as the sidecar's
// ticker would, and has Chromium load the status page over the App's own
// windows.
func TestBrowserRealApp(t *testing.T) {
	testenv.Chromium(t)
	genOpt := gen.Options{Seed: 11, Items: 3000, Awkward: 0.02}
	var gold bytes.Buffer
	if err := gen.WriteGold(&gold, genOpt); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{Embedded: true, GoldData: gold.Bytes(),
		Configure: func(cfg *config.Config) { cfg.Lambda.MinRuns = 3 }})
	app, clk := a.Sidecar, a.Clock

	src := app.StatusSource() // as the App mounts it: its now is clk.Now
	hist := statuspage.NewHistory(60)
	for _, sp := range app.Windows().Specs() {
		hist.SetResolution(sp.Name, sp.Resolution)
	}
	arms := []string{"live", "canary"}
	opt := genOpt
	opt.Quality, opt.Arms = 0.95, arms
	traffic := a.Traffic(opt)
	const batches, perBatch = 18, 40 // 3 min of the fake clock, 10 s a batch
	for b := range batches {
		if b == batches/2 {
			traffic.SetQuality("canary", 0.4)
		}
		traffic.Send(perBatch, arms...)
		waitApplied(a, src, traffic.SentAll())
		hist.Collect(clk.Now(), src) // the sidecar's ticker, every resolution
		clk.Advance(10 * time.Second)
	}

	gates := pointGates{src: src, gates: []gates.Result{
		{Gate: "precision_floor", Metric: "precision", Op: ">=", Threshold: 0.80, Window: "5m", Severity: "page"},
		{Gate: "chr_floor", Metric: "chr", Op: ">=", Threshold: 0.75, Window: "5m", Severity: "page"},
		{Gate: "under_refusal_ceiling", Metric: "under_refusal", Op: "<=", Threshold: 0.05, Window: "5m", Severity: "page"},
		{Gate: "kappa_floor", Metric: "kappa", Op: ">=", Threshold: 0.75, Window: "5m", Severity: "ticket"},
	}}
	for _, g := range gates.GateStates("canary") {
		t.Logf("canary %s: %s (%v, %d samples)", g.Gate, g.State, deref(g.Value), g.Samples)
	}
	if g := gates.GateStates("canary")[0]; g.State.String() != "firing" {
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
func waitApplied(a *apptest.App, src statuspage.Source, sent map[string]int64) {
	a.T.Helper()
	a.Poll(fmt.Sprintf("the App to apply the events sent (%v)", sent), func() string {
		for arm, n := range sent {
			_, ev, _ := src.Report(arm, "5m")
			var sum int64
			for _, c := range ev {
				sum += c
			}
			if sum < n {
				return fmt.Sprintf("arm %s: %v", arm, ev)
			}
		}
		return ""
	})
}

func deref(p *float64) any {
	if p == nil {
		return "—"
	}
	return *p
}
