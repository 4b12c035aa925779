package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/testenv"
)

// replayInput mixes CRLF, LF and lone CR endings with blank and
// white-space-only lines (\x1c is white space to Python's strip()), and has
// no final newline.
const replayInput = "{\"qid\":\"q1\",\"event_id\":\"e1\"}\r\n" +
	"\r\n" +
	"  \t \r\n" +
	"{\"qid\":\"q2\"}\n" +
	"\x1c\n" +
	"  {\"qid\":\"q3\",\"event_id\":\"e3\",\"nested\":{\"event_id\":\"no\"}}  \r" +
	"not json at all\n" +
	"{\"event_id\":7,\"qid\":\"q5\"}\n" +
	"\n" +
	"{\"qid\":\"q6\",\"event_id\":\"e\\u0036\"}"

var replayWant = []struct{ data, id string }{
	{`{"qid":"q1","event_id":"e1"}`, "e1"},
	{`{"qid":"q2"}`, ""},
	{`{"qid":"q3","event_id":"e3","nested":{"event_id":"no"}}`, "e3"},
	{`not json at all`, ""},
	{`{"event_id":7,"qid":"q5"}`, ""},
	{`{"qid":"q6","event_id":"e\u0036"}`, "e6"},
}

func TestReplayFile(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, ">", len(replayWant)+1)
	path := testenv.WriteFile(t, t.TempDir(), "trace.jsonl", []byte(replayInput))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type call struct{ sent, total int }
	var calls []call
	st, err := Replay(context.Background(), nc, f, ReplayOptions{
		Name:     path,
		MsgID:    true,
		Progress: func(sent, total int) { calls = append(calls, call{sent, total}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sent != len(replayWant) || st.WithMsgID != 3 || st.Oversize != 0 {
		t.Fatalf("stats %+v", st)
	}
	// "not json at all", line 7, is sent all the same and counted.
	if st.NotJSON != 1 || st.FirstNotJSONLine != 7 {
		t.Errorf("NotJSON %d, first at line %d; want 1, at line 7", st.NotJSON, st.FirstNotJSONLine)
	}
	var bytes int64
	for i, w := range replayWant {
		m := testenv.Next(t, got)
		if string(m.Data) != w.data || m.Subject != DefaultReplaySubject || MsgID(m.Header) != w.id {
			t.Errorf("message %d: %s %q id %q, want %q id %q", i, m.Subject, m.Data, MsgID(m.Header), w.data, w.id)
		}
		bytes += int64(len(w.data))
	}
	if st.Bytes != bytes {
		t.Errorf("Bytes %d, want %d", st.Bytes, bytes)
	}
	n := len(replayWant)
	if len(calls) < 2 || calls[0] != (call{0, n}) || calls[len(calls)-1] != (call{n, n}) {
		t.Fatalf("progress calls %v", calls)
	}
}

// A reader that cannot seek: total unknown; no Msg-Id unless asked.
func TestReplayStreamNoMsgID(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, "rag.trace.canary", len(replayWant))
	var totals []int
	st, err := Replay(context.Background(), nc, io.MultiReader(strings.NewReader(replayInput)), ReplayOptions{
		Subject:  "rag.trace.canary",
		Progress: func(_, total int) { totals = append(totals, total) },
	})
	if err != nil || st.Sent != len(replayWant) || st.WithMsgID != 0 {
		t.Fatalf("stats %+v err %v", st, err)
	}
	for i := range replayWant {
		if m := testenv.Next(t, got); string(m.Data) != replayWant[i].data || m.Header != nil {
			t.Fatalf("message %d: %q headers %v", i, m.Data, m.Header)
		}
	}
	for _, total := range totals {
		if total != -1 {
			t.Fatalf("total %d for a stream, want -1", total)
		}
	}
}

// Many lines across several 1 MiB read blocks arrive complete and in order.
func TestReplayLargeInOrder(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	const n = 30000
	var buf bytes.Buffer
	pad := strings.Repeat("p", 60)
	for i := range n {
		fmt.Fprintf(&buf, "{\"qid\":\"q%d\",\"event_id\":\"e%d\",\"pad\":%q}\r\n", i, i, pad)
		if i%7 == 0 {
			buf.WriteString("\r\n")
		}
	}
	got := testenv.Collect(t, nc, "in.order", n)
	st, err := Replay(context.Background(), nc, bytes.NewReader(buf.Bytes()), ReplayOptions{Subject: "in.order", MsgID: true})
	if err != nil || st.Sent != n || st.WithMsgID != n {
		t.Fatalf("stats %+v err %v", st, err)
	}
	for i := range n {
		m := testenv.Next(t, got)
		if id := MsgID(m.Header); id != fmt.Sprintf("e%d", i) {
			t.Fatalf("message %d has id %q", i, id)
		}
	}
}

func TestReplayRate(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	const n, rate = 101, 2000.0
	input := strings.Repeat("{}\n", n)
	st, err := Replay(context.Background(), nc, strings.NewReader(input), ReplayOptions{Rate: rate})
	if err != nil || st.Sent != n {
		t.Fatalf("stats %+v err %v", st, err)
	}
	// Message i leaves no earlier than i/rate after the first.
	if min := time.Duration(float64(n-1) / rate * float64(time.Second)); st.Elapsed < min {
		t.Fatalf("%d messages at %v/s took %v, want at least %v", n, rate, st.Elapsed, min)
	}
	if _, err := Replay(context.Background(), nc, strings.NewReader(input), ReplayOptions{Rate: -1}); err == nil {
		t.Fatal("negative rate accepted")
	}
}

func TestReplayCancel(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	ctx, cancel := context.WithCancel(context.Background())
	sent := 0
	// Cancel from the progress callback after the first call; at 1 msg/s
	// the replay is then waiting for the second message.
	st, err := Replay(ctx, nc, strings.NewReader(strings.Repeat("{}\n", 100)), ReplayOptions{
		Rate: 1,
		Progress: func(s, _ int) {
			sent = s
			cancel()
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if st.Sent > 1 || sent > 1 {
		t.Fatalf("sent %d after cancel", st.Sent)
	}
}

func TestReplayOversize(t *testing.T) {
	opts := testenv.Options()
	opts.MaxPayload = 512
	s := testenv.RunServer(t, opts)
	nc := testenv.Connect(t, s.ClientURL())
	got := testenv.Collect(t, nc, DefaultReplaySubject, 4)
	big := `{"qid":"big","pad":"` + strings.Repeat("x", 600) + `"}`
	input := "{\"qid\":\"a\"}\n" + big + "\n{\"qid\":\"b\"}\n"
	st, err := Replay(context.Background(), nc, strings.NewReader(input), ReplayOptions{})
	if err != nil || st.Sent != 2 || st.Oversize != 1 || st.FirstOversizeLine != 2 {
		t.Fatalf("stats %+v err %v", st, err)
	}
	for _, want := range []string{`{"qid":"a"}`, `{"qid":"b"}`} {
		if m := testenv.Next(t, got); string(m.Data) != want {
			t.Fatalf("got %q want %q", m.Data, want)
		}
	}
}

// Replaying the same file twice into a JetStream stream stores each event
// once: the Nats-Msg-Id header de-duplicates.
func TestReplayJetStreamDedup(t *testing.T) {
	e, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	nc := testenv.Connect(t, e.ClientURL())
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "RAG", Subjects: []string{"rag.>"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	input := "{\"qid\":\"q1\",\"event_id\":\"e1\"}\n{\"qid\":\"q2\",\"event_id\":\"e2\"}\n{\"qid\":\"q3\"}\n"
	for range 2 {
		if _, err := Replay(context.Background(), nc, strings.NewReader(input), ReplayOptions{MsgID: true}); err != nil {
			t.Fatal(err)
		}
	}
	// An acknowledged publish is stored after everything published before
	// it on this connection.
	if _, err := js.Publish("rag.trace.live", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	info, err := js.StreamInfo("RAG")
	if err != nil {
		t.Fatal(err)
	}
	// e1, e2 once; q3 (no id) twice; the sentinel.
	if info.State.Msgs != 5 {
		t.Fatalf("stream holds %d messages, want 5", info.State.Msgs)
	}
}

// With PartitionKey "qid" each line goes to <subject>.<key of its qid>;
// a line without a qid goes to the subject itself and is counted.
func TestReplayPartitionKey(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	input := strings.Join([]string{
		`{"qid":"A0001","event_id":"e1"}`,
		`{"qid":"a.b c"}`,
		`{"q_id":"A0002"}`,
		`{"qid":"","q_id":"A0003"}`,
		`{"qid":5}`,
		`{"q":"where is the qid?"}`,
		`not json`,
		`{"qid":"A0001","event_id":"e2"}`,
	}, "\n")
	want := []struct{ subject, data string }{
		{"rag.trace.canary.A0001", `{"qid":"A0001","event_id":"e1"}`},
		{"rag.trace.canary." + PartitionKey("a.b c"), `{"qid":"a.b c"}`},
		{"rag.trace.canary.A0002", `{"q_id":"A0002"}`},
		{"rag.trace.canary.A0003", `{"qid":"","q_id":"A0003"}`},
		{"rag.trace.canary", `{"qid":5}`},
		{"rag.trace.canary", `{"q":"where is the qid?"}`},
		{"rag.trace.canary", `not json`},
		{"rag.trace.canary.A0001", `{"qid":"A0001","event_id":"e2"}`},
	}
	got := testenv.Collect(t, nc, "rag.trace.>", len(want)+1)
	st, err := Replay(context.Background(), nc, strings.NewReader(input), ReplayOptions{
		Subject: "rag.trace.canary", MsgID: true, PartitionKey: PartitionKeyQID,
	})
	if err != nil || st.Sent != len(want) || st.Unkeyed != 3 || st.WithMsgID != 2 {
		t.Fatalf("stats %+v err %v", st, err)
	}
	for i, w := range want {
		if m := testenv.Next(t, got); m.Subject != w.subject || string(m.Data) != w.data {
			t.Errorf("message %d: %s %s, want %s %s", i, m.Subject, m.Data, w.subject, w.data)
		}
	}
	if k := PartitionKey("a.b c"); !strings.HasPrefix(k, "h") || len(k) != 17 {
		t.Errorf("key of a qid with '.' and ' ' is %q, want the hash form", k)
	}
}

// Without a partition key every line goes to the subject as it is, and
// none is counted as unkeyed; an unknown key is refused before sending.
func TestReplayPartitionKeyOff(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, ">", 3)
	st, err := Replay(context.Background(), nc, strings.NewReader("{\"qid\":\"A1\"}\n{}\n"), ReplayOptions{Subject: "rag.trace.live"})
	if err != nil || st.Sent != 2 || st.Unkeyed != 0 {
		t.Fatalf("stats %+v err %v", st, err)
	}
	for range 2 {
		if m := testenv.Next(t, got); m.Subject != "rag.trace.live" {
			t.Fatalf("subject %s, want rag.trace.live", m.Subject)
		}
	}
	st, err = Replay(context.Background(), nc, strings.NewReader("{\"qid\":\"A1\"}\n"), ReplayOptions{PartitionKey: "event_id"})
	if err == nil || !strings.Contains(err.Error(), `"event_id"`) || st.Sent != 0 {
		t.Fatalf("partition key event_id: stats %+v err %v", st, err)
	}
	testenv.Flush(t, nc)
	select {
	case m := <-got:
		t.Fatalf("refused replay sent %s %s", m.Subject, m.Data)
	default:
	}
}

func TestTopLevelString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"event_id":"a"}`, "a"},
		{`{"x":{"event_id":"no"},"event_id":"yes"}`, "yes"},
		{`{"x":[1,{"event_id":"no"}]}`, ""},
		{`{"event_id":null}`, ""},
		{`{"event_id":1}`, ""},
		{`["event_id","a"]`, ""},
		{`{"event_id":"a\"b"}`, `a"b`},
		{`{"a":1,"event_id":"x"`, "x"},
		{`{"a":`, ""},
		{``, ""},
		{`not json`, ""},
	} {
		if got := topLevelString([]byte(tc.in), "event_id"); got != tc.want {
			t.Errorf("topLevelString(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Where a JetStream stream stores the subject, every message must be
// confirmed by it: a replay into a stream that takes them all says which
// stream stored them; one into a stream that refuses some (here, full
// with discard new, as a stream is whose leader is gone) publishes those
// again, then counts them and fails with ErrNotStored.
func TestReplayConfirmedByStream(t *testing.T) {
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, 30*time.Second)
	var input strings.Builder
	for i := range 10 {
		fmt.Fprintf(&input, `{"qid":"A%d","event_id":"e%d"}`+"\n", i, i)
	}
	all := testenv.CreateStream(t, js, jetstream.StreamConfig{Name: "ALL", Subjects: []string{"rag.trace.>"}})
	st, err := Replay(ctx, nc, strings.NewReader(input.String()), ReplayOptions{Subject: "rag.trace.live", MsgID: true})
	if err != nil || st.Stream != "ALL" || st.Sent != 10 || st.NotStored != 0 {
		t.Fatalf("into ALL: stats %+v err %v", st, err)
	}
	if info, err := all.Info(ctx); err != nil {
		t.Fatal(err)
	} else if info.State.Msgs != 10 {
		t.Fatalf("ALL holds %d messages, want 10", info.State.Msgs)
	}
	full := testenv.CreateStream(t, js, jetstream.StreamConfig{Name: "FULL", Subjects: []string{"rag.answer.>"}, MaxMsgs: 4, Discard: jetstream.DiscardNew})
	st, err = Replay(ctx, nc, strings.NewReader(input.String()), ReplayOptions{Subject: "rag.answer.live", MsgID: true})
	if !errors.Is(err, ErrNotStored) || st.Stream != "FULL" || st.Sent != 10 || st.NotStored != 6 || !strings.Contains(err.Error(), "6 of 10 messages not stored by stream FULL") {
		t.Fatalf("into FULL: stats %+v err %v", st, err)
	}
	if info, err := full.Info(ctx); err != nil {
		t.Fatal(err)
	} else if info.State.Msgs != 4 {
		t.Fatalf("FULL holds %d messages, want 4", info.State.Msgs)
	}
}
