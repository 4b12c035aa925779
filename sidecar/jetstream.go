package sidecar

// JetStream mode (SPEC §9, nats.jetstream: true).
//
// On every start the durable consumer nats.durable is deleted and created
// again with DeliverByStartTime = now − (longest window + max lateness),
// or earlier: the start of the oldest running canary analysis (analyses.go):
// the windows live in memory only, so they are rebuilt by replaying the
// stream from there, in stream order, through the same handler as live
// messages; the consumer then follows the stream. The old consumer's
// position is useless to a process that lost its memory, and a fresh
// consumer replays every message of the span exactly once (redeliveries
// after that are acked unapplied by the subscription, which applies each
// stream sequence once, and caught by the idempotency keys, dedupe.go,
// across restarts). A consumer
// name therefore belongs to one sidecar process at a time: replicas need
// distinct nats.durable names (SPEC §10 gives each partition its own).
//
// The message's clock is the time the server stored it: it stands in for
// a missing ts, it is the "now" of the lateness rules and of the outcome
// counts, and it ages split halves. So the processing of a message does
// not depend on when it is processed, and a replay after a restart, even
// kill -9, leaves the same window values as an uninterrupted run. While
// the consumer is behind (num_pending > 0), split halves and judgements
// are expired on the stream's clock too (the stored time of the last
// message applied), not on the wall clock, so a replay does not time out
// halves whose partner is next in line.
//
// A message is acked after the handler returns, that is after it is
// applied (window add, join, or rejection and dead letter). Messages the
// replaced consumer had acked (up to its ack floor) were dead-lettered by
// the process that applied them: their replay counts them again but sends
// no second dead letter (dead letters are at least once, not once per
// restart). The stream is
// created when missing, file-backed, with the four input subjects, a
// MaxAge of twice the replay span, or analysis.max_duration and the span
// when longer, and nats.replicas copies; an existing stream is used as it
// is, and reported when it has fewer copies than nats.replicas.
//
// On a NATS cluster (SPEC §9), the loss of a server costs seconds, not an
// ack wait of 30 s: the consumer's pulls carry an idle heartbeat
// (nats.heartbeat), so nats.go pulls again after two missed ones (a pull
// that got "no responders" while the consumer had no leader, a pull lost
// with its server), and at once on a leader change or a reconnection; a
// message lost in flight with the server is read from the stream as soon
// as the next delivery shows its consumer sequence skipped, and applied
// before it (stream.ConsumeJetStream), and the last one of a burst comes
// again after nats.ack_wait (5 s). So messages are applied in stream order
// even across the loss: a redelivery is never applied after later
// messages, and never counts as late because a stall moved the watermark
// past it.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/wire"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/stream"
)

// replaySpan is how far back a start replays: the longest window and the
// lateness allowed behind it.
func replaySpan(cfg *config.Config) time.Duration {
	return cfg.LongestWindow() + time.Duration(cfg.Window.MaxLateness)
}

// replayStart is where a start replays the stream from (JetStream and
// cluster mode): now − replaySpan, or earlier to reach the start of the
// oldest running analysis, so that it comes back as an uninterrupted run
// would have it.
func (a *App) replayStart() time.Time {
	start := a.now().Add(-replaySpan(a.cfg))
	if t := a.analyses.m.EarliestStart(); !t.IsZero() {
		start = minTime(start, t.Add(-time.Duration(a.cfg.Window.MaxLateness)))
	}
	return start
}

// streamMaxAge is the MaxAge of an input stream the sidecar creates: twice
// the replay span, or analysis.max_duration and the span when longer.
func streamMaxAge(cfg *config.Config) time.Duration {
	span := replaySpan(cfg)
	return max(2*span, time.Duration(cfg.Analysis.MaxDuration)+span)
}

// inputSubjects are the four input subjects by kind.
func inputSubjects(s config.SubjectsConfig) map[wire.Kind]string {
	return map[wire.Kind]string{
		wire.KindTrace: s.Trace, wire.KindRetrieval: s.Retrieval,
		wire.KindAnswer: s.Answer, wire.KindJudgement: s.Judgement,
	}
}

// newDedupe sizes the idempotency keys on the longest window.
func newDedupe(cfg *config.Config) *deduper {
	var longest, res time.Duration
	for _, w := range cfg.Windows {
		if time.Duration(w.Length) > longest {
			longest, res = time.Duration(w.Length), time.Duration(w.Resolution)
		}
	}
	return newDeduper(longest, res, time.Duration(cfg.Window.MaxLateness))
}

// registerJetStreamMetrics adds the consumer's lag and redeliveries (in
// JetStream mode) and the size of the idempotency set.
func (a *App) registerJetStreamMetrics() {
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_dedupe_keys", Help: "Idempotency keys (event_id, Nats-Msg-Id or stream sequence) remembered over the longest window.",
	}, func() float64 { return float64(a.ingest.dedupe.len()) }))
	if !a.cfg.NATS.JetStream {
		return
	}
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_jetstream_consumer_pending", Help: "Messages of the stream not yet delivered to the sidecar's consumer (num_pending; in cluster mode, the member's).",
	}, func() float64 {
		if s := a.consumed(); s != nil {
			return float64(s.Pending())
		}
		return 0
	}))
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_jetstream_lag_seconds", Help: "How far behind the stream the sidecar is: the time since the server stored the oldest message not yet applied; 0 when none is pending.",
	}, func() float64 {
		if s := a.consumed(); s != nil {
			// The wall clock, as the server's stored times are.
			return s.Lag(time.Now()).Seconds()
		}
		return 0
	}))
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shadoweval_jetstream_redeliveries_total", Help: "Messages the JetStream server delivered more than once (their ack was not seen in time).",
	}, func() float64 {
		if s := a.jsub.Load(); s != nil {
			return float64(s.Redeliveries())
		}
		return 0
	}))
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shadoweval_jetstream_holes_filled_total", Help: "Reads of the stream for deliveries lost in flight (with a server or a connection), applied before the next one.",
	}, func() float64 {
		if s := a.jsub.Load(); s != nil {
			return float64(s.Fills())
		}
		return 0
	}))
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shadoweval_jetstream_ack_errors_total", Help: "Acks that could not be sent (the message will be delivered again).",
	}, func() float64 {
		if s := a.jsub.Load(); s != nil {
			return float64(s.AckErrors())
		}
		return 0
	}))
}

// consumer is what the gauges read of the JetStream mode's or cluster
// mode's subscription.
type consumer interface {
	Pending() uint64
	Lag(now time.Time) time.Duration
}

// consumed is the subscription in use; nil before there is one.
func (a *App) consumed() consumer {
	if s := a.jsub.Load(); s != nil {
		return s
	}
	if c := a.cluster; c != nil {
		if s := c.subscription(); s != nil {
			return s
		}
	}
	return nil
}

// replicaGauges report the copies of each stream and bucket in use.
type replicaGauges struct {
	want                      int // nats.replicas
	log                       *slog.Logger
	replicas, underReplicated *prometheus.GaugeVec
}

func newReplicaGauges(reg prometheus.Registerer, want int, log *slog.Logger) *replicaGauges {
	g := &replicaGauges{want: want, log: log,
		replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shadoweval_jetstream_replicas", Help: "Copies of each JetStream stream and KV bucket the sidecar uses (store: stream, analysis_bucket, cluster_bucket, gold_bucket), read at start.",
		}, []string{"store", "name"}),
		underReplicated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shadoweval_jetstream_under_replicated", Help: "1 for a stream or KV bucket the sidecar uses that has fewer copies than nats.replicas, read at start.",
		}, []string{"store", "name"}),
	}
	reg.MustRegister(g.replicas, g.underReplicated)
	return g
}

// note sets the gauges of a stream or bucket and warns when it has fewer
// copies than nats.replicas: losing the server that holds the only copy
// loses what replay, checkpoints or gold rest on.
func (g *replicaGauges) note(store, name string, have int) {
	g.replicas.WithLabelValues(store, name).Set(float64(have))
	under := 0.0
	if have < g.want {
		under = 1
		streamName := name
		if store != "stream" {
			streamName = "KV_" + name
		}
		g.log.Warn("a JetStream store has fewer replicas than nats.replicas; losing a server can lose it",
			"store", store, "name", name, "replicas", have, "nats.replicas", g.want,
			"fix", fmt.Sprintf("nats stream edit %s --replicas %d", streamName, g.want))
	}
	g.underReplicated.WithLabelValues(store, name).Set(under)
}

// refusal names nats.replicas in the server's refusal to create a store
// with more copies than it has servers for.
func (g *replicaGauges) refusal(what string, err error) error {
	if stream.TooFewServers(err) {
		return fmt.Errorf("%s: nats.replicas is %d, more copies than the NATS servers can hold (one per JetStream server of the cluster): %w", what, g.want, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// checkClustered refuses nats.replicas > 1 on a server that is not part
// of a cluster, before anything is created.
func (a *App) checkClustered() error {
	if a.cfg.NATS.Replicas > 1 && a.nc.ConnectedClusterName() == "" {
		return fmt.Errorf("nats.replicas is %d, but the NATS server at %s is not part of a cluster: it keeps one copy; set nats.replicas to 1 or nats.url to a cluster", a.cfg.NATS.Replicas, a.nc.ConnectedUrlRedacted())
	}
	return nil
}

// subscribeJetStream creates the stream if missing and (re)creates the
// consumer, replaying from replayStart.
func (a *App) subscribeJetStream(ctx context.Context) error {
	start := a.replayStart()
	sub, err := stream.ConsumeJetStream(ctx, a.nc, stream.JetStreamOptions{
		Stream:    a.cfg.NATS.Stream,
		Durable:   a.cfg.NATS.Durable,
		Subjects:  inputSubjects(a.cfg.Subjects),
		StartTime: start,
		MaxAge:    streamMaxAge(a.cfg),
		Replicas:  a.cfg.NATS.Replicas,
		AckWait:   time.Duration(a.cfg.NATS.AckWait),
		Heartbeat: time.Duration(a.cfg.NATS.Heartbeat),
		OnError:   func(err error) { a.log.Warn("JetStream consumer", "err", err) },
	}, a.ingest.handle)
	if err != nil {
		return a.stores.refusal("nats.stream "+a.cfg.NATS.Stream, err)
	}
	a.stores.note("stream", a.cfg.NATS.Stream, sub.Replicas())
	a.jsub.Store(sub)
	a.log.Info("JetStream consumer created; replaying the stream", "stream", a.cfg.NATS.Stream, "durable", a.cfg.NATS.Durable,
		"from", start.UTC().Format(time.RFC3339), "pending", sub.Pending())
	return nil
}

// jetStreamLoop refreshes the consumer's num_pending and lag for /metrics
// every second and turns readiness off if the server drops the consumer.
func (a *App) jetStreamLoop(ctx context.Context) {
	var refresh func(context.Context) error
	var closed <-chan struct{} // nil: never (a partitioned member rejoins by itself)
	switch {
	case a.jsub.Load() != nil:
		sub := a.jsub.Load()
		refresh, closed = sub.Refresh, sub.Closed()
	case a.cluster != nil && a.cluster.subscription() != nil:
		refresh = a.cluster.subscription().RefreshPending
	default:
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-closed:
			// Stop turns subscribed off before it drains.
			if a.subscribed.Swap(false) && ctx.Err() == nil {
				a.log.Error("JetStream consumer stopped (deleted on the server?); restart the sidecar to replay and resume",
					"stream", a.cfg.NATS.Stream, "durable", a.cfg.NATS.Durable)
			}
			return
		case <-t.C:
			if !a.connected.Load() {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = refresh(rctx)
			cancel()
		}
	}
}

// expiryNow is the clock split halves and judgements age by: the stored
// time of the last message applied while the JetStream consumer is behind,
// else the app's clock.
func (a *App) expiryNow() time.Time {
	if s := a.jsub.Load(); s != nil && s.Behind() {
		if t := s.LastStored(); !t.IsZero() {
			return t
		}
	}
	return a.now()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
