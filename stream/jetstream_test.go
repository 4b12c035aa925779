package stream

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"rag.trace.>", "rag.trace.live", true},
		{"rag.trace.>", "rag.trace.a.b", true},
		{"rag.trace.>", "rag.trace", false},
		{"rag.trace.>", "rag.retrieval.live", false},
		{"rag.*.live", "rag.answer.live", true},
		{"rag.*.live", "rag.answer.canary", false},
		{"rag.*", "rag.answer.live", false},
		{"rag.trace.live", "rag.trace.live", true},
		{"rag.trace.live", "rag.trace.liv", false},
		{"rag.trace.live", "rag.trace.live.x", false},
		{">", "a", true},
		{"*", "a.b", false},
	} {
		if got := SubjectMatches(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("SubjectMatches(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

// FuzzSubjectMatches compares SubjectMatches with the server's own matcher
// on valid subjects and patterns.
func FuzzSubjectMatches(f *testing.F) {
	f.Add("rag.trace.>", "rag.trace.live")
	f.Add("rag.*.live", "rag.answer.live")
	f.Add("a.b", "a.b.c")
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		if !server.IsValidSubject(pattern) || !server.IsValidPublishSubject(subject) {
			return
		}
		for _, tok := range strings.Split(pattern, ".") {
			if tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>") {
				return // "*00": the server's matchers disagree among themselves
			}
		}
		if got, want := SubjectMatches(pattern, subject), server.SubjectMatchesFilter(subject, pattern); got != want {
			t.Fatalf("SubjectMatches(%q, %q) = %v, the server says %v", pattern, subject, got, want)
		}
	})
}

var jsSubjects = map[wire.Kind]string{
	wire.KindTrace: "rag.trace.>", wire.KindRetrieval: "rag.retrieval.>",
	wire.KindAnswer: "rag.answer.>", wire.KindJudgement: "rag.judgement.>",
}

// TestConsumeJetStream: the stream is created with the input subjects; the
// consumer replays from its start time, in stream order, with the kind,
// stored time and sequence of each message; a message is acked only once
// the handler returned; a second ConsumeJetStream replaces the consumer and
// replays again.
func TestConsumeJetStream(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, testenv.Timeout)

	handle, got, release := holdingFirst(16)
	opt := JetStreamOptions{Stream: "RAG", Durable: "d", Subjects: jsSubjects, StartTime: time.Now().Add(-time.Hour), MaxAge: 2 * time.Hour}
	sub, err := ConsumeJetStream(ctx, nc, opt, handle)
	if err != nil {
		t.Fatal(err)
	}
	str, err := js.Stream(ctx, "RAG")
	if err != nil {
		t.Fatal(err)
	}
	if info := str.CachedInfo(); strings.Join(info.Config.Subjects, " ") != "rag.trace.> rag.retrieval.> rag.answer.> rag.judgement.>" ||
		info.Config.Storage != jetstream.FileStorage || info.Config.MaxAge != 2*time.Hour {
		t.Errorf("stream config: %+v", info.Config)
	}
	subjects := []string{"rag.answer.live", "rag.trace.canary", "rag.judgement.x", "other.subject"}
	for _, s := range subjects[:3] {
		if _, err := js.Publish(ctx, s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, subjects[3], nil); err == nil {
		t.Error("a subject outside the stream was stored")
	}
	first := testenv.Next(t, got)
	cons, err := str.Consumer(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	// Held in the handler: delivered, not acked.
	if info, err := cons.Info(ctx); err != nil || info.AckFloor.Stream != 0 || info.NumAckPending == 0 {
		t.Errorf("while the handler runs: ack floor %d, ack pending %d (%v); want 0 and > 0", info.AckFloor.Stream, info.NumAckPending, err)
	}
	close(release)
	msgs := []*Message{first, testenv.Next(t, got), testenv.Next(t, got)}
	for i, m := range msgs {
		want := []wire.Kind{wire.KindAnswer, wire.KindTrace, wire.KindJudgement}[i]
		if m.Kind != want || m.Subject != subjects[i] || string(m.Data) != subjects[i] || m.Seq != uint64(i+1) ||
			m.Delivered != 1 || m.Stored.IsZero() || !m.Received.Equal(m.Stored) || m.Replayed {
			t.Errorf("message %d: %+v, want kind %v, seq %d", i, m, want, i+1)
		}
	}
	waitAckFloor(t, cons, 3)
	if sub.Pending() != 0 || sub.Behind() || sub.Redeliveries() != 0 {
		t.Errorf("pending %d, behind %v, redeliveries %d", sub.Pending(), sub.Behind(), sub.Redeliveries())
	}
	if err := sub.Drain(ctx); err != nil {
		t.Fatal(err)
	}

	// Again, from the second message's stored time: the consumer is
	// replaced and replays from there, every message marked as acked by
	// the consumer it replaced; a new one is not.
	opt.StartTime = msgs[1].Stored
	sub2, err := ConsumeJetStream(ctx, nc, opt, func(m *Message) { got <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Drain(ctx)
	for _, want := range msgs[1:] {
		if m := testenv.Next(t, got); m.Seq != want.Seq || m.Delivered != 1 || !m.Replayed {
			t.Errorf("replay: seq %d delivered %d replayed %v, want seq %d, delivered 1, replayed", m.Seq, m.Delivered, m.Replayed, want.Seq)
		}
	}
	if _, err := js.Publish(ctx, "rag.trace.new", nil); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Next(t, got); m.Seq != 4 || m.Replayed {
		t.Errorf("new message: seq %d replayed %v, want 4, not replayed", m.Seq, m.Replayed)
	}
	if names := consumerNames(t, str); names != "d" {
		t.Errorf("consumers: %s, want only d", names)
	}
}

// TestConsumeJetStreamRedelivery: a message whose ack does not come within
// AckWait is delivered again, counted as a redelivery and acked without
// being handled twice.
func TestConsumeJetStreamRedelivery(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, 3*testenv.Timeout)
	release := make(chan struct{})
	got := make(chan *Message, 4)
	var once sync.Once
	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{
		Stream: "RAG", Durable: "d", Subjects: jsSubjects, StartTime: time.Now().Add(-time.Minute), AckWait: 200 * time.Millisecond,
	}, func(m *Message) {
		got <- m
		once.Do(func() { <-release })
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Drain(ctx)
	if _, err := js.Publish(ctx, "rag.trace.live", []byte("x")); err != nil {
		t.Fatal(err)
	}
	testenv.Next(t, got)
	cons, err := js.Consumer(ctx, "RAG", "d")
	if err != nil {
		t.Fatal(err)
	}
	// Hold the handler until the server has given up waiting for the ack.
	testenv.Poll(t, 3*testenv.Timeout, "the server to redeliver", func() string {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered == 0 {
			return "nothing redelivered"
		}
		return ""
	})
	close(release)
	waitAckFloor(t, cons, 1)
	testenv.Poll(t, testenv.Timeout, "the redelivery to be counted", func() string {
		if n := sub.Redeliveries(); n == 0 {
			return "none counted"
		}
		return ""
	})
	// A message after it is handled: the redelivery was not.
	if _, err := js.Publish(ctx, "rag.trace.live", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Next(t, got); m.Seq != 2 || m.Delivered != 1 {
		t.Errorf("after the redelivery the handler got seq %d delivered %d, want seq 2 delivered 1", m.Seq, m.Delivered)
	}
}

// TestConsumeJetStreamExistingStream: an existing stream is used as it is,
// and overlapping or missing subjects make a clear error.
func TestConsumeJetStreamExistingStream(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, testenv.Timeout)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OPS", Subjects: []string{"rag.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "OPS", Durable: "d", Subjects: jsSubjects, StartTime: time.Now()}, func(*Message) {})
	if err != nil {
		t.Fatal(err)
	}
	sub.Drain(ctx)
	if info, _ := js.Stream(ctx, "OPS"); info.CachedInfo().Config.Storage != jetstream.MemoryStorage {
		t.Error("an existing stream was changed")
	}
	_, err = ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "OPS", Durable: "d", Subjects: map[wire.Kind]string{wire.KindTrace: "rag.>", wire.KindAnswer: "rag.answer.>"}, StartTime: time.Now()}, func(*Message) {})
	if err == nil || !strings.Contains(err.Error(), "consumer d") {
		t.Errorf("overlapping subjects: %v", err)
	}
	if _, err := ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "OPS", Durable: "d", Subjects: map[wire.Kind]string{wire.KindTrace: ""}}, func(*Message) {}); err == nil {
		t.Error("no subject: no error")
	}
}

func waitAckFloor(t *testing.T, cons jetstream.Consumer, seq uint64) {
	t.Helper()
	ctx := testenv.Context(t, testenv.Timeout)
	testenv.Poll(t, testenv.Timeout, fmt.Sprintf("ack floor %d, nothing pending", seq), func() string {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatalf("consumer info: %v", err)
		}
		if info.AckFloor.Stream < seq || info.NumAckPending != 0 {
			return fmt.Sprintf("ack floor %d, ack pending %d", info.AckFloor.Stream, info.NumAckPending)
		}
		return ""
	})
}

func consumerNames(t *testing.T, str jetstream.Stream) string {
	t.Helper()
	ctx := testenv.Context(t, testenv.Timeout)
	var names []string
	l := str.ConsumerNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, ",")
}

// holdingFirst is a handler that sends each message to got, holding the
// first one in the handler until release is closed.
func holdingFirst(capacity int) (handle func(*Message), got chan *Message, release chan struct{}) {
	got, release = make(chan *Message, capacity), make(chan struct{})
	var once sync.Once
	return func(m *Message) {
		got <- m
		once.Do(func() { <-release })
	}, got, release
}

// TestConsumeJetStreamLag: while messages wait, Lag is the time since the
// server stored the oldest one not applied (read by Refresh); once none
// waits, 0.
func TestConsumeJetStreamLag(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, testenv.Timeout)
	handle, got, release := holdingFirst(4)
	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "RAG", Durable: "d", Subjects: jsSubjects, StartTime: time.Now().Add(-time.Minute)}, handle)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Drain(ctx)
	if sub.Lag(time.Now()) != 0 {
		t.Errorf("Lag of an empty stream = %v", sub.Lag(time.Now()))
	}
	for range 3 {
		if _, err := js.Publish(ctx, "rag.trace.live", nil); err != nil {
			t.Fatal(err)
		}
	}
	first := testenv.Next(t, got)
	if err := sub.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// Held in the handler, the first message is not applied yet.
	if l := sub.Lag(first.Stored.Add(5 * time.Second)); l != 5*time.Second {
		t.Errorf("Lag 5 s after the first message was stored = %v", l)
	}
	close(release)
	testenv.Next(t, got)
	testenv.Next(t, got)
	testenv.Poll(t, testenv.Timeout, "nothing pending", func() string {
		if err := sub.Refresh(ctx); err != nil {
			return err.Error()
		}
		if l := sub.Lag(time.Now()); l != 0 {
			return fmt.Sprint("lag ", l)
		}
		return ""
	})
}

func TestLag(t *testing.T) {
	at := func(s int64) int64 { return time.Unix(s, 0).UnixNano() }
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		name                string
		applied, nextSeq    uint64
		nextStored, lastRef int64
		want                time.Duration
	}{
		{"the next message read", 4, 5, at(90), at(80), 10 * time.Second},
		{"the next message applied since", 6, 5, at(90), at(95), 5 * time.Second},
		{"nothing read yet", 0, 0, 0, at(97), 3 * time.Second},
		{"nothing at all", 0, 0, 0, 0, 0},
		{"stored after now", 4, 5, at(101), 0, 0},
	} {
		if got := lag(now, tc.applied, tc.nextSeq, tc.nextStored, tc.lastRef); got != tc.want {
			t.Errorf("%s: lag = %v, want %v", tc.name, got, tc.want)
		}
	}
}
