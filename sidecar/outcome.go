package sidecar

import (
	"log/slog"
	"time"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// ending is how the path of a message (or of a split half no message
// delivered: one the joiner gave up on) ended, for outcome to record.
type ending struct {
	kind wire.Kind
	arm  string
	out  vocab.Outcome
	// n is how many events end: 0 none yet (a half waiting for its
	// partner, a redelivery), 2 a judgement pair completed.
	n  uint64
	at time.Time // the clock it is counted at
	// The trace event that reached the gold join (traced), for the span
	// and the notices.
	traced                  bool
	qid, requestID, eventID string
	ts                      time.Time
	// obs is the event's observation when it was applied to the windows
	// (Scored), or judged too late for them (Late); nil otherwise.
	obs     *window.Observation
	applied bool    // obs is in the windows: the tally counts its numerators
	lag     float64 // seconds from the event's ts to the window add; < 0: no ts
	// reason and detail of a rejection.
	reason, detail string
	start          time.Time // when the message's handling began; zero: no message
}

// ended is the end of one event of arm with outcome out.
func ended(out vocab.Outcome, arm string) ending { return ending{out: out, arm: arm, n: 1, lag: -1} }

// rejected is the end of a message refused for reason.
func rejected(arm, reason, detail string) ending {
	e := ended(vocab.Rejected, arm)
	e.reason, e.detail = reason, detail
	return e
}

// waiting is the end of a message with no outcome yet.
var waiting = ending{lag: -1}

// tracedEnd is the end of trace event e, which reached the gold join, with
// outcome out and its observation o (nil: none).
func tracedEnd(out vocab.Outcome, e *wire.TraceEvent, o *window.Observation) ending {
	end := ended(out, e.Arm)
	end.traced, end.qid, end.requestID, end.eventID, end.ts, end.obs = true, e.QID, e.RequestID, e.EventID, e.TS, o
	return end
}

// outcome records the end of a message's path (m nil: of a half no
// message delivered): its count by outcome and in its goroutine's tally
// (with what a scored observation adds to the per-event series, and the
// message's processing time), its span, and the notice, counter and dead
// letter of a rejection.
func (in *ingester) outcome(m *stream.Message, end ending) {
	worker, seconds := -1, -1.0
	if m != nil {
		worker, seconds = m.Worker, time.Since(end.start).Seconds()
	}
	var applied *window.Observation
	if end.applied {
		applied = end.obs
	}
	in.metrics.tally(worker).record(end.kind, end.arm, end.out, end.n, applied, end.lag, seconds)
	if m != nil && (end.traced || end.out == vocab.Rejected) {
		in.tracing.span(m, &end)
	}
	for range end.n {
		in.outcomes.Count(end.arm, end.out, end.at)
	}
	if m == nil || end.n == 0 {
		return
	}
	switch end.out {
	case vocab.Rejected:
		in.metrics.rejected.WithLabelValues(end.reason).Inc()
		in.deadLetter(m, end.arm, end.reason, end.detail)
	case vocab.Unlabeled:
		if !m.Replayed && in.notices.first("unlabeled", slog.LevelInfo, "events unlabeled") {
			in.log.Info("event unlabeled: no gold item has its qid; counted as unlabeled, not scored; more are summed up once a minute",
				"qid", end.qid, "arm", end.arm, "subject", m.Subject, "gold_items", in.gold.Current().Len())
		}
	case vocab.Late:
		if end.traced && !m.Replayed && in.notices.first("late", slog.LevelInfo, "events late") {
			in.log.Info("event late: its ts is older than the longest window, or more than window.max_lateness behind the newest event of its arm; counted as late, not scored; more are summed up once a minute",
				"qid", end.qid, "arm", end.arm, "ts", end.ts.UTC().Format(time.RFC3339Nano), "clock", end.at.UTC().Format(time.RFC3339), "subject", m.Subject)
		}
	}
}

// deadLetter publishes a refused message to the dead-letter subject with
// its reason, and logs the first of each reason.
func (in *ingester) deadLetter(m *stream.Message, arm, reason, detail string) {
	detail = clipDetail(detail)
	if m.Replayed {
		return // dead-lettered and logged by the process that first applied it
	}
	if in.notices.first("rejected:"+reason, slog.LevelWarn, "events rejected ("+reason+")") {
		in.log.Warn("event rejected: counted in shadoweval_rejected_events_total and dead-lettered; more of this reason are summed up once a minute",
			"reason", reason, "detail", detail, "subject", m.Subject, "arm", arm, "deadletter", in.deadletter)
	}
	result := "success"
	if in.pub == nil || in.pub.DeadLetter(in.deadletter, m, reason+": "+detail) != nil {
		result = "failure"
	}
	in.metrics.deadLetters.WithLabelValues(result).Inc()
	if in.logPayloads {
		in.log.Debug("event rejected", "reason", reason, "detail", detail, "subject", m.Subject, "payload", string(m.Data))
	}
}

// unkeyed dead-letters a message stored without a partition (cluster
// mode). It is counted in shadoweval_rejected_events_total but in no
// window: whichever replica is pinned for such messages, the merged
// windows stay those of the partitioned events alone.
func (in *ingester) unkeyed(m *stream.Message) {
	in.metrics.rejected.WithLabelValues(ReasonNoPartitionKey).Inc()
	in.deadLetter(m, "", ReasonNoPartitionKey, "subject "+m.Subject+" has no key token (publish to PREFIX.<arm>.<key>, key = the qid or its hash)")
}
