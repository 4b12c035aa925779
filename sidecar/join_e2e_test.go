package sidecar_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/window"
)

// Members of a trace line that belong to each half of a split event
// (SPEC §2.3); qid and request_id go in both.
var (
	retrievalMembers = []string{"q", "query", "retrieved_ids", "topk", "delta_s"}
	answerMembers    = []string{"answer_json", "delta_s_cited", "lambda_state"}
)

// splitTrace cuts a trace line into its retrieval and answer halves,
// both carrying qid and request_id. Every member must be known, so a
// generator change cannot slip a member past the test.
func splitTrace(t testing.TB, line []byte, requestID string) (ret, ans []byte) {
	t.Helper()
	var all map[string]json.RawMessage
	if err := json.Unmarshal(line, &all); err != nil {
		t.Fatalf("%v in %s", err, line)
	}
	rid, _ := json.Marshal(requestID)
	r := map[string]json.RawMessage{"qid": all["qid"], "request_id": rid}
	a := map[string]json.RawMessage{"qid": all["qid"], "request_id": rid}
	for k, v := range all {
		switch {
		case k == "qid":
		case contains(retrievalMembers, k):
			r[k] = v
		case contains(answerMembers, k):
			a[k] = v
		default:
			t.Fatalf("trace member %q is in neither half: extend the lists of splitTrace (line %s)", k, line)
		}
	}
	var err error
	if ret, err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	if ans, err = json.Marshal(a); err != nil {
		t.Fatal(err)
	}
	return ret, ans
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSplitEventsEqualCombined sends the same generated traces three ways,
// each to its own arm: whole on rag.trace.whole, retrieval before answer
// on rag.retrieval.ra / rag.answer.ra, answer before retrieval on arm ar.
// The three 5m windows must be identical, metric for metric.
func TestSplitEventsEqualCombined(t *testing.T) {
	t.Parallel()
	const items = 300
	ds := writeDataSet(t, 7, items, 1)
	lines := readLines(t, ds.trace)
	h := startApp(t, appOptions{goldFile: ds.gold})

	rets := make([][]byte, len(lines))
	anss := make([][]byte, len(lines))
	for i, line := range lines {
		rets[i], anss[i] = splitTrace(t, line, fmt.Sprintf("req-%d", i))
	}
	for _, line := range lines {
		if err := h.NC.Publish("rag.trace.whole", line); err != nil {
			t.Fatal(err)
		}
	}
	// One half of each request first, and only once all of them wait in
	// the joiner, the other half: the two kinds come on different
	// subscriptions, which run concurrently.
	send := func(arm string, first, second [][]byte, firstKind, secondKind string) {
		for _, b := range first {
			if err := h.NC.Publish("rag."+firstKind+"."+arm, b); err != nil {
				t.Fatal(err)
			}
		}
		h.waitPending(len(first))
		for _, b := range second {
			if err := h.NC.Publish("rag."+secondKind+"."+arm, b); err != nil {
				t.Fatal(err)
			}
		}
		testenv.Flush(t, h.NC)
		h.waitEvents(arm, map[string]int64{"scored": items})
		h.waitPending(0)
	}
	send("ra", rets, anss, "retrieval", "answer")
	send("ar", anss, rets, "answer", "retrieval")

	whole := h.waitEvents("whole", map[string]int64{"scored": items})
	for _, name := range []string{"precision", "recall_at_5", "delta_s_median", "delta_s_retrieved_p90", "coverage", "anchor_proximity"} {
		if samples(t, whole, name) == 0 {
			t.Errorf("metric %s has no samples: the comparison would prove little", name)
		}
	}
	for _, arm := range []string{"ra", "ar"} {
		rep := h.mustReport(arm)
		// Each half counts once, in the joined event.
		checkEvents(t, rep, map[string]int64{"scored": items})
		if d := diffMetrics(whole, rep); len(d) > 0 {
			t.Errorf("split events of arm %s differ from the whole traces:\n%s", arm, strings.Join(d, "\n"))
		}
	}
}

// TestJoinTimeoutsOverflowAndRejects drives the joiner of SPEC §2.3 with
// the app's clock: lone halves time out after join.ttl (a retrieval half is
// still scored for retrieval metrics, an answer half is not), overflow
// beyond join.max_pending evicts the oldest, and an answer half without
// request_id is rejected to the dead-letter subject.
func TestJoinTimeoutsOverflowAndRejects(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
		c.Join.MaxPending = 3
	}})
	ttl := time.Duration(config.Default().Join.TTL)
	dead := testenv.Collect(t, h.NC, "shadoweval.deadletter", 10)

	// A whole trace first, so the arm has a window to compare with.
	h.PublishJSON("rag.trace.j", goodTrace("A1"))
	base := h.waitEvents("j", map[string]int64{"scored": 1})

	// retrievalOnly says which metrics a retrieval-only observation moves.
	retrievalOnly := func(name string) bool {
		s, _ := window.Lookup(name)
		return strings.HasPrefix(name, "recall_at_") || strings.HasPrefix(name, "mean_precision_at_") ||
			strings.HasPrefix(name, "mean_recall_at_") || strings.HasPrefix(name, "delta_s_retrieved") || s.Row.RankingMetric()
	}
	// checkGrowth: retrieval metrics gained n samples, the others none.
	checkGrowth := func(before, after map[string]int64, n int64, what string) {
		t.Helper()
		for name, b := range before {
			want := b
			if retrievalOnly(name) {
				if strings.HasPrefix(name, "delta_s_retrieved") {
					want = b + 2*n // two ΔS per retrieval below
				} else {
					want = b + n
				}
			}
			if after[name] != want {
				t.Errorf("%s: metric %s has %d samples, want %d (before: %d)", what, name, after[name], want, b)
			}
		}
	}
	sampleMap := func(arm string) map[string]int64 {
		rep := h.mustReport(arm)
		m := make(map[string]int64, len(rep.Metrics))
		for name, v := range rep.Metrics {
			m[name] = v.Samples
		}
		return m
	}
	before := sampleMap("j")
	if before["precision"] != 1 || before["recall_at_5"] != 1 {
		t.Fatalf("baseline: precision %d samples, recall_at_5 %d, want 1 and 1", before["precision"], before["recall_at_5"])
	}

	// 1. A retrieval half whose answer never comes. Its one outcome is the
	// join timeout; it still feeds the retrieval metrics.
	h.PublishJSON("rag.retrieval.j", event{QID: "A1", RequestID: "lonely-retrieval",
		RetrievedIDs: []string{"p1#1", "p7#7"}, DeltaS: []float64{0.3, 0.6}})
	h.waitPending(1)
	if d := diffMetrics(base, h.mustReport("j")); len(d) > 0 {
		t.Fatalf("a pending half changed the window:\n%s", strings.Join(d, "\n"))
	}
	h.Clock.Advance(ttl - time.Second)
	h.Sidecar.ExpireNow()
	h.waitPending(1) // not yet: the TTL has not passed
	h.Clock.Advance(2 * time.Second)
	h.Sidecar.ExpireNow()
	rep := h.waitEvents("j", map[string]int64{"scored": 1, "join_timeout": 1})
	h.waitPending(0)
	after := sampleMap("j")
	checkGrowth(before, after, 1, "lone retrieval half")
	if v := value(t, rep, "recall_at_5"); v != 1 {
		t.Errorf("recall_at_5 = %v, want 1 (both observations hold p1#1 in their top 5)", v)
	}

	// 2. An answer half whose retrieval never comes: not scored.
	before = after
	h.PublishJSON("rag.answer.j", event{QID: "A1", RequestID: "lonely-answer",
		Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}})
	h.waitPending(1)
	h.Clock.Advance(ttl + time.Second)
	h.Sidecar.ExpireNow()
	rep = h.waitEvents("j", map[string]int64{"scored": 1, "join_timeout": 2})
	h.waitPending(0)
	checkGrowth(before, sampleMap("j"), 0, "lone answer half")

	// 3. Overflow: a fourth pending half evicts the oldest, which counts
	// as a join timeout and, being a retrieval half, is scored for
	// retrieval. Each half is waited for before the next is sent: with
	// nats.workers > 1 (one per CPU by default) the halves of one subject
	// are handled by several goroutines in no fixed order, so "oldest"
	// is only o1 once o1 is pending before o2 arrives.
	before = sampleMap("j")
	for i := 1; i <= 4; i++ {
		h.PublishJSON("rag.retrieval.j", event{QID: "A1", RequestID: fmt.Sprintf("o%d", i),
			RetrievedIDs: []string{"p7#7", "p1#1"}, DeltaS: []float64{0.5, 0.4}})
		if i < 4 {
			h.waitPending(i)
		}
	}
	rep = h.waitEvents("j", map[string]int64{"scored": 1, "join_timeout": 3})
	h.waitPending(3)
	checkGrowth(before, sampleMap("j"), 1, "evicted retrieval half")
	// o2 is still there: its answer joins it.
	h.PublishJSON("rag.answer.j", event{QID: "A1", RequestID: "o2",
		Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}})
	rep = h.waitEvents("j", map[string]int64{"scored": 2, "join_timeout": 3})
	h.waitPending(2)
	checkSamples(t, rep, "precision", 2, "after the joined o2")
	// o1 was evicted: its answer finds nothing and waits on its own.
	h.PublishJSON("rag.answer.j", event{QID: "A1", RequestID: "o1",
		Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}})
	h.waitPending(3)
	checkEvents(t, h.mustReport("j"), map[string]int64{"scored": 2, "join_timeout": 3})

	// 4. An answer half without request_id can never be joined: rejected.
	sent := h.PublishJSON("rag.answer.j", event{QID: "A1",
		Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}})
	rep = h.waitEvents("j", map[string]int64{"scored": 2, "join_timeout": 3, "rejected": 1})
	msg := testenv.Next(t, dead)
	if reason := msg.Header.Get(stream.HeaderReason); !strings.HasPrefix(reason, "no_request_id") {
		t.Errorf("dead letter %s = %q, want the reason no_request_id", stream.HeaderReason, reason)
	}
	if subj := msg.Header.Get(stream.HeaderSubject); subj != "rag.answer.j" {
		t.Errorf("dead letter %s = %q, want rag.answer.j", stream.HeaderSubject, subj)
	}
	if string(msg.Data) != string(sent) {
		t.Errorf("dead letter data = %s, want the message as sent: %s", msg.Data, sent)
	}
	h.CheckMetric("shadoweval_rejected_events_total", map[string]string{"reason": "no_request_id"}, 1)
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "answer", "arm": "j", "outcome": "join_timeout"}, 1)
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "retrieval", "arm": "j", "outcome": "join_timeout"}, 2)
	select {
	case m := <-dead:
		t.Errorf("unexpected second dead letter: %s %s", m.Header.Get(stream.HeaderReason), m.Data)
	default:
	}
}
