package sidecar_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
)

// idEvent is an event with an idempotency key and an event time.
type idEvent struct {
	event
	EventID string `json:"event_id,omitempty"`
	TS      string `json:"ts,omitempty"`
}

// publishWithID publishes v on subject with a Nats-Msg-Id header ("" none).
func (h *testApp) publishWithID(subject, msgID string, v any) {
	h.T.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		h.T.Fatal(err)
	}
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if msgID != "" {
		msg.Header.Set(nats.MsgIdHdr, msgID)
	}
	if err := h.NC.PublishMsg(msg); err != nil {
		h.T.Fatal(err)
	}
	testenv.Flush(h.T, h.NC)
}

// TestDuplicates: an event sent twice with the same event_id, or without
// one with the same Nats-Msg-Id, is applied once and counted once as
// duplicate; the key is per arm and kind, event_id wins over Nats-Msg-Id,
// and a key older than the longest window is forgotten (its memory freed).
func TestDuplicates(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})

	a1 := idEvent{event: goodTrace("A1"), EventID: "e-1"}
	h.publishWithID("rag.trace.d", "", a1)
	h.publishWithID("rag.trace.d", "", a1) // a producer retry
	h.waitEvents("d", map[string]int64{"scored": 1, "duplicate": 1})
	// The same event_id in another arm is another event.
	h.publishWithID("rag.trace.d2", "", a1)
	h.waitEvents("d2", map[string]int64{"scored": 1})

	// Nats-Msg-Id only (core NATS does not de-duplicate).
	u1 := goodTrace("U1")
	h.publishWithID("rag.trace.d", "m-1", u1)
	h.publishWithID("rag.trace.d", "m-1", u1)
	// event_id wins: the same Nats-Msg-Id on two event_ids is two events,
	// one event_id under two Nats-Msg-Ids is one.
	h.publishWithID("rag.trace.d", "m-2", idEvent{event: goodTrace("A2"), EventID: "e-2"})
	h.publishWithID("rag.trace.d", "m-2", idEvent{event: goodTrace("A2"), EventID: "e-3"})
	h.publishWithID("rag.trace.d", "m-3", idEvent{event: goodTrace("A2"), EventID: "e-3"})
	// Judgements go by Nats-Msg-Id.
	j := map[string]string{"qid": "A1", "request_id": "r1", "agent": "scholar", "label": "VALID"}
	h.publishWithID("rag.judgement.d", "j-1", j)
	h.publishWithID("rag.judgement.d", "j-1", j)
	j["agent"] = "auditor"
	h.publishWithID("rag.judgement.d", "j-2", j)
	rep := h.waitEvents("d", map[string]int64{"scored": 6, "duplicate": 4})
	// Applied once: one sample per scored trace.
	checkSamples(t, rep, "precision", 3, "A1 and A2 twice")
	checkSamples(t, rep, "agreement", 1, "one pair")
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "trace", "arm": "d", "outcome": "duplicate"}, 3)
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "judgement", "arm": "d", "outcome": "duplicate"}, 1)
	h.CheckMetric("shadoweval_dedupe_keys", nil, 7)

	// An hour and two minutes later, the keys of then are forgotten: the
	// first new event drops them, and the old event_id is a new event
	// again (with its old ts, it is late, not a duplicate).
	old := clockBase.Format(time.RFC3339Nano)
	h.Clock.Advance(time.Hour + 2*time.Minute)
	h.publishWithID("rag.trace.d", "", idEvent{event: goodTrace("A2"), EventID: "e-new"})
	h.waitEvents("d", map[string]int64{"scored": 1})
	h.CheckMetric("shadoweval_dedupe_keys", nil, 1)
	h.publishWithID("rag.trace.d", "", idEvent{event: goodTrace("A1"), EventID: "e-1", TS: old})
	h.waitEvents("d", map[string]int64{"scored": 1, "late": 1})
	h.publishWithID("rag.trace.d", "", a1) // ts: now
	h.publishWithID("rag.trace.d", "", a1)
	h.waitEvents("d", map[string]int64{"scored": 2, "late": 1, "duplicate": 1})
	h.CheckMetric("shadoweval_dedupe_keys", nil, 2)
}

// TestDuplicateSplitHalves: the halves of a split event may share an
// event_id (the key is per kind); a half sent twice is a duplicate.
func TestDuplicateSplitHalves(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	full := goodTrace("A1")
	ret := idEvent{event: event{QID: "A1", RequestID: "q1", RetrievedIDs: full.RetrievedIDs, DeltaS: full.DeltaS}, EventID: "x"}
	ans := idEvent{event: event{QID: "A1", RequestID: "q1", Answer: full.Answer}, EventID: "x"}
	h.publishWithID("rag.retrieval.s", "", ret)
	h.publishWithID("rag.retrieval.s", "", ret)
	h.publishWithID("rag.answer.s", "", ans)
	rep := h.waitEvents("s", map[string]int64{"scored": 1, "duplicate": 1})
	checkValue(t, rep, "precision", 1)
	h.waitPending(0)
}
