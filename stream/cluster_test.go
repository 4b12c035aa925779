package stream

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

// TestReplicasOnCluster: on a 3-server cluster the stream and buckets
// created here have the replicas asked for, an existing one keeps its own
// (and says so), and more replicas than servers is the server's refusal
// that TooFewServers recognises, as on a single server.
func TestReplicasOnCluster(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	nc, js := testenv.ConnectJetStream(t, c.URLs())
	ctx := testenv.Context(t, 6*testenv.Timeout)

	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "RAG", Durable: "d", Subjects: jsSubjects, StartTime: time.Now(), Replicas: 3}, func(*Message) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Drain(ctx)
	str, err := js.Stream(ctx, "RAG")
	if err != nil {
		t.Fatal(err)
	}
	if got := str.CachedInfo().Config.Replicas; got != 3 || sub.Replicas() != 3 {
		t.Errorf("stream created with %d replicas (Replicas() %d), want 3", got, sub.Replicas())
	}
	kv, err := OpenKV(ctx, nc, "ANALYSES", "test", 3)
	if err != nil {
		t.Fatal(err)
	}
	w, err := WatchKV(ctx, nc, "GOLD", "test", true, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for name, got := range map[string]int{"ANALYSES": kv.Replicas(), "GOLD": w.Replicas()} {
		b, err := js.KeyValue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := BucketReplicas(ctx, b); err != nil || n != 3 || got != 3 {
			t.Errorf("bucket %s: %d replicas (%v), reported %d; want 3", name, n, err, got)
		}
	}

	// Existing stores are used as they are, with their replica count.
	testenv.CreateStream(t, js, jetstream.StreamConfig{Name: "OLD", Subjects: []string{"old.>"}, Replicas: 1})
	old, err := ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "OLD", Durable: "d", Subjects: map[wire.Kind]string{wire.KindTrace: "old.>"}, StartTime: time.Now(), Replicas: 3}, func(*Message) {})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Drain(ctx)
	if old.Replicas() != 1 {
		t.Errorf("existing R1 stream reported with %d replicas", old.Replicas())
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "OLDKV"}); err != nil {
		t.Fatal(err)
	}
	if kv, err := OpenKV(ctx, nc, "OLDKV", "", 3); err != nil || kv.Replicas() != 1 {
		t.Errorf("existing R1 bucket: %v, %v", kv, err)
	}

	// Five copies on three servers.
	_, err = ConsumeJetStream(ctx, nc, JetStreamOptions{Stream: "R5", Durable: "d", Subjects: map[wire.Kind]string{wire.KindTrace: "r5.>"}, StartTime: time.Now(), Replicas: 5}, func(*Message) {})
	if !TooFewServers(err) {
		t.Errorf("5 replicas on 3 servers: %v, TooFewServers false", err)
	}
	if _, err := OpenKV(ctx, nc, "R5KV", "", 5); !TooFewServers(err) {
		t.Errorf("a bucket of 5 replicas on 3 servers: %v, TooFewServers false", err)
	}
	// Three on a single server.
	single, _ := testenv.RunJetStreamConn(t)
	if _, err := OpenKV(ctx, single, "R3", "", 3); !TooFewServers(err) {
		t.Errorf("3 replicas on a single server: %v, TooFewServers false", err)
	}
	if TooFewServers(errors.New("no suitable peers")) || TooFewServers(jetstream.ErrStreamNotFound) {
		t.Error("TooFewServers recognises other errors")
	}
}

// TestConsumeJetStreamFillsHole: a message the server delivered that never
// arrived (here another puller of the same consumer takes it and never
// acks, as a connection dying with it in flight would) is read from the
// stream as soon as the next delivery shows the consumer sequence
// skipped, and applied before that delivery; its redelivery after the ack
// wait is acked without being applied again.
func TestConsumeJetStreamFillsHole(t *testing.T) {
	t.Parallel()
	srv := testenv.RunJetStream(t)
	nc, js := testenv.ConnectJetStream(t, srv.ClientURL())
	_, thiefJS := testenv.ConnectJetStream(t, srv.ClientURL())
	ctx := testenv.Context(t, 3*testenv.Timeout)

	var mu sync.Mutex
	var handled []uint64
	got := make(chan uint64, 16)
	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{
		Stream: "RAG", Durable: "d", Subjects: jsSubjects, StartTime: time.Now().Add(-time.Minute), AckWait: time.Second,
	}, func(m *Message) {
		mu.Lock()
		handled = append(handled, m.Seq)
		mu.Unlock()
		got <- m.Seq
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Drain(ctx)
	testenv.Flush(t, nc) // the subscription's pull reaches the server first
	cons, err := thiefJS.Consumer(ctx, "RAG", "d")
	if err != nil {
		t.Fatal(err)
	}
	stolen, err := cons.Fetch(1, jetstream.FetchMaxWait(3*testenv.Timeout))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "both pulls to wait on the consumer", func() string {
		info, err := cons.Info(ctx)
		if err != nil {
			return err.Error()
		}
		if info.NumWaiting != 2 {
			return fmt.Sprintf("%d waiting", info.NumWaiting)
		}
		return ""
	})
	// The server serves waiting pulls in turn: 1 to the subscription, 2 to
	// the other puller, 3 to the subscription.
	for i := range 3 {
		if _, err := js.Publish(ctx, "rag.trace.live", fmt.Appendf(nil, "%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	m := testenv.Next(t, stolen.Messages())
	if meta, err := m.Metadata(); err != nil || meta.Sequence.Stream != 2 {
		t.Fatalf("the other puller took %+v (%v), want sequence 2", meta, err)
	}
	for _, want := range []uint64{1, 2, 3} {
		if seq := testenv.Next(t, got); seq != want {
			t.Fatalf("handled sequence %d, want %d (all: %v)", seq, want, handled)
		}
	}
	if sub.Fills() != 1 {
		t.Errorf("Fills() = %d, want 1", sub.Fills())
	}
	// Sequence 2 comes again after the ack wait: acked, not handled.
	waitAckFloor(t, cons, 3)
	if _, err := js.Publish(ctx, "rag.trace.live", []byte("4")); err != nil {
		t.Fatal(err)
	}
	if seq := testenv.Next(t, got); seq != 4 {
		t.Fatalf("handled sequence %d after the redelivery, want 4", seq)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(handled) != "[1 2 3 4]" || sub.Redeliveries() == 0 {
		t.Errorf("handled %v with %d redeliveries, want [1 2 3 4] and at least one", handled, sub.Redeliveries())
	}
}

// TestConsumeJetStreamPullsAgainAfterLostServer: the server holding a
// consumer of one replica dies under a subscription connected elsewhere.
// Its pull dies with it and nothing tells the client (no raft group, no
// "leadership change"); the pulls it sends meanwhile get "no responders".
// The idle heartbeat makes nats.go pull again every two heartbeats, so the
// first message after the server is back arrives within seconds, where
// nats.go's own heartbeat check would wait 30 s.
func TestConsumeJetStreamPullsAgainAfterLostServer(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	_, js := testenv.ConnectJetStream(t, c.URLs())
	ctx := testenv.Context(t, 6*testenv.Timeout)
	testenv.CreateStream(t, js, jetstream.StreamConfig{Name: "R1", Subjects: []string{"r1.>"}, Replicas: 1})
	x := c.StreamLeader("R1")
	if x < 0 {
		t.Fatal("the stream has no server")
	}
	y := (x + 1) % 3
	nc := testenv.Connect(t, c.URL(y))
	var mu sync.Mutex
	var errs []error
	got := make(chan uint64, 4)
	sub, err := ConsumeJetStream(ctx, nc, JetStreamOptions{
		Stream: "R1", Durable: "d", Subjects: map[wire.Kind]string{wire.KindTrace: "r1.>"}, StartTime: time.Now().Add(-time.Minute),
		OnError: func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		},
	}, func(m *Message) { got <- m.Seq })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Drain(ctx)
	if _, err := js.Publish(ctx, "r1.a", nil); err != nil {
		t.Fatal(err)
	}
	if seq := testenv.Next(t, got); seq != 1 {
		t.Fatalf("sequence %d, want 1", seq)
	}

	c.Crash(x)
	testenv.Poll(t, testenv.Timeout, "the subscription to find its pull gone and get no responders", func() string {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			if errors.Is(err, nats.ErrNoResponders) {
				return ""
			}
		}
		return fmt.Sprint(errs)
	})
	c.Start(x)
	testenv.Poll(t, 6*testenv.Timeout, "the stream to be back", func() string {
		if _, err := js.Publish(ctx, "r1.b", nil, jetstream.WithMsgID("b")); err != nil {
			return err.Error()
		}
		return ""
	})
	published := time.Now()
	seq := testenv.Receive(t, got, 15*time.Second, "the message published once the server is back (nats.go alone pulls again after 30 s)")
	t.Logf("sequence %d applied %v after its publish", seq, time.Since(published).Round(time.Millisecond))
}
