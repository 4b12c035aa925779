package stream

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/stream/streamtest"
)

var testSubjects = map[Kind]string{
	KindTrace:     "rag.trace.>",
	KindRetrieval: "rag.retrieval.>",
	KindAnswer:    "rag.answer.>",
	KindJudgement: "rag.judgement.>",
}

// coreSubscribe subscribes to url's server and unsubscribes at the end of
// the test.
func coreSubscribe(t *testing.T, opt ConnOptions, subjects map[Kind]string, workers int, pendingBytes int64, handle func(*Message)) *CoreSubscription {
	t.Helper()
	sub, err := CoreSubscribe(connectCtx(t), opt, subjects, workers, pendingBytes, handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return sub
}

// gate is a channel that handlers wait on and its closing, which may be
// called more than once: register it with t.Cleanup after the subscription
// so that a failing test does not leave a handler blocked and its
// Unsubscribe waiting for it.
func gate(t *testing.T) (chan struct{}, func()) {
	ch := make(chan struct{})
	return ch, sync.OnceFunc(func() { close(ch) })
}

func flushSub(t *testing.T, sub *CoreSubscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamtest.Timeout)
	defer cancel()
	if err := sub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCoreSubscribeKinds(t *testing.T) {
	s := streamtest.RunBasic(t)
	got := make(chan *Message, 16)
	coreSubscribe(t, ConnOptions{URL: s.ClientURL()}, testSubjects, 1, 0, func(m *Message) { c := *m; got <- &c })
	pub := streamtest.Connect(t, s.ClientURL())
	for _, tc := range []struct {
		subject string
		kind    Kind
		arm     string
	}{
		{"rag.trace.live", KindTrace, "live"},
		{"rag.retrieval.canary", KindRetrieval, "canary"},
		{"rag.answer.canary", KindAnswer, "canary"},
		{"rag.judgement.shadow", KindJudgement, "shadow"},
	} {
		before := time.Now()
		h := nats.Header{"traceparent": {"tp-" + tc.arm}, nats.MsgIdHdr: {"id-" + tc.subject}}
		if err := pub.PublishMsg(&nats.Msg{Subject: tc.subject, Data: []byte(tc.subject), Header: h}); err != nil {
			t.Fatal(err)
		}
		m := streamtest.Next(t, got)
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
	// Headers without a body, and an empty message.
	if err := pub.PublishMsg(&nats.Msg{Subject: "rag.trace.h", Header: nats.Header{"k": {"v"}}}); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("rag.trace.last", nil); err != nil {
		t.Fatal(err)
	}
	if m := streamtest.Next(t, got); m.Subject != "rag.trace.h" || m.Header.Get("k") != "v" || len(m.Data) != 0 {
		t.Fatalf("got %s %v %q, want rag.trace.h with header k", m.Subject, m.Header, m.Data)
	}
	if m := streamtest.Next(t, got); m.Subject != "rag.trace.last" || m.Header != nil || len(m.Data) != 0 {
		t.Fatalf("got %s %v %q, want rag.trace.last", m.Subject, m.Header, m.Data)
	}
}

func TestCoreSubscribeSubjects(t *testing.T) {
	s := streamtest.RunBasic(t)
	opt := ConnOptions{URL: s.ClientURL()}
	for name, subjects := range map[string]map[Kind]string{
		"none":         nil,
		"only empty":   {KindTrace: ""},
		"white space":  {KindTrace: "bad subject"},
		"line break":   {KindTrace: "bad\r\nPUB x 0"},
		"tab":          {KindAnswer: "a\tb"},
		"empty and ws": {KindTrace: "", KindAnswer: "a b"},
	} {
		if _, err := CoreSubscribe(connectCtx(t), opt, subjects, 1, 0, func(*Message) {}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	sub := coreSubscribe(t, opt, map[Kind]string{KindTrace: "t.>", KindAnswer: ""}, 1, 0, func(*Message) {})
	if len(sub.sids) != 1 {
		t.Fatalf("%d subscriptions, want 1", len(sub.sids))
	}
}

// Messages larger than the read buffer (and the buffer shrinking back
// after them) arrive whole and in order among small ones.
func TestCoreSubscribeLargeMessages(t *testing.T) {
	opts := streamtest.Options()
	opts.MaxPayload = 8 << 20
	s := streamtest.RunServer(t, opts)
	got := make(chan *Message, 64)
	coreSubscribe(t, ConnOptions{URL: s.ClientURL()}, map[Kind]string{KindTrace: "big.>"}, 1, 0, func(m *Message) { c := *m; got <- &c })
	pub := streamtest.Connect(t, s.ClientURL())
	sizes := []int{10, readBufSize - 40, readBufSize + 1, 3 << 20, 5, 2*readBufSize + 7, 0, 100}
	for i, n := range sizes {
		data := bytes.Repeat([]byte{byte('a' + i)}, n)
		if err := pub.PublishMsg(&nats.Msg{Subject: "big." + strconv.Itoa(i), Data: data, Header: nats.Header{"i": {strconv.Itoa(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range sizes {
		m := streamtest.Next(t, got)
		want := bytes.Repeat([]byte{byte('a' + i)}, n)
		if m.Subject != "big."+strconv.Itoa(i) || m.Header.Get("i") != strconv.Itoa(i) || !bytes.Equal(m.Data, want) {
			t.Fatalf("message %d: subject %s header %v, %d bytes (want %d)", i, m.Subject, m.Header, len(m.Data), n)
		}
	}
}

// A handler that blocks makes the subscription drop beyond its pending
// bytes; Dropped counts it and OnSlowConsumer names the subject once.
func TestCoreSubscribeSlowConsumer(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			s := streamtest.RunBasic(t)
			slow := make(chan string, 4)
			release, releaseAll := gate(t)
			var handled atomic.Int64
			sub := coreSubscribe(t, ConnOptions{URL: s.ClientURL(), OnSlowConsumer: func(subject string) { slow <- subject }},
				map[Kind]string{KindRetrieval: "rag.retrieval.>"}, workers, 1000, func(*Message) {
					<-release
					handled.Add(1)
				})
			t.Cleanup(releaseAll) // before the Unsubscribe of a failed test
			pub := streamtest.Connect(t, s.ClientURL())
			const n = 100
			for i := range n {
				if err := pub.Publish("rag.retrieval.live", fmt.Appendf(nil, "%0100d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := pub.Flush(); err != nil {
				t.Fatal(err)
			}
			flushSub(t, sub) // everything is read: dropped or waiting
			if subj := streamtest.Next(t, slow); subj != "rag.retrieval.>" {
				t.Fatalf("slow consumer on %q", subj)
			}
			// 1000 bytes hold ten 100-byte messages, whether waiting or in a handler.
			if d := sub.Dropped(); d != n-10 {
				t.Fatalf("dropped %d of %d with room for 10", d, n)
			}
			releaseAll()
			if err := sub.Drain(connectCtx(t)); err != nil {
				t.Fatal(err)
			}
			if handled.Load() != 10 || sub.Dropped() != n-10 {
				t.Fatalf("handled %d, dropped %d after Drain; want 10 and %d", handled.Load(), sub.Dropped(), n-10)
			}
			if len(slow) != 0 {
				t.Fatalf("%d more slow-consumer reports for one episode", len(slow))
			}
		})
	}
}

func TestCoreSubscribeDrainDeliversPending(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			s := streamtest.RunBasic(t)
			gate := make(chan struct{})
			var handled atomic.Int64
			sub := coreSubscribe(t, ConnOptions{URL: s.ClientURL()}, testSubjects, workers, -1, func(*Message) {
				<-gate
				handled.Add(1)
			})
			pub := streamtest.Connect(t, s.ClientURL())
			const n = 500
			for i := range n {
				subj := [...]string{"rag.trace.a", "rag.retrieval.a", "rag.answer.a", "rag.judgement.a"}[i%4]
				if err := pub.Publish(subj, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := pub.Flush(); err != nil { // the server has routed all n
				t.Fatal(err)
			}
			close(gate)
			if err := sub.Drain(connectCtx(t)); err != nil {
				t.Fatal(err)
			}
			if handled.Load() != n {
				t.Fatalf("handled %d of %d before Drain returned", handled.Load(), n)
			}
			if sub.Dropped() != 0 {
				t.Fatalf("dropped %d with no limits", sub.Dropped())
			}
		})
	}
}

func TestCoreSubscribeDrainTimeout(t *testing.T) {
	s := streamtest.RunBasic(t)
	gate := make(chan struct{})
	defer close(gate)
	entered := make(chan struct{}, 1)
	sub := coreSubscribe(t, ConnOptions{URL: s.ClientURL()}, map[Kind]string{KindTrace: "x"}, 1, 0, func(*Message) {
		entered <- struct{}{}
		<-gate
	})
	pub := streamtest.Connect(t, s.ClientURL())
	if err := pub.Publish("x", nil); err != nil {
		t.Fatal(err)
	}
	streamtest.Next(t, entered)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sub.Drain(ctx); err == nil {
		t.Fatal("Drain with a blocked handler and a done context returned nil")
	}
}

// TestCoreSubscribeWorkers: with several workers every message is handled
// exactly once, the workers run at once, and a second subscription
// (another replica) still receives every message.
func TestCoreSubscribeWorkers(t *testing.T) {
	s := streamtest.RunBasic(t)
	const workers = 3
	const n = maxBatch*workers + 1 // at least workers+1 batches
	type seen struct {
		mu      sync.Mutex
		ids     map[string]int
		workers map[int]bool
		inside  sync.WaitGroup // each worker's first message waits for the others'
		sub     *CoreSubscription
	}
	subscribe := func() *seen {
		r := &seen{ids: map[string]int{}, workers: map[int]bool{}}
		r.inside.Add(workers)
		r.sub = coreSubscribe(t, ConnOptions{URL: s.ClientURL()}, testSubjects, workers, -1, func(m *Message) {
			if m.Worker < 0 || m.Worker >= workers || m.Worker >= Workers(workers) {
				t.Errorf("message from worker %d of %d", m.Worker, workers)
			}
			r.mu.Lock()
			r.ids[string(m.Data)]++
			first := !r.workers[m.Worker]
			r.workers[m.Worker] = true
			r.mu.Unlock()
			if first {
				// Only returns once every worker holds a message: a
				// subscription that handled one batch at a time would
				// never get here.
				r.inside.Done()
				r.inside.Wait()
			}
		})
		return r
	}
	a, b := subscribe(), subscribe()
	pub := streamtest.Connect(t, s.ClientURL())
	for i := range n {
		subj := [...]string{"rag.trace.a", "rag.answer.a"}[i%2]
		if err := pub.Publish(subj, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*seen{a, b} {
		if err := r.sub.Drain(connectCtx(t)); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		if len(r.ids) != n {
			t.Errorf("%d distinct messages handled, want %d", len(r.ids), n)
		}
		for id, c := range r.ids {
			if c != 1 {
				t.Errorf("message %s handled %d times", id, c)
			}
		}
		r.mu.Unlock()
	}
}

// The subscription reconnects after the server restarts, subscribes again
// and reports both through the callbacks.
func TestCoreSubscribeReconnects(t *testing.T) {
	opts := streamtest.Options()
	s := streamtest.RunServer(t, opts)
	opts.Port = s.Addr().(*net.TCPAddr).Port
	disconnected := make(chan error, 4)
	reconnected := make(chan struct{}, 4)
	got := make(chan string, 4)
	coreSubscribe(t, ConnOptions{
		URL:           s.ClientURL(),
		ReconnectWait: 10 * time.Millisecond, MaxReconnectWait: 50 * time.Millisecond,
		OnDisconnect: func(err error) { disconnected <- err },
		OnReconnect:  func() { reconnected <- struct{}{} },
	}, map[Kind]string{KindTrace: "rag.trace.>"}, 2, 0, func(m *Message) { got <- string(m.Data) })
	s.Shutdown()
	s.WaitForShutdown()
	streamtest.Next(t, disconnected)
	s2 := streamtest.RunServer(t, opts)
	streamtest.Next(t, reconnected)
	pub := streamtest.Connect(t, s2.ClientURL())
	if err := pub.Publish("rag.trace.live", []byte("after")); err != nil {
		t.Fatal(err)
	}
	if d := streamtest.Next(t, got); d != "after" {
		t.Fatalf("got %q", d)
	}
}

// One slow-consumer episode lasts until half the room is free again: a
// queue that frees one message's room and fills it again is not reported
// anew.
func TestCoreSubscribeSlowConsumerEpisode(t *testing.T) {
	s := streamtest.RunBasic(t)
	slow := make(chan string, 16)
	step, releaseAll := gate(t)
	entered := make(chan struct{}, 32)
	sub := coreSubscribe(t, ConnOptions{URL: s.ClientURL(), OnSlowConsumer: func(subject string) { slow <- subject }},
		map[Kind]string{KindTrace: "t"}, 1, 1000, func(*Message) {
			entered <- struct{}{}
			<-step
		})
	t.Cleanup(releaseAll)
	pub := streamtest.Connect(t, s.ClientURL())
	// send publishes one 100-byte message and waits until the subscription
	// has read it: each message is a batch of its own.
	send := func() {
		t.Helper()
		if err := pub.Publish("t", make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if err := pub.Flush(); err != nil {
			t.Fatal(err)
		}
		flushSub(t, sub)
	}
	for range 10 {
		send() // 1000 bytes: full
	}
	streamtest.Next(t, entered)
	send()
	streamtest.Next(t, slow)
	if sub.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", sub.Dropped())
	}
	step <- struct{}{}          // the first message is done and its room free
	streamtest.Next(t, entered) // the worker took the second
	send()                      // fits
	send()                      // does not
	if sub.Dropped() != 2 {
		t.Fatalf("dropped %d, want 2", sub.Dropped())
	}
	if len(slow) != 0 {
		t.Fatalf("a second report while the queue stayed above half full")
	}
	releaseAll()
	if err := sub.Drain(connectCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Empty again: the next drop is a new episode.
	if len(slow) != 0 {
		t.Fatalf("%d reports after the drain", len(slow))
	}
}

// silentProxy forwards TCP to a server and, while frozen, holds what it
// reads instead of forwarding it: a peer that went silent without closing
// the connection, as behind a NAT that forgot it.
type silentProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	open   chan struct{} // closed while forwarding
}

func newSilentProxy(t *testing.T, target string) *silentProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target, open: make(chan struct{})}
	close(p.open)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			go p.pipe(client, server)
			go p.pipe(server, client)
		}
	}()
	return p
}

func (p *silentProxy) pipe(from, to net.Conn) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		open := p.open
		p.mu.Unlock()
		<-open
		if _, err := to.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (p *silentProxy) freeze() { p.mu.Lock(); p.open = make(chan struct{}); p.mu.Unlock() }
func (p *silentProxy) thaw()   { p.mu.Lock(); close(p.open); p.mu.Unlock() }
func (p *silentProxy) url() string {
	return "nats://" + p.ln.Addr().String()
}

// A server that stops answering is noticed by the keep-alive PINGs: the
// subscription drops the connection, reconnects once the path is back and
// receives again.
func TestCoreSubscribeKeepAlive(t *testing.T) {
	s := streamtest.RunBasic(t)
	p := newSilentProxy(t, s.Addr().String())
	disconnected := make(chan error, 4)
	reconnected := make(chan struct{}, 4)
	got := make(chan string, 4)
	coreSubscribe(t, ConnOptions{
		URL: p.url(), PingInterval: 20 * time.Millisecond,
		ReconnectWait: 10 * time.Millisecond, MaxReconnectWait: 50 * time.Millisecond,
		OnDisconnect: func(err error) { disconnected <- err },
		OnReconnect:  func() { reconnected <- struct{}{} },
	}, map[Kind]string{KindTrace: "ka"}, 1, 0, func(m *Message) { got <- string(m.Data) })
	p.freeze()
	streamtest.Next(t, disconnected)
	p.thaw()
	streamtest.Next(t, reconnected)
	pub := streamtest.Connect(t, s.ClientURL())
	if err := pub.Publish("ka", []byte("back")); err != nil {
		t.Fatal(err)
	}
	if d := streamtest.Next(t, got); d != "back" {
		t.Fatalf("got %q", d)
	}
}
