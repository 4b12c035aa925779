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
// after that are caught by the idempotency keys, dedupe.go). A consumer
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
// created when missing, file-backed, with the four input subjects and a
// MaxAge of twice the replay span, or analysis.max_duration and the span
// when longer; an existing stream is used as it is.

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/stream"
)

// replaySpan is how far back a start replays: the longest window and the
// lateness allowed behind it.
func (a *App) replaySpan() time.Duration {
	return a.longestWindow() + time.Duration(a.cfg.Window.MaxLateness)
}

// longestWindow is the length of the longest configured window.
func (a *App) longestWindow() time.Duration {
	var l time.Duration
	for _, w := range a.cfg.Windows {
		l = max(l, time.Duration(w.Length))
	}
	return l
}

// newDedupe sizes the idempotency keys on the longest window.
func newDedupe(a *App) *deduper {
	var longest, res time.Duration
	for _, w := range a.cfg.Windows {
		if time.Duration(w.Length) > longest {
			longest, res = time.Duration(w.Length), time.Duration(w.Resolution)
		}
	}
	return newDeduper(longest, res, time.Duration(a.cfg.Window.MaxLateness))
}

// registerJetStreamMetrics adds the consumer's lag and redeliveries (in
// JetStream mode) and the size of the idempotency set.
func (a *App) registerJetStreamMetrics() {
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_dedupe_keys", Help: "Idempotency keys (event_id, Nats-Msg-Id or stream sequence) remembered over the longest window.",
	}, func() float64 { return float64(a.dedupe.len()) }))
	if !a.cfg.NATS.JetStream {
		return
	}
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_jetstream_consumer_pending", Help: "Messages of the stream not yet delivered to the sidecar's consumer (num_pending).",
	}, func() float64 {
		if s := a.jsub.Load(); s != nil {
			return float64(s.Pending())
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
		Name: "shadoweval_jetstream_ack_errors_total", Help: "Acks that could not be sent (the message will be delivered again).",
	}, func() float64 {
		if s := a.jsub.Load(); s != nil {
			return float64(s.AckErrors())
		}
		return 0
	}))
}

// subscribeJetStream creates the stream if missing and (re)creates the
// consumer, replaying from now − replaySpan.
func (a *App) subscribeJetStream(ctx context.Context) error {
	s := a.cfg.Subjects
	span := a.replaySpan()
	start := a.now().Add(-span)
	// A running analysis accumulates from its start: replay from there so
	// that it comes back as an uninterrupted run would have it.
	if t := a.analyses.m.EarliestStart(); !t.IsZero() {
		start = minTime(start, t.Add(-time.Duration(a.cfg.Window.MaxLateness)))
	}
	sub, err := stream.ConsumeJetStream(ctx, a.nc, stream.JetStreamOptions{
		Stream:  a.cfg.NATS.Stream,
		Durable: a.cfg.NATS.Durable,
		Subjects: map[stream.Kind]string{
			stream.KindTrace: s.Trace, stream.KindRetrieval: s.Retrieval,
			stream.KindAnswer: s.Answer, stream.KindJudgement: s.Judgement,
		},
		StartTime: start,
		MaxAge:    max(2*span, time.Duration(a.cfg.Analysis.MaxDuration)+span),
		OnError:   func(err error) { a.log.Warn("JetStream consumer", "err", err) },
	}, a.handle)
	if err != nil {
		return err
	}
	a.jsub.Store(sub)
	a.log.Info("JetStream consumer created; replaying the stream", "stream", a.cfg.NATS.Stream, "durable", a.cfg.NATS.Durable,
		"from", start.UTC().Format(time.RFC3339), "pending", sub.Pending())
	return nil
}

// jetStreamLoop refreshes the consumer's num_pending for /metrics and
// turns readiness off if the server drops the consumer.
func (a *App) jetStreamLoop(ctx context.Context) {
	sub := a.jsub.Load()
	if sub == nil {
		return
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Closed():
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
			_ = sub.RefreshPending(rctx)
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

// clockOf is the clock an event is applied at: its message's (m.Received,
// the stored time in JetStream mode), or for a split half given up on (m
// nil) the clock it aged by.
func (a *App) clockOf(m *stream.Message) time.Time {
	if m != nil {
		return m.Received
	}
	return a.expiryNow()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
