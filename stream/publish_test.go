package stream

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

func TestDeadLetter(t *testing.T) {
	opts := testenv.Options()
	opts.MaxPayload = 1024
	s := testenv.RunServer(t, opts)
	nc := testenv.Connect(t, s.ClientURL())
	dl := testenv.Collect(t, nc, "shadoweval.deadletter", 8)
	p := NewPublisher(nc)

	long := bytes.Repeat([]byte("x"), 2000)
	for _, tc := range []struct {
		name      string
		msg       *Message
		reason    string
		truncated bool
		keepHdrs  bool
	}{
		{
			name:     "small with headers",
			msg:      &Message{Kind: wire.KindTrace, Subject: "rag.trace.live", Data: []byte(`{"qid":1}`), Header: nats.Header{"traceparent": {"tp"}, nats.MsgIdHdr: {"e1"}}},
			reason:   "field qid: want a string, got a number",
			keepHdrs: true,
		},
		{
			name:   "no headers, reason with newline",
			msg:    &Message{Kind: wire.KindAnswer, Subject: "rag.answer.canary", Data: []byte("not json")},
			reason: "invalid JSON\nat byte 0",
		},
		{
			name:      "oversize data",
			msg:       &Message{Kind: wire.KindTrace, Subject: "rag.trace.live", Data: long, Header: nats.Header{"traceparent": {"tp"}}},
			reason:    "over-size message",
			truncated: true,
			keepHdrs:  true,
		},
		{
			name:      "headers alone too big",
			msg:       &Message{Kind: wire.KindTrace, Subject: "rag.trace.live", Data: long, Header: nats.Header{"Big": {strings.Repeat("h", 1500)}}},
			reason:    strings.Repeat("r", 5000),
			truncated: true,
		},
	} {
		if err := p.DeadLetter("shadoweval.deadletter", tc.msg, tc.reason); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := testenv.Next(t, dl)
		if got := m.Header.Get(HeaderSubject); got != tc.msg.Subject {
			t.Errorf("%s: %s = %q", tc.name, HeaderSubject, got)
		}
		wantReason := strings.ReplaceAll(tc.reason, "\n", " ")
		if len(wantReason) > maxReasonLen {
			wantReason = wantReason[:maxReasonLen]
		}
		if got := m.Header.Get(HeaderReason); got != wantReason && !(tc.truncated && !tc.keepHdrs && strings.HasPrefix(wantReason, got)) {
			t.Errorf("%s: %s = %q, want %q", tc.name, HeaderReason, got, wantReason)
		}
		if tc.truncated {
			if m.Header.Get(HeaderTruncated) != "true" {
				t.Errorf("%s: no %s header", tc.name, HeaderTruncated)
			}
			if !bytes.HasPrefix(tc.msg.Data, m.Data) || len(m.Data) >= len(tc.msg.Data) {
				t.Errorf("%s: data is not a strict prefix (%d of %d bytes)", tc.name, len(m.Data), len(tc.msg.Data))
			}
			if size := headerSize(m.Header) + len(m.Data); size != int(nc.MaxPayload()) {
				t.Errorf("%s: truncated message is %d bytes, want exactly the max payload %d", tc.name, size, nc.MaxPayload())
			}
		} else {
			if m.Header.Get(HeaderTruncated) != "" {
				t.Errorf("%s: unexpected %s", tc.name, HeaderTruncated)
			}
			if !bytes.Equal(m.Data, tc.msg.Data) {
				t.Errorf("%s: data %q, want %q", tc.name, m.Data, tc.msg.Data)
			}
		}
		for k, vs := range tc.msg.Header {
			if got := m.Header.Get(k); tc.keepHdrs && got != vs[0] {
				t.Errorf("%s: original header %s = %q, want %q", tc.name, k, got, vs[0])
			} else if !tc.keepHdrs && got != "" {
				t.Errorf("%s: original header %s kept although too big", tc.name, k)
			}
		}
	}
	// The original message's header map is not modified.
	h := nats.Header{"A": {"1"}}
	if err := p.DeadLetter("shadoweval.deadletter", &Message{Subject: "s", Header: h}, "r"); err != nil {
		t.Fatal(err)
	}
	testenv.Next(t, dl)
	if len(h) != 1 {
		t.Fatalf("original header changed: %v", h)
	}
	if err := p.DeadLetter("shadoweval.deadletter", nil, "r"); err == nil {
		t.Fatal("nil message accepted")
	}
}

func TestPublishJSON(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, "shadoweval.verdicts.>", 1)
	type verdict struct {
		Verdict string    `json:"verdict"`
		Arm     string    `json:"arm"`
		Gates   []string  `json:"gates"`
		At      time.Time `json:"at"`
	}
	v := verdict{Verdict: "pass", Arm: "canary", At: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := NewPublisher(nc).PublishJSON("shadoweval.verdicts.canary", v); err != nil {
		t.Fatal(err)
	}
	m := testenv.Next(t, got)
	const want = `{"verdict":"pass","arm":"canary","gates":[],"at":"2025-01-02T03:04:05Z"}`
	if string(m.Data) != want {
		t.Fatalf("got %s\nwant %s", m.Data, want)
	}
	var back verdict
	if err := json.Unmarshal(m.Data, &back); err != nil || back.Arm != "canary" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if err := NewPublisher(nc).PublishJSON("x", func() {}); err == nil {
		t.Fatal("marshalling a func succeeded")
	}
}
