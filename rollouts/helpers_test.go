package rollouts

// The sidecar under test runs in process, as in sidecar/e2e_helpers_test.go:
// sidecar.New/Start/Stop on 127.0.0.1:0, a real nats-server started in
// process (stream/streamtest, port -1), a gold file and traffic from
// stream/gen. Time moves only through the fake clock given as Options.Now,
// and every event carries ts = that clock, so a test publishes as fast as
// NATS takes it and an analysis (which accumulates by event time ≥ its
// start) sees exactly the traffic published after it started. Nothing
// sleeps: helpers poll the HTTP API on a condition under one generous
// deadline.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/stream/gen"
	"github.com/shadoweval/shadoweval/stream/streamtest"
)

// waitTimeout bounds every wait for the sidecar: long enough for a loaded
// 2-core machine, reached only when something is broken.
const waitTimeout = 120 * time.Second

// clockBase is where every fake clock starts.
var clockBase = time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)

// fakeClock is the sidecar's Options.Now and the events' ts.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(clockBase.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Traffic: one gold set, one generator; arms differ only by quality, the
// probability that a λ group of runs answers right (a claim holding a gold
// substring, a gold citation retrieved in the top 5, a refusal for an
// unanswerable item). A degraded arm ships claims that miss the gold
// substrings and cites wrong ids.
const (
	trafficSeed  = 20310304
	trafficItems = 400
	// qualityLive is the live arm's quality; a healthy candidate has the
	// same, a degraded one qualityDegraded (precision 10+ points lower:
	// checked on the windows API by checkDegraded).
	qualityLive     = 0.9
	qualityDegraded = 0.75
	// qualityShadowGood is a shadow arm fit for the eligibility checks.
	qualityShadowGood = 1.0
)

// sidecarUnderTest is one running sidecar, a NATS client next to it and a
// traffic source.
type sidecarUnderTest struct {
	t     testing.TB
	app   *sidecar.App
	nc    *nats.Conn
	clock *fakeClock
	base  string // http://127.0.0.1:port
	logs  *syncBuffer

	mu        sync.Mutex
	src       *gen.TraceSource
	published map[string]int64 // events published per arm
	// goldOffsets are the gold relevant_offsets by qid and id; exact holds
	// the arms whose events report their first citation's gold offsets.
	goldOffsets map[string]map[string][2]int64
	exact       map[string]bool
}

// syncBuffer collects the sidecar's log, safe to read while it writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startSidecar starts a NATS server and the sidecar on it with the
// generated gold set; both stop when the test ends. configure, when set,
// edits the configuration before New.
func startSidecar(t testing.TB, configure func(*config.Config)) *sidecarUnderTest {
	t.Helper()
	url := streamtest.RunBasic(t).ClientURL()
	goldPath := filepath.Join(t.TempDir(), "gold.jsonl")
	var gold bytes.Buffer
	if err := gen.WriteGold(&gold, genOptions(nil)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldPath, gold.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.NATS.URL = url
	cfg.Gold.File = goldPath
	if configure != nil {
		configure(&cfg)
	}
	clock := newFakeClock()
	logs := &syncBuffer{}
	app, err := sidecar.New(sidecar.Options{
		Config:            &cfg,
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Now:               clock.Now,
		GoldWatchInterval: time.Hour, // the gold file never changes here
	})
	if err != nil {
		t.Fatalf("sidecar.New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nsidecar log:\n%s", err, logs.String())
	}
	// Cleanups run last-in first-out: the sidecar stops before the NATS
	// server started above.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			t.Logf("sidecar log (last 8 KiB):\n%s", tail(logs.String(), 8<<10))
		}
	})
	s := &sidecarUnderTest{
		t: t, app: app, clock: clock, logs: logs,
		nc:          streamtest.Connect(t, url),
		base:        "http://" + app.Addr(),
		published:   map[string]int64{},
		goldOffsets: map[string]map[string][2]int64{},
		exact:       map[string]bool{},
	}
	for line := range bytes.Lines(gold.Bytes()) {
		var g struct {
			QID     string              `json:"qid"`
			Offsets map[string][2]int64 `json:"relevant_offsets"`
		}
		if err := json.Unmarshal(line, &g); err != nil {
			t.Fatalf("generated gold: %v in %s", err, line)
		}
		s.goldOffsets[g.QID] = g.Offsets
	}
	s.src = gen.NewTraceSource(genOptions(clock.Now))
	return s
}

func genOptions(now func() time.Time) gen.Options {
	// Awkward -1: no awkward content (orphans, redeliveries, malformed
	// corners), so every event is scored and the arms differ by quality
	// alone.
	return gen.Options{Seed: trafficSeed, Items: trafficItems, Awkward: -1, Arms: []string{"live"}, Quality: qualityLive, Now: now}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// setQuality sets the quality of arm's future events.
func (s *sidecarUnderTest) setQuality(arm string, q float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.SetQuality(arm, q)
}

// exactOffsets makes arm's future events report the gold offsets of their
// first citation (answer_json.citation_offsets), as a pipeline that cuts
// its snippets exactly would: the generator jitters offsets and often
// leaves them out, which no arm survives the eligibility floor
// citation_accuracy >= 0.95 with. Used for the shadow arm of the
// eligibility tests.
func (s *sidecarUnderTest) exactOffsets(arm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exact[arm] = true
}

func (s *sidecarUnderTest) withExactOffsets(event []byte) []byte {
	s.t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		s.t.Fatalf("generated event: %v", err)
	}
	ans, _ := ev["answer_json"].(map[string]any)
	qid, _ := ev["qid"].(string)
	if ans == nil {
		return event
	}
	cites, _ := ans["citations"].([]any)
	if len(cites) == 0 {
		return event
	}
	// The first citation that has gold offsets goes first.
	for i, c := range cites {
		id, _ := c.(string)
		off, ok := s.goldOffsets[qid][id]
		if !ok {
			continue
		}
		cites[0], cites[i] = cites[i], cites[0]
		ans["citation_offsets"] = map[string]any{id: []int64{off[0], off[1]}}
		break
	}
	out, err := json.Marshal(ev)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// publish sends n trace events of each arm given (interleaved, as a
// retriever serving both would), stamped with the fake clock, and
// flushes: the server has them when it returns.
func (s *sidecarUnderTest) publish(n int, arms ...string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		for _, arm := range arms {
			ev := s.src.NextFor(arm)
			if s.exact[arm] {
				ev = s.withExactOffsets(ev)
			}
			if err := s.nc.Publish("rag.trace."+arm, ev); err != nil {
				s.t.Fatalf("publish: %v", err)
			}
			s.published[arm]++
		}
	}
	if err := s.nc.FlushTimeout(streamtest.Timeout); err != nil {
		s.t.Fatalf("flush: %v", err)
	}
}

// tick is one analysis interval: the clock moves by d and n events of
// each arm follow, stamped with the new time; it returns once the sidecar
// has applied them all.
func (s *sidecarUnderTest) tick(d time.Duration, n int, arms ...string) {
	s.t.Helper()
	s.clock.Advance(d)
	s.publish(n, arms...)
	s.waitApplied(arms...)
}

// outcomes are the event outcomes of the windows API (SPEC §8).
var outcomes = []string{"scored", "unlabeled", "rejected", "duplicate", "late", "join_timeout"}

// waitApplied waits until the 1h window of each arm counts every event
// published to it (whatever its outcome). An event is counted after it is
// applied.
func (s *sidecarUnderTest) waitApplied(arms ...string) {
	s.t.Helper()
	for _, arm := range arms {
		s.mu.Lock()
		want := s.published[arm]
		s.mu.Unlock()
		poll(s.t, fmt.Sprintf("%d events applied to arm %q", want, arm), func() string {
			rep, ok := s.windows(arm)
			if !ok {
				return "no window report for the arm yet"
			}
			var got int64
			for _, k := range outcomes {
				got += rep.Events[k]
			}
			if got != want {
				return fmt.Sprintf("events are %v", rep.Events)
			}
			return ""
		})
	}
}

// windowReport is GET /api/v1/windows?arm=&window= (SPEC §8).
type windowReport struct {
	Arm     string           `json:"arm"`
	Window  string           `json:"window"`
	Events  map[string]int64 `json:"events"`
	Metrics map[string]struct {
		Value   *float64 `json:"value"`
		Samples int64    `json:"samples"`
	} `json:"metrics"`
}

// windows reads the 1h window of arm; ok is false on 404 (no data yet).
func (s *sidecarUnderTest) windows(arm string) (windowReport, bool) {
	s.t.Helper()
	code, body := s.get("/api/v1/windows?arm=" + url.QueryEscape(arm) + "&window=1h")
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return windowReport{}, false
	default:
		s.t.Fatalf("GET /api/v1/windows?arm=%s&window=1h: status %d: %s", arm, code, body)
	}
	var rep windowReport
	if err := json.Unmarshal(body, &rep); err != nil {
		s.t.Fatalf("GET /api/v1/windows: %v in %s", err, body)
	}
	return rep, true
}

// windowValue is a metric of arm's 1h window; it fails when it has none.
func (s *sidecarUnderTest) windowValue(arm, metric string) float64 {
	s.t.Helper()
	rep, ok := s.windows(arm)
	if !ok {
		s.t.Fatalf("no window report for arm %q", arm)
	}
	m, ok := rep.Metrics[metric]
	if !ok || m.Value == nil {
		s.t.Fatalf("arm %q: metric %q has no value (%+v)", arm, metric, m)
	}
	return *m.Value
}

// checkDegraded asserts the premise of a degraded-canary test: the
// candidate's precision is at least 10 points below the baseline's, over
// the traffic published so far and 5000 more events of each arm (so the
// premise does not hang on a small sample).
func (s *sidecarUnderTest) checkDegraded(arm, baseline string) {
	s.t.Helper()
	s.tick(time.Second, 5000, arm, baseline)
	pa, pb := s.windowValue(arm, "precision"), s.windowValue(baseline, "precision")
	if pb-pa < 0.10 {
		s.t.Fatalf("test premise: precision of %s is %.3f, of %s %.3f: want the candidate 10+ points worse", arm, pa, baseline, pb)
	}
	s.t.Logf("precision: %s %.3f, %s %.3f", arm, pa, baseline, pb)
}

// ---- HTTP ----

func (s *sidecarUnderTest) do(method, path string, body []byte) (int, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, data
}

func (s *sidecarUnderTest) get(path string) (int, []byte) {
	s.t.Helper()
	return s.do(http.MethodGet, path, nil)
}

// verdictResponse is the body of GET /api/v1/verdict (SPEC §6); fields
// outside the contract are ignored.
type verdictResponse struct {
	Verdict  string        `json:"verdict"`
	Analysis string        `json:"analysis"`
	Arm      string        `json:"arm"`
	Baseline string        `json:"baseline"`
	Since    time.Time     `json:"since"`
	Checks   []checkResult `json:"checks"`
}

type checkResult struct {
	Name      string    `json:"name"`
	Metric    string    `json:"metric"`
	Estimate  *float64  `json:"estimate"`
	Interval  []float64 `json:"interval"`
	Tolerance *float64  `json:"tolerance"`
	Samples   struct {
		Arm      int64 `json:"arm"`
		Baseline int64 `json:"baseline"`
	} `json:"samples"`
	Verdict string `json:"verdict"`
}

// Verdicts of the contract.
const (
	verdictPass         = "pass"
	verdictFail         = "fail"
	verdictInconclusive = "inconclusive"
)

// verdict is GET /api/v1/verdict for analysis id (starting it when
// unknown); it fails the test unless the answer is 200 with one of the
// three verdicts and names the analysis, arm and baseline asked for.
func (s *sidecarUnderTest) verdict(id, arm, baseline string) verdictResponse {
	s.t.Helper()
	q := url.Values{"arm": {arm}, "analysis": {id}}
	if baseline != "" {
		q.Set("baseline", baseline)
	}
	path := "/api/v1/verdict?" + q.Encode()
	code, body := s.get(path)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s: status %d, want 200 (SPEC §6: always 200): %s", path, code, body)
	}
	var v verdictResponse
	if err := json.Unmarshal(body, &v); err != nil {
		s.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	if baseline == "" {
		baseline = "live"
	}
	if v.Analysis != id || v.Arm != arm || v.Baseline != baseline {
		s.t.Fatalf("GET %s answered analysis %q arm %q baseline %q", path, v.Analysis, v.Arm, v.Baseline)
	}
	switch v.Verdict {
	case verdictPass, verdictFail, verdictInconclusive:
	default:
		s.t.Fatalf("GET %s: verdict %q is none of pass, fail, inconclusive: %s", path, v.Verdict, body)
	}
	return v
}

// summary is one line about a verdict, for logs and failure messages.
func (v verdictResponse) summary() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s", v.Verdict)
	for _, c := range v.Checks {
		if c.Verdict == verdictPass {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", c.Name, c.Verdict)
		if c.Estimate != nil {
			fmt.Fprintf(&b, "(%.3f", *c.Estimate)
			if len(c.Interval) == 2 {
				fmt.Fprintf(&b, " [%.3f,%.3f]", c.Interval[0], c.Interval[1])
			}
			fmt.Fprintf(&b, " n=%d/%d)", c.Samples.Arm, c.Samples.Baseline)
		}
	}
	return b.String()
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
