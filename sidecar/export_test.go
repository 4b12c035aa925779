package sidecar

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// ExpireNow runs one pass of the split-event and judgement expiry at the
// app's clock, as the background ticker does every second. End-to-end tests
// move their clock (Options.Now) past join.ttl and call it instead of
// waiting for the next tick.
func (a *App) ExpireNow() { a.ingest.expire(a.now()) }

// EvaluateGatesNow runs one gate evaluation at the app's clock (alerts),
// as the gate loop does on its ticker. End-to-end tests move their clock
// (Options.Now) and call it instead of waiting for the next tick, which
// runs on real time.
func (a *App) EvaluateGatesNow() { a.evaluateGates(a.now()) }

// TickAnalysesNow judges the analyses at the app's clock (verdict
// messages, checkpoints), as the gate loop does after each evaluation.
func (a *App) TickAnalysesNow() { a.tickAnalyses(context.Background(), a.now()) }

// WithSpanProcessor makes the tracer provider built from the config send
// its spans to p too, as it would to an OTLP exporter: tracing is on and
// sampled by tracing.sample_ratio without an endpoint.
func WithSpanProcessor(p sdktrace.SpanProcessor) func(*Options) {
	return func(o *Options) { o.spanProcessor = p }
}

// TracingOn tells whether the app makes spans at all.
func (a *App) TracingOn() bool { return a.tracing.on }

// TraceHooks runs the ingest path's tracing hook on m as a scored, an
// unlabeled and a rejected event would end, for tests of its cost.
func (a *App) TraceHooks(m *stream.Message, e *wire.TraceEvent, o *window.Observation) {
	scored, unlabeled := tracedEnd(vocab.Scored, e, o), tracedEnd(vocab.Unlabeled, e, nil)
	refused := rejected(e.Arm, ReasonBadEvent, "")
	a.tracing.span(m, &scored)
	a.tracing.span(m, &unlabeled)
	a.tracing.span(m, &refused)
}

// GoldKey is the λ group key the store gave qid in the set in force (0:
// none, or not in the set).
func GoldKey(s *GoldStore, qid string) uint32 {
	if it, ok := s.Lookup(qid); ok {
		return it.Key
	}
	return 0
}
