package stream

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

func TestArmFromSubject(t *testing.T) {
	for _, tc := range []struct{ subject, arm string }{
		{"rag.trace.live", "live"},
		{"rag.retrieval.canary", "canary"},
		{"rag.answer.shadow-2", "shadow-2"},
		{"a.b", "b"},
		{"rag", ""},
		{"", ""},
		{"rag.trace.*", ""},
		{"rag.trace.>", ""},
		{"rag.trace.", ""},
	} {
		if got := ArmFromSubject(tc.subject); got != tc.arm {
			t.Errorf("ArmFromSubject(%q) = %q, want %q", tc.subject, got, tc.arm)
		}
	}
}

func TestHeaders(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name   string
		h      nats.Header
		tp, id string
	}{
		{"nil", nil, "", ""},
		{"lower", nats.Header{"traceparent": {tp}}, tp, ""},
		{"canonical", nats.Header{"Traceparent": {tp}}, tp, ""},
		{"upper", nats.Header{"TRACEPARENT": {tp}, nats.MsgIdHdr: {"e1"}}, tp, "e1"},
		{"empty values", nats.Header{"Traceparent": {}}, "", ""},
		{"msg id exact only", nats.Header{"nats-msg-id": {"e1"}}, "", ""},
	} {
		if got := Traceparent(tc.h); got != tc.tp {
			t.Errorf("%s: Traceparent = %q, want %q", tc.name, got, tc.tp)
		}
		if got := MsgID(tc.h); got != tc.id {
			t.Errorf("%s: MsgID = %q, want %q", tc.name, got, tc.id)
		}
	}
}

func TestKindString(t *testing.T) {
	want := [wire.NumKinds]string{"trace", "retrieval", "answer", "judgement"}
	for k := wire.Kind(0); k < wire.NumKinds; k++ {
		if k.String() != want[k] {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want[k])
		}
	}
	if wire.Kind(9).String() != "Kind(9)" {
		t.Errorf("unknown kind: %q", wire.Kind(9).String())
	}
}

var testSubjects = map[wire.Kind]string{
	wire.KindTrace:     "rag.trace.>",
	wire.KindRetrieval: "rag.retrieval.>",
	wire.KindAnswer:    "rag.answer.>",
	wire.KindJudgement: "rag.judgement.>",
}

func TestSubscribeKinds(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	got := make(chan *Message, 16)
	sub := mustSubscribe(t, nc, testSubjects, 1, 0, 0, func(m *Message) { c := *m; got <- &c })
	defer sub.Unsubscribe()
	pub := testenv.Connect(t, s.ClientURL())
	for _, tc := range []struct {
		subject string
		kind    wire.Kind
		arm     string
	}{
		{"rag.trace.live", wire.KindTrace, "live"},
		{"rag.retrieval.canary", wire.KindRetrieval, "canary"},
		{"rag.answer.canary", wire.KindAnswer, "canary"},
		{"rag.judgement.shadow", wire.KindJudgement, "shadow"},
	} {
		before := time.Now()
		h := nats.Header{"traceparent": {"tp-" + tc.arm}, nats.MsgIdHdr: {"id-" + tc.subject}}
		if err := pub.PublishMsg(&nats.Msg{Subject: tc.subject, Data: []byte(tc.subject), Header: h}); err != nil {
			t.Fatal(err)
		}
		m := testenv.Next(t, got)
		if m.Kind != tc.kind || m.Subject != tc.subject || string(m.Data) != tc.subject {
			t.Errorf("%s: got kind %s subject %s data %s", tc.subject, m.Kind, m.Subject, m.Data)
		}
		if ArmFromSubject(m.Subject) != tc.arm {
			t.Errorf("%s: arm %q", tc.subject, ArmFromSubject(m.Subject))
		}
		if Traceparent(m.Header) != "tp-"+tc.arm || MsgID(m.Header) != "id-"+tc.subject {
			t.Errorf("%s: headers %v", tc.subject, m.Header)
		}
		if m.Received.Before(before) {
			t.Errorf("%s: Received %v before publish %v", tc.subject, m.Received, before)
		}
	}
	// Not subscribed: nothing arrives. A later message proves the order.
	if err := pub.Publish("rag.other.live", nil); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("rag.trace.last", nil); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Next(t, got); m.Subject != "rag.trace.last" {
		t.Fatalf("got %s, want rag.trace.last", m.Subject)
	}
}

func TestSubscribeOnlySomeKinds(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	if _, err := Subscribe(nc, nil, 1, 0, 0, func(*Message) {}); err == nil {
		t.Fatal("no subjects accepted")
	}
	if _, err := Subscribe(nc, map[wire.Kind]string{wire.KindTrace: ""}, 1, 0, 0, func(*Message) {}); err == nil {
		t.Fatal("only empty subjects accepted")
	}
	if _, err := Subscribe(nc, map[wire.Kind]string{wire.KindTrace: "bad subject"}, 1, 0, 0, func(*Message) {}); err == nil {
		t.Fatal("bad subject accepted")
	}
	sub, err := Subscribe(nc, map[wire.Kind]string{wire.KindTrace: "t.>", wire.KindAnswer: ""}, 1, 0, 0, func(*Message) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.subs) != 1 {
		t.Fatalf("%d subscriptions, want 1", len(sub.subs))
	}
}

// A handler that blocks makes the client drop beyond the pending limit;
// Dropped counts it and OnSlowConsumer names the subject. The limit is the
// kind's, shared by its workers: two workers hold no more than one.
func TestSubscribeSlowConsumer(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { testSlowConsumer(t, workers) })
	}
}

func testSlowConsumer(t *testing.T, workers int) {
	s := testenv.RunBasic(t)
	slow := make(chan string, 4)
	nc, err := Connect(context.Background(), ConnOptions{
		URL:            s.ClientURL(),
		OnSlowConsumer: func(subject string) { slow <- subject },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	release := make(chan struct{})
	var handled atomic.Int64
	sub := mustSubscribe(t, nc, map[wire.Kind]string{wire.KindRetrieval: "rag.retrieval.>"}, workers, 10, 1<<20, func(*Message) {
		<-release
		handled.Add(1)
	})
	const n = 100
	publishEach(t, testenv.Connect(t, s.ClientURL()), n, func(i int) (string, []byte) {
		return "rag.retrieval.live", fmt.Appendf(nil, "%d", i)
	})
	if subj := testenv.Next(t, slow); subj != "rag.retrieval.>" {
		t.Fatalf("slow consumer on %q", subj)
	}
	// The server has sent everything once a round trip on nc completes.
	testenv.Flush(t, nc)
	dropped := sub.Dropped()
	// One message is in each worker's handler, at most 10 wait in all.
	if dropped < uint64(n-10-workers) || dropped > n-1 {
		t.Fatalf("dropped %d of %d with a limit of 10 and %d workers", dropped, n, workers)
	}
	close(release)
	if err := sub.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := uint64(handled.Load()) + dropped; got != n {
		t.Fatalf("handled %d + dropped %d != %d", handled.Load(), dropped, n)
	}
	if sub.Dropped() != dropped {
		t.Fatalf("Dropped after Drain = %d, want %d", sub.Dropped(), dropped)
	}
}

func TestSubscribeDrainDeliversPending(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { testDrainDeliversPending(t, workers) })
	}
}

func testDrainDeliversPending(t *testing.T, workers int) {
	_, nc := testenv.RunConnected(t)
	gate := make(chan struct{})
	var handled atomic.Int64
	sub := mustSubscribe(t, nc, testSubjects, workers, -1, -1, func(*Message) {
		<-gate
		handled.Add(1)
	})
	const n = 500
	// all n are in the client once publishEach returns
	publishEach(t, nc, n, func(i int) (string, []byte) {
		return [...]string{"rag.trace.a", "rag.retrieval.a", "rag.answer.a", "rag.judgement.a"}[i%4], nil
	})
	close(gate)
	if err := sub.Drain(testenv.Context(t, testenv.Timeout)); err != nil {
		t.Fatal(err)
	}
	if handled.Load() != n {
		t.Fatalf("handled %d of %d before Drain returned", handled.Load(), n)
	}
	if sub.Dropped() != 0 {
		t.Fatalf("dropped %d with no limits", sub.Dropped())
	}
}

func TestSubscribeDrainTimeout(t *testing.T) {
	_, nc := testenv.RunConnected(t)
	gate := make(chan struct{})
	defer close(gate)
	sub := mustSubscribe(t, nc, map[wire.Kind]string{wire.KindTrace: "x"}, 1, 0, 0, func(*Message) { <-gate })
	testenv.Publish(t, nc, "x", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sub.Drain(ctx); err == nil {
		t.Fatal("Drain with a blocked handler and a done context returned nil")
	}
}

// TestSubscribeWorkers: with workers > 1 every message of a kind is
// handled exactly once, by one of that kind's goroutines, and a second
// Subscribe (another replica) still receives every message.
func TestSubscribeWorkers(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	const workers, n = 3, 600
	type seen struct {
		mu      sync.Mutex
		ids     map[string]int
		workers map[int]int
		all     chan struct{} // closed at the n-th distinct message
		sub     *Subscription
	}
	subscribe := func() *seen {
		r := &seen{ids: map[string]int{}, workers: map[int]int{}, all: make(chan struct{})}
		var err error
		r.sub, err = Subscribe(nc, testSubjects, workers, -1, -1, func(m *Message) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ids[string(m.Data)]++
			r.workers[m.Worker]++
			if len(r.ids) == n && r.ids[string(m.Data)] == 1 {
				close(r.all)
			}
			if lo := int(m.Kind) * workers; m.Worker < lo || m.Worker >= lo+workers || m.Worker >= Workers(workers) {
				t.Errorf("a %s message from worker %d, want %d..%d", m.Kind, m.Worker, lo, lo+workers-1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.sub.Unsubscribe() })
		return r
	}
	a, b := subscribe(), subscribe()
	testenv.Flush(t, nc)
	publishEach(t, testenv.Connect(t, s.ClientURL()), n, func(i int) (string, []byte) {
		return [...]string{"rag.trace.a", "rag.answer.a"}[i%2], []byte(strconv.Itoa(i))
	})
	for _, r := range []*seen{a, b} {
		testenv.Next(t, r.all)
		// Whatever else the client holds is handled before Drain returns.
		if err := r.sub.Drain(testenv.Context(t, testenv.Timeout)); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		for id, c := range r.ids {
			if c != 1 {
				t.Errorf("message %s handled %d times", id, c)
			}
		}
		// The server spreads a queue group at random: 300 messages of a
		// kind all on one of 3 members has odds of 3^-299.
		if len(r.workers) < 4 {
			t.Errorf("messages went to workers %v, want several per kind", r.workers)
		}
		r.mu.Unlock()
	}
}

// mustSubscribe is Subscribe that fails the test on an error; the
// subscriptions are flushed to the server when it returns.
func mustSubscribe(t *testing.T, nc *nats.Conn, subjects map[wire.Kind]string, workers, pendingMsgs, pendingBytes int, handle func(*Message)) *Subscription {
	t.Helper()
	sub, err := Subscribe(nc, subjects, workers, pendingMsgs, pendingBytes, handle)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Flush(t, nc)
	return sub
}

// publishEach publishes n messages on nc, the subject and data of the i-th
// from msg, and flushes: the server has them all when it returns.
func publishEach(t *testing.T, nc *nats.Conn, n int, msg func(i int) (string, []byte)) {
	t.Helper()
	for i := range n {
		subject, data := msg(i)
		if err := nc.Publish(subject, data); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Flush(t, nc)
}
