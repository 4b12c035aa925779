package sidecar_test

// End-to-end tests on a NATS cluster (SPEC §9): three nats-servers in
// process, the sidecar given all three URLs. The server holding the
// sidecar's connection, and leading the input stream and the sidecar's
// consumer, crashes mid-stream (testenv.Cluster.Crash: its connections
// cut, then shut down) while a publisher goes on, and is started again:
// nothing is lost or counted twice, the sidecar is caught up promptly
// after the last publish, and the stream and buckets it created have
// nats.replicas copies. Once in JetStream mode, once as the pinned
// instance of a partitioned member with a hot standby.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
)

// recoveryDeadline bounds the wait, after the last publish and once the
// consumer has a leader again, for a sidecar in JetStream mode to have
// applied everything. Without the recovery this test is about, it cannot
// make it: nats.go pulls again after "no responders" only when its own
// heartbeat check fires, 30 s after the pull, and a delivery lost with the
// server comes again only after the ack wait, set to an hour here. With
// it, the sidecar takes about a second (logged); the deadline leaves the
// loaded 2-core CI machine ten times that.
const recoveryDeadline = 15 * time.Second

// memberRecoveryDeadline is recoveryDeadline for a partitioned member,
// whose pinned instance may have to give way to its standby after the
// pin's lifetime (nats.ack_wait, 5 s). A delivery lost in flight there
// is acked with the next one (the member consumer acks all), so without
// the recovery it would never be applied: any deadline shows it.
const memberRecoveryDeadline = 30 * time.Second

// clusterSidecar is an in-process sidecar on a NATS cluster.
type clusterSidecar struct {
	*testApp
	app *sidecar.App
}

// startClusterSidecar starts the sidecar of cfg on the real clock (the
// stream's stored times are the servers'); it stops when the test ends,
// and its log is shown if the test failed.
func startClusterSidecar(t *testing.T, name string, cfg *config.Config) *clusterSidecar {
	t.Helper()
	logs := &syncBuffer{}
	app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("%s: New: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("%s: Start: %v\n%s", name, err, logs.String())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = app.Stop(ctx)
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	return &clusterSidecar{testApp: &testApp{&apptest.App{T: t, Base: "http://" + app.Addr(), Timeout: waitTimeout, Logs: logs}}, app: app}
}

// withMsgIDs gives each of pubs without a Nats-Msg-Id one of its own.
func withMsgIDs(pubs []jsPub) []jsPub {
	out := make([]jsPub, len(pubs))
	for i, p := range pubs {
		if p.msgID == "" {
			p.msgID = "pub-" + strconv.Itoa(i)
		}
		out[i] = p
	}
	return out
}

// publishThrough publishes pubs (withMsgIDs) through JetStream, 32 at a
// time without waiting for each ack, trying each again until the cluster
// stores it: while a stream leader is elected publishes fail, and a retry
// of one stored already is dropped by the server as a duplicate. A retry
// may store a message after later ones: the test config allows for it
// (window.max_lateness).
func publishThrough(ctx context.Context, nc *nats.Conn, pubs []jsPub, published *atomic.Int64, last *atomic.Int64) error {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(2*time.Second))
	if err != nil {
		return err
	}
	msg := func(p jsPub) *nats.Msg {
		m := &nats.Msg{Subject: p.subject, Data: p.data, Header: nats.Header{}}
		m.Header.Set(nats.MsgIdHdr, p.msgID)
		return m
	}
	const inFlight = 32
	for from := 0; from < len(pubs); from += inFlight {
		batch := pubs[from:min(from+inFlight, len(pubs))]
		acks := make([]jetstream.PubAckFuture, len(batch))
		for i, p := range batch {
			acks[i], _ = js.PublishMsgAsync(msg(p)) // a failure is retried below
		}
		for i, p := range batch {
			stored := false
			if acks[i] != nil {
				select {
				case <-acks[i].Ok():
					stored = true
				case <-acks[i].Err():
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			for !stored {
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := js.PublishMsg(actx, msg(p), jetstream.WithRetryAttempts(50), jetstream.WithRetryWait(50*time.Millisecond))
				cancel()
				if ctx.Err() != nil {
					return fmt.Errorf("publish %d of %d: %w", from+i, len(pubs), errors.Join(err, ctx.Err()))
				}
				stored = err == nil
			}
			published.Add(1)
			last.Store(time.Now().UnixNano())
		}
	}
	return nil
}

// clusterConfig is a JetStream-mode config on the cluster at urls with
// three replicas and an ack wait too long to hide a lost delivery. The
// traffic's event times are set before it is published, which under the
// race detector takes minutes, and a retried publish stores its message
// after later ones: a lateness allowed of 10 minutes keeps every event in
// its windows however late it is stored.
func clusterConfig(t *testing.T, urls, gold string) *config.Config {
	cfg := testConfig(t, urls, gold)
	cfg.NATS.JetStream = true
	cfg.NATS.Replicas = 3
	cfg.NATS.AckWait = config.Duration(time.Hour)
	cfg.Window.MaxLateness = config.Duration(10 * time.Minute)
	return cfg
}

// nodeLoss is one run of the fault: after a third of the traffic is
// applied, the stream's and the consumer's leaders move to the server
// holding the sidecar's connection, which crashes, and is started again
// once two thirds are published.
type nodeLoss struct {
	t        *testing.T
	c        *testenv.Cluster
	consumer string // the consumer whose leader is moved and awaited
	pubs     []jsPub
	applied  func() int64  // messages the sidecar applied so far
	server   func() int    // the server of the sidecar's connection
	caughtUp func() string // "" once everything is applied
	deadline time.Duration // for caughtUp after the last publish
}

// run publishes the traffic through the fault and waits for caughtUp
// within f.deadline of the last publish (and the consumer's next leader);
// it logs the time that took.
func (f *nodeLoss) run() {
	t := f.t
	ctx := testenv.Context(t, 4*waitTimeout)
	nc, js := testenv.ConnectJetStream(t, f.c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	var published, last atomic.Int64
	third := len(f.pubs) / 3
	if err := publishThrough(ctx, nc, f.pubs[:third], &published, &last); err != nil {
		t.Fatal(err)
	}
	poll(t, "the sidecar to apply part of the stream", func() string {
		if n := f.applied(); n < int64(third)/2 {
			return fmt.Sprint(n, " applied")
		}
		return ""
	})
	x := f.server()
	f.c.MoveStreamLeader(nc, "RAG", x)
	f.c.MoveConsumerLeader(nc, "RAG", f.consumer, x)
	pubErr := make(chan error, 1)
	go func() { pubErr <- publishThrough(ctx, nc, f.pubs[third:], &published, &last) }()
	f.c.Crash(x)
	killedAt := published.Load()
	poll(t, "two thirds of the traffic published while the server is down", func() string {
		if n := published.Load(); n < int64(2*third) {
			return fmt.Sprint(n, " published")
		}
		return ""
	})
	f.c.Start(x)
	if err := <-pubErr; err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, waitTimeout, "the consumer to have a leader", func() string {
		if f.c.ConsumerLeader("RAG", f.consumer) < 0 {
			return "none"
		}
		return ""
	})
	lastPub := time.Unix(0, last.Load())
	from := time.Now()
	if why := testenv.Until(f.deadline, f.caughtUp); why != "" {
		if cons, err := js.Consumer(ctx, "RAG", f.consumer); err == nil {
			ci := cons.CachedInfo()
			t.Logf("consumer %s: delivered %+v, ack floor %+v, %d pending, %d ack pending, %d waiting pulls, cluster %+v",
				f.consumer, ci.Delivered, ci.AckFloor, ci.NumPending, ci.NumAckPending, ci.NumWaiting, ci.Cluster)
		}
		t.Fatalf("gave up after %v waiting for the sidecar to have applied the whole stream: %s", f.deadline, why)
	}
	t.Logf("server %s (the sidecar's, stream and consumer leader) crashed after %d of %d messages and started again after %d; caught up %v after the last publish (%v after the consumer had a leader again)",
		f.c.ServerName(x), killedAt, len(f.pubs), 2*third, time.Since(lastPub).Round(time.Millisecond), time.Since(from).Round(time.Millisecond))
}

// checkReplicas fails unless stream RAG, its consumer consumer and the
// buckets have three copies. That every copy is current again after the
// fault is the servers' catch-up, not the sidecar's: it is waited for and
// logged, and fails nothing.
func checkReplicas(t *testing.T, c *testenv.Cluster, consumer string, buckets ...string) {
	t.Helper()
	c.WaitReady()
	_, js := testenv.ConnectJetStream(t, c.URLs())
	ctx := testenv.Context(t, waitTimeout)
	streams := []string{"RAG"}
	for _, b := range buckets {
		streams = append(streams, "KV_"+b)
	}
	// state is "" when name has 3 replicas (and, with current, every one
	// current); a context of its own a call, so that the last reason is
	// the stream's state, not the wait's deadline.
	state := func(name string, current bool) string {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		str, err := js.Stream(cctx, name)
		if err != nil {
			return err.Error()
		}
		info := str.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return fmt.Sprintf("replicas %d, cluster %+v", info.Config.Replicas, info.Cluster)
		}
		for _, r := range info.Cluster.Replicas {
			if current && !r.Current {
				return r.Name + " not current"
			}
		}
		return ""
	}
	for _, name := range streams {
		poll(t, name+" to have 3 replicas", func() string { return state(name, false) })
		if why := testenv.Until(waitTimeout, func() string { return state(name, true) }); why != "" {
			t.Logf("%s: a copy not current %v after the cluster was ready: %s", name, waitTimeout, why)
		}
	}
	cons, err := js.Consumer(ctx, "RAG", consumer)
	if err != nil {
		t.Fatal(err)
	}
	if info := cons.CachedInfo(); info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Errorf("consumer %s: cluster %+v, want a leader and 2 replicas", consumer, info.Cluster)
	}
}

// connectedServer is the index of the server app is connected to.
func connectedServer(t *testing.T, c *testenv.Cluster, app *sidecar.App) int {
	t.Helper()
	x := c.IndexOfURL(app.NATSURL())
	if x < 0 {
		t.Fatalf("the sidecar is connected to %s, not one of %s", app.NATSURL(), c.URLs())
	}
	return x
}

// TestNATSClusterNodeLoss: JetStream mode on a 3-server cluster; the
// server holding the sidecar's connection, the stream's and the consumer's
// leader, dies mid-stream and comes back.
func TestNATSClusterNodeLoss(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	s := startClusterSidecar(t, "sidecar", clusterConfig(t, c.URLs(), gold))
	s.waitReady("sidecar", http.StatusOK)
	for _, store := range [][2]string{{"stream", "RAG"}, {"analysis_bucket", "shadoweval_analyses"}} {
		labels := map[string]string{"store": store[0], "name": store[1]}
		s.CheckMetric("shadoweval_jetstream_replicas", labels, 3)
		s.CheckMetric("shadoweval_jetstream_under_replicated", labels, 0)
	}

	pubs := withMsgIDs(jsTraffic(0, 600, time.Now()))
	want := expectedEvents(pubs)
	f := &nodeLoss{t: t, c: c, consumer: "shadoweval", pubs: pubs, deadline: recoveryDeadline,
		applied: s.eventsSeen,
		server:  func() int { return connectedServer(t, c, s.app) },
		caughtUp: func() string {
			if d := s.expectedDiffer(want); d != "" {
				return d
			}
			if n, _ := s.MetricValue("shadoweval_jetstream_consumer_pending", nil); n != 0 {
				return fmt.Sprint(n, " pending")
			}
			return ""
		}}
	f.run()

	s.waitReady("sidecar", http.StatusOK)
	checkReplicas(t, c, "shadoweval", "shadoweval_analyses")
	// Counted once: the windows hold exactly the traffic's outcomes, and
	// what came twice (acks lost with the server) was acked unapplied.
	s.waitExpected("sidecar", want)
	s.WaitMetric("shadoweval_jetstream_lag_seconds", nil, 0)
	red, _ := s.MetricValue("shadoweval_jetstream_redeliveries_total", nil)
	holes, _ := s.MetricValue("shadoweval_jetstream_holes_filled_total", nil)
	t.Logf("redeliveries %v, holes filled %v", red, holes)
}

// TestNATSClusterNodeLossPartitioned: a partitioned member with a pinned
// instance and a hot standby on a 3-server cluster; the server holding the
// pinned instance's connection, the stream's and the member consumer's
// leader, dies mid-stream and comes back.
func TestNATSClusterNodeLossPartitioned(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	member := func() *config.Config {
		cfg := clusterConfig(t, c.URLs(), gold)
		cfg.NATS.AckWait = config.Duration(5 * time.Second) // the pin's lifetime too
		cfg.Cluster.Partitions = 1
		cfg.Cluster.Member = "0"
		cfg.Cluster.PublishInterval = config.Duration(200 * time.Millisecond)
		cfg.Cluster.StaleAfter = config.Duration(20 * time.Second)
		return cfg
	}
	r := []*clusterSidecar{startClusterSidecar(t, "instance A", member()), startClusterSidecar(t, "instance B", member())}
	for i, s := range r {
		s.waitReady(fmt.Sprint("instance ", i), http.StatusOK)
	}
	for _, store := range [][2]string{{"stream", "RAG"}, {"analysis_bucket", "shadoweval_analyses"}, {"cluster_bucket", "shadoweval_cluster"}} {
		labels := map[string]string{"store": store[0], "name": store[1]}
		r[0].CheckMetric("shadoweval_jetstream_replicas", labels, 3)
		r[0].CheckMetric("shadoweval_jetstream_under_replicated", labels, 0)
	}

	pubs := withMsgIDs(keyed(jsTraffic(0, 600, time.Now())))
	want := expectedEvents(pubs)
	deliveries := func(i int) int64 { return int64(r[i].counter("shadoweval_cluster_deliveries_total")) }
	f := &nodeLoss{t: t, c: c, consumer: "shadoweval-0", pubs: pubs, deadline: memberRecoveryDeadline,
		applied: func() int64 { return deliveries(0) + deliveries(1) },
		// The instance the server pinned gets the deliveries: its server
		// is the one lost.
		server: func() int {
			if deliveries(0) > 0 {
				return connectedServer(t, c, r[0].app)
			}
			return connectedServer(t, c, r[1].app)
		},
		caughtUp: func() string {
			for i, s := range r {
				if d := s.expectedDiffer(want); d != "" {
					return fmt.Sprint("instance ", i, ": ", d)
				}
			}
			return ""
		}}
	f.run()
	t.Logf("deliveries: instance A %d, instance B %d", deliveries(0), deliveries(1))
	checkReplicas(t, c, "shadoweval-0", "shadoweval_analyses", "shadoweval_cluster", "static-consumer-groups")
	for i, s := range r {
		s.waitReady(fmt.Sprint("instance ", i), http.StatusOK)
		s.waitExpected(fmt.Sprint("instance ", i), want)
		s.WaitMetric("shadoweval_jetstream_lag_seconds", nil, 0)
	}
}

// TestNATSReplicasReported: a stream that exists with fewer copies than
// nats.replicas is used as it is and reported, in the log and the gauges,
// while the bucket the sidecar creates gets them; nats.replicas above what
// the servers can hold stops the start naming the key, on a cluster too
// small and on a single server.
func TestNATSReplicasReported(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	_, js := testenv.ConnectJetStream(t, c.URLs())
	testenv.CreateStream(t, js, jetstream.StreamConfig{Name: "RAG", Subjects: []string{"rag.>"}, Replicas: 1})
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	s := startClusterSidecar(t, "sidecar", clusterConfig(t, c.URLs(), gold))
	s.CheckMetric("shadoweval_jetstream_replicas", map[string]string{"store": "stream", "name": "RAG"}, 1)
	s.CheckMetric("shadoweval_jetstream_under_replicated", map[string]string{"store": "stream", "name": "RAG"}, 1)
	s.CheckMetric("shadoweval_jetstream_replicas", map[string]string{"store": "analysis_bucket", "name": "shadoweval_analyses"}, 3)
	s.CheckMetric("shadoweval_jetstream_under_replicated", map[string]string{"store": "analysis_bucket", "name": "shadoweval_analyses"}, 0)
	if log := s.Logs.String(); !strings.Contains(log, "fewer replicas than nats.replicas") || !strings.Contains(log, "nats stream edit RAG --replicas 3") {
		t.Errorf("no warning with the fix for the stream of one replica:\n%s", log)
	}

	five := clusterConfig(t, c.URLs(), gold)
	five.NATS.Replicas = 5
	five.Analysis.KVBucket = "analyses5" // the first store it creates
	startFails(t, five, "analysis.kv_bucket analyses5: nats.replicas is 5")
	five = clusterConfig(t, c.URLs(), gold)
	five.NATS.Replicas, five.NATS.Stream = 5, "RAG5" // the bucket exists: the stream is the first store created
	five.Subjects.Trace, five.Subjects.Retrieval, five.Subjects.Answer, five.Subjects.Judgement = "r5.trace.>", "r5.retrieval.>", "r5.answer.>", "r5.judgement.>"
	startFails(t, five, "nats.stream RAG5: nats.replicas is 5")
	single := clusterConfig(t, testenv.RunJetStream(t).ClientURL(), gold)
	startFails(t, single, "nats.replicas is 3", "not part of a cluster")
}
