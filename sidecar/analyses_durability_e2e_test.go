package sidecar_test

// End-to-end tests of analyses across kill -9 (SPEC §5.2, §9): the sidecar
// runs in child processes (jetstream_e2e_test.go) on the real clock, so
// that it can be killed with SIGKILL, next to a sidecar that runs
// throughout. Nothing sleeps: every wait polls a condition or watches the
// checkpoint bucket.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// childConfig is what writeChildConfig puts in a child's config.
type childConfig struct {
	url, gold, durable, bucket string
	jetstream                  bool
	// prefix replaces "rag" in the input subjects ("": rag).
	prefix string
	// extra is more YAML, appended.
	extra string
}

// writeChildConfig writes a sidecar config for a child process: one
// ingest worker, so that two sidecars apply the same events in the same
// order, and a checkpoint bucket of its own.
func writeChildConfig(t *testing.T, c childConfig) string {
	t.Helper()
	if c.prefix == "" {
		c.prefix = "rag"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nats:\n  url: %q\n  jetstream: %v\n  stream: RAG\n  durable: %s\n  workers: 1\n", c.url, c.jetstream, c.durable)
	fmt.Fprintf(&b, "subjects:\n")
	for _, kind := range []string{"trace", "retrieval", "answer", "judgement"} {
		fmt.Fprintf(&b, "  %s: %s.%s.>\n", kind, c.prefix, kind)
	}
	fmt.Fprintf(&b, "gold:\n  file: %q\nhttp:\n  listen: 127.0.0.1:0\nlog:\n  level: info\nanalysis:\n  kv_bucket: %s\n", c.gold, c.bucket)
	b.WriteString(c.extra)
	path := testenv.WriteFile(t, t.TempDir(), c.durable+".yaml", []byte(b.String()))
	return path
}

// startAnalysis starts analysis id on canary vs live through the API.
func (h *testApp) startAnalysis(id string) analysis.Result {
	h.T.Helper()
	code, body := h.PostJSON("/api/v1/analyses", `{"id":"`+id+`","arm":"canary","baseline":"live","checks":"canary"}`)
	if code != http.StatusCreated {
		h.T.Fatalf("POST /api/v1/analyses %s: %d %s", id, code, body)
	}
	var r analysis.Result
	if err := json.Unmarshal(body, &r); err != nil {
		h.T.Fatal(err)
	}
	return r
}

// sameAnalysis fails unless a and b counted the same events and judged
// every check alike: the checks' JSON (estimate, interval, samples,
// verdict) byte for byte. It wants some checks with numbers, so that the
// comparison is not empty.
func sameAnalysis(t *testing.T, what string, a, b analysis.Result, minWithData int) {
	t.Helper()
	if a.Events != b.Events {
		t.Errorf("%s: events %+v vs %+v", what, a.Events, b.Events)
	}
	ja, err := json.Marshal(a.Checks)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b.Checks)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja, jb) {
		for i := range min(len(a.Checks), len(b.Checks)) {
			ca, _ := json.Marshal(a.Checks[i])
			cb, _ := json.Marshal(b.Checks[i])
			if !bytes.Equal(ca, cb) {
				t.Errorf("%s: check %s differs:\n%s\n%s", what, a.Checks[i].Name, ca, cb)
			}
		}
		if len(a.Checks) != len(b.Checks) {
			t.Errorf("%s: %d checks vs %d", what, len(a.Checks), len(b.Checks))
		}
	}
	n := 0
	for _, c := range a.Checks {
		if c.Estimate != nil {
			n++
		}
	}
	if n < minWithData {
		t.Errorf("%s: only %d checks have numbers, want >= %d: %+v", what, n, minWithData, a.Checks)
	}
}

// unpairedOnly is r with what its accumulators say of each check (its
// estimate, values and samples), without what its matched pairs and its
// running intersection add: no interval, pairing or verdict.
func unpairedOnly(r analysis.Result) analysis.Result {
	r.Checks = slices.Clone(r.Checks)
	r.Verdict, r.Reason = "", ""
	for i := range r.Checks {
		c := &r.Checks[i]
		c.Interval, c.Pairing, c.Pairs, c.PairedEstimate, c.PairedInterval, c.UnpairedInterval = nil, "", 0, nil, nil, nil
		c.Verdict, c.Reason = "", ""
	}
	return r
}

// analysisEvents is how many events of pubs an analysis of canary vs live
// counts: the scored traces and joined answers (judgement pairs feed its
// checks, not its event count).
func analysisEvents(pubs []jsPub) analysis.Samples {
	var s analysis.Samples
	for _, p := range pubs {
		if p.outcome != "scored" || strings.HasPrefix(p.subject, "rag.judgement.") {
			continue
		}
		switch p.arm {
		case "canary":
			s.Arm++
		case "live":
			s.Baseline++
		}
	}
	return s
}

// TestAnalysisJetStreamKillRestart: in JetStream mode an analysis survives
// kill -9 with exactly the accumulators of an uninterrupted run. Sidecar A
// is killed mid-stream and started again on the same stream and bucket; B
// runs throughout. Both end with the same events and the same estimate,
// interval and verdict for every check, over mixed traffic (producer
// retries, split halves, judgement pairs, malformed and late events).
func TestAnalysisJetStreamKillRestart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	cfgA := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "killed", bucket: "analyses_killed", jetstream: true})
	cfgB := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "steady", bucket: "analyses_steady", jetstream: true})
	a := startSidecarProcess(t, "sidecar A", cfgA)
	b := startSidecarProcess(t, "sidecar B", cfgB)
	a.waitReady("A", http.StatusOK)
	b.waitReady("B", http.StatusOK)

	const id = "canary-js"
	ra, rb := a.startAnalysis(id), b.startAnalysis(id)
	sinceA := ra.Since
	// Every event is at or after both starts.
	t0 := ra.Since
	if rb.Since.After(t0) {
		t0 = rb.Since
	}
	pubs := jsTraffic(0, 600, t0)
	want := expectedEvents(pubs)
	wantEvents := analysisEvents(pubs)

	_, js := testenv.ConnectJetStream(t, ns.URL())
	ctx := testenv.Context(t, waitTimeout)
	var published atomic.Int64
	pubErr := make(chan error, 1)
	go func() { pubErr <- publishAll(ctx, js, pubs, &published) }()

	// Kill A once its analysis has taken some of the stream; start it
	// again when more has been published meanwhile.
	var before analysis.Result
	poll(t, "A's analysis to take 60 events", func() string {
		before = a.analysis(id)
		if n := before.Events.Arm + before.Events.Baseline; n < 60 {
			return fmt.Sprintf("%d taken", n)
		}
		return ""
	})
	var killedAt int64
	a, killedAt = killWhilePublishing(t, a, cfgA, &published, len(pubs), pubErr)
	t.Logf("A killed with %+v events in its analysis, %d of %d messages published", before.Events, killedAt, len(pubs))

	// Every message applied (the windows count each once), then compare.
	a.waitExpected("A", want)
	b.waitExpected("B", want)
	ra, rb = a.analysis(id), b.analysis(id)
	if ra.Events != wantEvents {
		t.Errorf("A's analysis counts %+v events, want %+v", ra.Events, wantEvents)
	}
	if !ra.Since.Equal(sinceA) || ra.Analysis != id || ra.Arm != "canary" || ra.Baseline != "live" || ra.Ended != nil {
		t.Errorf("A's analysis after the restart: %+v, want the one started before the kill", ra)
	}
	sameAnalysis(t, "A after kill -9 vs B", ra, rb, 6)
	// The checkpoint holds the spec only: the replay rebuilt the rest.
	kv, err := js.KeyValue(ctx, "analyses_killed")
	if err != nil {
		t.Fatal(err)
	}
	if s := kvCheckpoint(ctx, t, kv, id); !s.Spec.Start.Equal(sinceA) || s.Spec.Arm != "canary" || len(s.Candidate) > 0 || len(s.Baseline) > 0 || s.Events != (analysis.Samples{}) {
		t.Errorf("JetStream-mode checkpoint %+v, want the spec (start %v) without accumulators", s, sinceA)
	}
	// The pairs are all the canary's: the checks have data, and no
	// baseline to compare with.
	for _, c := range ra.Checks {
		if (c.Metric == "agreement" || c.Metric == "kappa") && (c.Samples.Arm == 0 || c.Verdict == analysis.NoData) {
			t.Errorf("check %s has no data (%+v): the judgement pairs did not reach the analysis", c.Name, c.Samples)
		}
	}
}

// TestAnalysisJetStreamReplayFromStart: a restart in JetStream mode
// replays the stream from the start of the oldest running analysis when
// that is further back than the windows need. The windows here span 1.5 s
// with their lateness, and A restarts once every event is older than that:
// a replay of the windows' span alone would leave its analysis empty.
func TestAnalysisJetStreamReplayFromStart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	genOpt := gen.Options{Seed: 20310307, Items: 300, Awkward: -1}
	gold := writeGenGold(t, genOpt)
	const span = 1500 * time.Millisecond // the longest window + max_lateness
	short := "windows:\n  - {length: 1s, resolution: 100ms}\nwindow:\n  max_lateness: 500ms\n"
	cfgA := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "killed", bucket: "analyses_killed", jetstream: true, extra: short})
	cfgB := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "steady", bucket: "analyses_steady", jetstream: true, extra: short})
	a := startSidecarProcess(t, "sidecar A", cfgA)
	b := startSidecarProcess(t, "sidecar B", cfgB)
	a.waitReady("A", http.StatusOK)
	b.waitReady("B", http.StatusOK)
	const id = "canary-old"
	sinceA := a.startAnalysis(id).Since
	b.startAnalysis(id)

	// Events without ts: their event time is the time the server stored
	// them, after both starts.
	_, js := testenv.ConnectJetStream(t, ns.URL())
	ctx := testenv.Context(t, waitTimeout)
	genOpt.Arms = []string{"live", "canary"}
	src := gen.NewTraceSource(genOpt)
	const n = 300
	for range n {
		for _, arm := range genOpt.Arms {
			if _, err := js.Publish(ctx, "rag.trace."+arm, src.NextFor(arm)); err != nil {
				t.Fatal(err)
			}
		}
	}
	lastStored := time.Now() // after the last PubAck
	a.waitAnalysisEvents(id, n, n)
	rb := b.waitAnalysisEvents(id, n, n)
	a.kill()

	// The one wait on the clock: what is tested is that the events are
	// older than the windows' replay span when A starts again.
	poll(t, "every event to be older than the replay span", func() string {
		if age := time.Since(lastStored); age <= span+100*time.Millisecond {
			return fmt.Sprintf("the last is %v old", age)
		}
		return ""
	})
	a = startSidecarProcess(t, "sidecar A (restarted)", cfgA)
	ra := a.waitAnalysisEvents(id, n, n)
	if !ra.Since.Equal(sinceA) {
		t.Errorf("A's analysis since %v after the restart, want %v", ra.Since, sinceA)
	}
	sameAnalysis(t, "A replayed from the analysis' start vs B", ra, rb, 6)
}

// TestAnalysisJetStreamEndedRestart: in JetStream mode an ended analysis,
// which stays readable for analysis.retention but which the replay (from
// the oldest running analysis) does not reach, comes back after kill -9
// from its checkpoint with the same events, checks and end.
func TestAnalysisJetStreamEndedRestart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	genOpt := gen.Options{Seed: 20310308, Items: 300, Awkward: -1}
	gold := writeGenGold(t, genOpt)
	cfgA := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "ended", bucket: "analyses_ended", jetstream: true})
	a := startSidecarProcess(t, "sidecar A", cfgA)
	a.waitReady("A", http.StatusOK)
	const id = "canary-ended"
	a.startAnalysis(id)
	_, js := testenv.ConnectJetStream(t, ns.URL())
	ctx := testenv.Context(t, waitTimeout)
	genOpt.Arms = []string{"live", "canary"}
	src := gen.NewTraceSource(genOpt)
	const n = 300
	for range n {
		for _, arm := range genOpt.Arms {
			if _, err := js.Publish(ctx, "rag.trace."+arm, src.NextFor(arm)); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.waitAnalysisEvents(id, n, n)
	if code, _, out := a.Do(http.MethodDelete, "/api/v1/analyses/"+id, nil, "", ""); code != http.StatusOK {
		t.Fatalf("DELETE /api/v1/analyses/%s: %d %s", id, code, out)
	}
	ended := a.analysis(id)
	if ended.Ended == nil {
		t.Fatalf("analysis not ended: %+v", ended)
	}
	kv, err := js.KeyValue(ctx, "analyses_ended")
	if err != nil {
		t.Fatal(err)
	}
	if s := kvCheckpoint(ctx, t, kv, id); s.Ended.IsZero() || len(s.Candidate) == 0 || len(s.Baseline) == 0 || s.Events != ended.Events {
		t.Errorf("ended analysis' checkpoint: ended %v, %d and %d bytes of accumulators, events %+v; want its end, accumulators and %+v", s.Ended, len(s.Candidate), len(s.Baseline), s.Events, ended.Events)
	}
	a.kill()
	a = startSidecarProcess(t, "sidecar A (restarted)", cfgA)
	a.waitReady("A", http.StatusOK)
	back := a.analysis(id)
	if back.Ended == nil || !back.Ended.Equal(*ended.Ended) || back.EndReason != ended.EndReason {
		t.Errorf("after the restart: ended %v (%s), want %v (%s)", back.Ended, back.EndReason, ended.Ended, ended.EndReason)
	}
	sameAnalysis(t, "ended analysis after kill -9 vs before", back, ended, 6)
}

// kvCheckpoint reads analysis id's checkpoint from bucket.
func kvCheckpoint(ctx context.Context, t *testing.T, kv jetstream.KeyValue, id string) analysis.Saved {
	t.Helper()
	e, err := kv.Get(ctx, base64.RawURLEncoding.EncodeToString([]byte(id)))
	if err != nil {
		t.Fatalf("checkpoint of %s: %v", id, err)
	}
	s, err := analysis.DecodeSaved(e.Value())
	if err != nil {
		t.Fatalf("checkpoint of %s: %v", id, err)
	}
	return s
}

// TestAnalysisCoreNATSKillRestart: with core NATS (the server still has
// JetStream, for the checkpoint bucket) an analysis resumes from its last
// checkpoint after kill -9. A is killed after a tick wrote a checkpoint and
// more events came; restarted, its analysis equals what it was at the
// checkpoint: the events between the checkpoint and the kill are the
// documented loss. From there it goes on as a sidecar B that never saw
// those events does.
func TestAnalysisCoreNATSKillRestart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	genOpt := gen.Options{Seed: 20310306, Items: 300, Awkward: -1}
	gold := writeGenGold(t, genOpt)
	const bucketA = "analyses_core_a"
	cfgA := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "core-a", bucket: bucketA})
	// B reads its own subjects, so that the test can send A events B
	// never sees.
	cfgB := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "core-b", bucket: "analyses_core_b", prefix: "ref"})
	a := startSidecarProcess(t, "sidecar A", cfgA)
	b := startSidecarProcess(t, "sidecar B", cfgB)
	a.waitReady("A", http.StatusOK)
	b.waitReady("B", http.StatusOK)

	const id = "canary-core"
	ra := a.startAnalysis(id)
	b.startAnalysis(id)

	nc, js := testenv.ConnectJetStream(t, ns.URL())
	genOpt.Arms = []string{"live", "canary"}
	genOpt.Now = time.Now // after both starts
	src := gen.NewTraceSource(genOpt)
	// send publishes n events per arm to A's subjects and, with toB, to
	// B's too.
	send := func(n int, toB bool) {
		t.Helper()
		for range n {
			for _, arm := range genOpt.Arms {
				ev := src.NextFor(arm)
				if err := nc.Publish("rag.trace."+arm, ev); err != nil {
					t.Fatal(err)
				}
				if toB {
					if err := nc.Publish("ref.trace."+arm, ev); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := nc.FlushTimeout(waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	const n1, gap, n3 = 600, 150, 600

	// Bounds the test's own NATS calls, over several waits.
	ctx := testenv.Context(t, 3*waitTimeout)
	kv, err := js.KeyValue(ctx, bucketA)
	if err != nil {
		t.Fatalf("A's checkpoint bucket: %v", err)
	}

	// 1. Events both see, then a tick's checkpoint of all of them.
	send(n1, true)
	a.waitAnalysisEvents(id, n1, n1)
	b.waitAnalysisEvents(id, n1, n1)
	// Watch for the next checkpoint after the current ones: a tick has
	// just written it, so the next is a whole tick interval away.
	w, err := kv.Watch(ctx, base64.RawURLEncoding.EncodeToString([]byte(id)), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	var saved analysis.Saved
	for saved.Events != (analysis.Samples{Arm: n1, Baseline: n1}) {
		select {
		case e := <-w.Updates():
			if e == nil {
				continue
			}
			s, err := analysis.DecodeSaved(e.Value())
			if err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			saved = s
		case <-ctx.Done():
			t.Fatalf("no checkpoint of %d events per arm within %v (last %+v)", n1, waitTimeout, saved.Events)
		}
	}
	if len(saved.Candidate) == 0 || len(saved.Baseline) == 0 {
		t.Fatalf("core-NATS checkpoint without accumulators: %+v", saved)
	}
	atCheckpoint := a.analysis(id)

	// 2. More events for A only, then kill -9 before the next tick.
	send(gap, false)
	a.waitAnalysisEvents(id, n1+gap, n1+gap)
	a.kill()
	if s := kvCheckpoint(ctx, t, kv, id); s.Events != saved.Events {
		t.Fatalf("a tick checkpointed %+v after the one watched (%+v) before the kill: the gap took longer than a tick", s.Events, saved.Events)
	}

	// 3. Restarted, A's analysis is the checkpoint's: the gap is lost.
	a = startSidecarProcess(t, "sidecar A (restarted)", cfgA)
	a.waitReady("A", http.StatusOK)
	restored := a.analysis(id)
	if !restored.Since.Equal(ra.Since) || restored.Ended != nil {
		t.Errorf("restored analysis since %v (ended %v), want since %v and running", restored.Since, restored.Ended, ra.Since)
	}
	if restored.Events != (analysis.Samples{Arm: n1, Baseline: n1}) {
		t.Errorf("restored analysis counts %+v events, want %d per arm: those of the checkpoint, without the %d of the gap", restored.Events, n1, gap)
	}
	sameAnalysis(t, "A restored vs A at the checkpoint", restored, atCheckpoint, 6)

	// 4. Both go on with the same events: A, which lost the gap, ends
	// with B's accumulators, B never having seen it. The events that
	// waited for a partner at the checkpoint are not in it: A pairs no
	// more than B does, and every unpaired sequence is B's.
	send(n3, true)
	ra = a.waitAnalysisEvents(id, n1+n3, n1+n3)
	rb := b.waitAnalysisEvents(id, n1+n3, n1+n3)
	for i := range min(len(ra.Checks), len(rb.Checks)) {
		if pa, pb := ra.Checks[i].Pairs, rb.Checks[i].Pairs; pa > pb {
			t.Errorf("A resumed vs B: check %s has %d pairs, B %d", ra.Checks[i].Name, pa, pb)
		}
	}
	sameAnalysis(t, "A resumed vs B, unpaired", unpairedOnly(ra), unpairedOnly(rb), 6)
	a.CheckMetric("shadoweval_analysis_checkpoint_errors_total", nil, 0)
}

// TestAnalysisCoreNATSStopRestart: with core NATS a clean stop (SIGTERM)
// writes a last checkpoint once the subscriptions have drained, so that
// the restarted sidecar's analysis has every event the stopped one
// counted, those after the last tick's checkpoint too; only kill -9 loses
// them (TestAnalysisCoreNATSKillRestart).
func TestAnalysisCoreNATSStopRestart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	genOpt := gen.Options{Seed: 20310307, Items: 300, Awkward: -1}
	gold := writeGenGold(t, genOpt)
	const bucket = "analyses_core_stop"
	cfg := writeChildConfig(t, childConfig{url: ns.URL(), gold: gold, durable: "core-stop", bucket: bucket})
	a := startSidecarProcess(t, "sidecar A", cfg)
	a.waitReady("A", http.StatusOK)
	const id = "canary-stop"
	ra := a.startAnalysis(id)

	nc, js := testenv.ConnectJetStream(t, ns.URL())
	genOpt.Arms = []string{"live", "canary"}
	genOpt.Now = time.Now
	src := gen.NewTraceSource(genOpt)
	send := func(n int) {
		t.Helper()
		for range n {
			for _, arm := range genOpt.Arms {
				if err := nc.Publish("rag.trace."+arm, src.NextFor(arm)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := nc.FlushTimeout(waitTimeout); err != nil {
			t.Fatal(err)
		}
	}
	const n1, gap = 400, 150
	ctx := testenv.Context(t, 3*waitTimeout)
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("the checkpoint bucket: %v", err)
	}
	// A tick's checkpoint of the first events, then more events before
	// the next tick.
	send(n1)
	a.waitAnalysisEvents(id, n1, n1)
	w, err := kv.Watch(ctx, base64.RawURLEncoding.EncodeToString([]byte(id)), jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for s := (analysis.Saved{}); s.Events != (analysis.Samples{Arm: n1, Baseline: n1}); {
		select {
		case e := <-w.Updates():
			if e == nil {
				continue
			}
			if s, err = analysis.DecodeSaved(e.Value()); err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("no checkpoint of %d events per arm within %v", n1, waitTimeout)
		}
	}
	send(gap)
	a.waitAnalysisEvents(id, n1+gap, n1+gap)
	before := a.analysis(id)
	if s := kvCheckpoint(ctx, t, kv, id); s.Events != (analysis.Samples{Arm: n1, Baseline: n1}) {
		t.Fatalf("a tick checkpointed %+v before the stop: the gap took longer than a tick", s.Events)
	}
	a.terminate()
	if s := kvCheckpoint(ctx, t, kv, id); s.Events != (analysis.Samples{Arm: n1 + gap, Baseline: n1 + gap}) {
		t.Errorf("after a clean stop the checkpoint has %+v events, want %d per arm", s.Events, n1+gap)
	}
	a = startSidecarProcess(t, "sidecar A (restarted)", cfg)
	a.waitReady("A", http.StatusOK)
	restored := a.analysis(id)
	if !restored.Since.Equal(ra.Since) || restored.Events != (analysis.Samples{Arm: n1 + gap, Baseline: n1 + gap}) {
		t.Errorf("restored analysis since %v with %+v events, want since %v with %d per arm", restored.Since, restored.Events, ra.Since, n1+gap)
	}
	sameAnalysis(t, "A restored vs A before the stop", unpairedOnly(restored), unpairedOnly(before), 6)
	a.CheckMetric("shadoweval_analysis_checkpoint_errors_total", nil, 0)
}
