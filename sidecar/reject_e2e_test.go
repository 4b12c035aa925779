package sidecar_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestRejectedInput: malformed messages are counted by reason, republished
// as they came on the dead-letter subject with the reason in a header, and
// the app goes on scoring.
func TestRejectedInput(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{embedded: true, goldFile: "testdata/gold_v1.jsonl"})
	dead := testenv.Collect(t, h.NC, "shadoweval.deadletter", 10)

	bad := []struct {
		subject, data, reason string
	}{
		{"rag.trace.r", `{"qid":"A1","retrieved_ids":["p1#1"]`, "invalid_json"},
		{"rag.trace.r", `not json at all`, "invalid_json"},
		{"rag.trace.r", `{"retrieved_ids":["p1#1"],"answer_json":{"claim":"x"}}`, "missing_qid"},
		{"rag.trace.r", `{"qid":"","answer_json":{"claim":"x"}}`, "missing_qid"},
		{"rag.trace.r", `{"qid":"A1","retrieved_ids":"p1#1"}`, "bad_field"},
		{"rag.trace.r", `{"qid":"A1","delta_s":[0.2,"high"]}`, "bad_field"},
		{"rag.trace.r", `{"qid":"A1","ts":"yesterday"}`, "bad_field"},
		{"rag.judgement.r", `{"qid":"A1","agent":"scholar","label":"MAYBE"}`, "bad_field"},
	}
	// A header of the original message travels with the dead letter.
	for i, b := range bad {
		msg := &nats.Msg{Subject: b.subject, Data: []byte(b.data), Header: nats.Header{"X-Test": {b.reason}}}
		if i == 0 {
			msg.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
		}
		if err := h.NC.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Flush(t, h.NC)
	// Still scoring.
	h.PublishJSON("rag.trace.r", goodTrace("A1"))
	h.PublishJSON("rag.trace.r", goodTrace("U1"))
	rep := h.waitEvents("r", map[string]int64{"scored": 2, "rejected": int64(len(bad))})
	if got := value(t, rep, "precision"); got != 1 || samples(t, rep, "precision") != 1 {
		t.Errorf("precision = %s, want 1 from the one shipped good event", fmtValue(metric(t, rep, "precision")))
	}

	byReason := map[string]float64{}
	pending := map[string]string{} // data → reason, not yet seen
	for _, b := range bad {
		byReason[b.reason]++
		pending[b.data] = b.reason
	}
	for range bad {
		m := testenv.Next(t, dead)
		want, ok := pending[string(m.Data)]
		if !ok {
			t.Errorf("unexpected dead letter %q (reason %q)", m.Data, m.Header.Get(stream.HeaderReason))
			continue
		}
		delete(pending, string(m.Data))
		if r := m.Header.Get(stream.HeaderReason); !strings.HasPrefix(r, want+":") {
			t.Errorf("dead letter of %s: reason %q, want %s: …", m.Data, r, want)
		}
		if m.Header.Get("X-Test") != want {
			t.Errorf("dead letter of %s lost the original headers: %v", m.Data, m.Header)
		}
		subj := "rag.trace.r"
		if strings.Contains(string(m.Data), `"agent"`) {
			subj = "rag.judgement.r"
		}
		if got := m.Header.Get(stream.HeaderSubject); got != subj {
			t.Errorf("dead letter of %s: %s %q, want %q", m.Data, stream.HeaderSubject, got, subj)
		}
	}
	for data := range pending {
		t.Errorf("no dead letter for %s", data)
	}
	for reason, n := range byReason {
		h.CheckMetric("shadoweval_rejected_events_total", map[string]string{"reason": reason}, n)
	}
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "trace", "arm": "r", "outcome": "rejected"}, float64(len(bad)-1))
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "judgement", "arm": "r", "outcome": "rejected"}, 1)
	// counted once the publish returned, which may be after it arrived
	h.WaitMetric("shadoweval_deadletter_messages_total", map[string]string{"result": "success"}, float64(len(bad)))
}

// TestUnscoredEventsLogged: the first event rejected for each reason, the
// first late one and the first unlabeled one are logged at once with what
// is wrong; the next ones of the same kind are only counted (and summed up
// once a minute, notices_test.go).
func TestUnscoredEventsLogged(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", logs: logs})
	for range 3 {
		h.Publish("rag.trace.r", []byte(`not json at all`))
		h.Publish("rag.trace.r", []byte(`{"answer_json":{"claim":"x"}}`))
		unknown := goodTrace("A1")
		unknown.QID = "Z9"
		h.PublishJSON("rag.trace.r", unknown)
		late := goodTrace("A1")
		late.TS = "2025-08-27T12:30:22Z" // far behind the app's clock
		h.PublishJSON("rag.trace.r", late)
	}
	rep := h.waitEvents("r", map[string]int64{"rejected": 6, "unlabeled": 3, "late": 3})
	// An arm whose events all went unscored still has its counts.
	if rep.Metrics["precision"].Value != nil {
		t.Errorf("precision %v of an arm with no scored event", *rep.Metrics["precision"].Value)
	}
	log := logs.String()
	for _, c := range []struct {
		line string
		want []string
	}{
		{`msg="event rejected`, []string{"reason=invalid_json", "subject=rag.trace.r", "arm=r"}},
		{`msg="event rejected`, []string{"reason=missing_qid"}},
		{`msg="event unlabeled`, []string{"qid=Z9", "arm=r"}},
		{`msg="event late`, []string{"qid=A1", "ts=2025-08-27T12:30:22Z"}},
	} {
		var found []string
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, c.line) && strings.Contains(l, c.want[0]) {
				found = append(found, l)
			}
		}
		if len(found) != 1 {
			t.Errorf("%d log lines with %s %s, want 1:\n%s", len(found), c.line, c.want[0], strings.Join(found, "\n"))
			continue
		}
		for _, w := range c.want[1:] {
			if !strings.Contains(found[0], w) {
				t.Errorf("log line lacks %s: %s", w, found[0])
			}
		}
	}
}
