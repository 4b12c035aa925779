package sidecar

// OpenTelemetry tracing (SPEC §6): a span per input message whose outcome
// is decided on the message path (scored, unlabeled, late or rejected),
// sampled by tracing.sample_ratio, a child of the W3C trace context found
// in the NATS message headers. Each span carries the per-event checks as
// gen_ai.evaluation.result span events.
//
// Tracing is off unless tracing.endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// or OTEL_EXPORTER_OTLP_ENDPOINT names an OTLP/HTTP endpoint (or an
// embedder passes Options.TracerProvider). Off, the hooks return on their
// first test: no header is read, no span is created, nothing allocates.
//
// Names used (all strings are literal here, so that they do not move with
// the version of the semconv package):
//   - span: name "shadoweval.score", kind consumer; messaging.system,
//     messaging.destination.name, messaging.operation.type ("process"),
//     messaging.message.id, messaging.message.body.size and error.type from
//     the OpenTelemetry semantic conventions v1.43 (messaging spans,
//     go.opentelemetry.io/otel/semconv/v1.43.0); shadoweval.* are ours.
//   - span events: "gen_ai.evaluation.result" with gen_ai.evaluation.name,
//     gen_ai.evaluation.score.value, gen_ai.evaluation.score.label and
//     gen_ai.evaluation.explanation, from the GenAI semantic conventions
//     (open-telemetry/semantic-conventions-genai, model/gen-ai/events.yaml;
//     the same keys as GenAIEvaluation*Key of otel-go semconv/v1.41.0,
//     before GenAI moved out of the core conventions). Their stability is
//     "development"; the convention models the result as an event parented
//     to the evaluated operation's span, which is what a span event on our
//     span (a child of the producer's span) is.

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// SpanName is the name of the span of each event.
const SpanName = "shadoweval.score"

// EvaluationEvent is the name of the span event of each per-event check.
const EvaluationEvent = "gen_ai.evaluation.result"

const (
	// tracerName is the instrumentation scope.
	tracerName = "github.com/shadoweval/shadoweval/sidecar"
	// maxAttrLen bounds the attributes that come from the input (qid,
	// request_id, message id, subject), in bytes.
	maxAttrLen = 128
	// otlpTracesPath is the OTLP/HTTP traces path, appended to a
	// tracing.endpoint URL as to OTEL_EXPORTER_OTLP_ENDPOINT.
	otlpTracesPath = "/v1/traces"
)

// Span attribute keys.
const (
	attrMessagingSystem   = attribute.Key("messaging.system")
	attrMessagingDest     = attribute.Key("messaging.destination.name")
	attrMessagingOpType   = attribute.Key("messaging.operation.type")
	attrMessagingMsgID    = attribute.Key("messaging.message.id")
	attrMessagingBodySize = attribute.Key("messaging.message.body.size")
	attrErrorType         = attribute.Key("error.type")

	AttrArm         = attribute.Key("shadoweval.arm")
	AttrQID         = attribute.Key("shadoweval.qid")
	AttrKind        = attribute.Key("shadoweval.kind")
	AttrOutcome     = attribute.Key("shadoweval.outcome")
	AttrReason      = attribute.Key("shadoweval.reason") // rejection reason
	AttrRequestID   = attribute.Key("shadoweval.request_id")
	AttrContentType = attribute.Key("shadoweval.content_type")
)

// gen_ai.evaluation.result attribute keys.
const (
	AttrEvalName        = attribute.Key("gen_ai.evaluation.name")
	AttrEvalScoreValue  = attribute.Key("gen_ai.evaluation.score.value")
	AttrEvalScoreLabel  = attribute.Key("gen_ai.evaluation.score.label")
	AttrEvalExplanation = attribute.Key("gen_ai.evaluation.explanation")
)

// eventTracer makes the spans of the ingest path. The zero value is off.
type eventTracer struct {
	on     bool
	tracer trace.Tracer
	ks     []int
	// shutdown flushes and stops the provider built here; nil when the
	// provider is the embedder's (or there is none).
	shutdown func(context.Context) error
}

// newEventTracer sets tracing up from opt: opt.TracerProvider as given,
// else a provider of our own when an OTLP endpoint is configured (or a
// test span processor is set), else off.
func newEventTracer(opt Options, log *slog.Logger) (*eventTracer, error) {
	cfg := opt.Config
	t := &eventTracer{tracer: noop.NewTracerProvider().Tracer(tracerName), ks: cfg.K}
	if tp := opt.TracerProvider; tp != nil {
		if _, isNoop := tp.(noop.TracerProvider); isNoop {
			return t, nil
		}
		t.on, t.tracer = true, tp.Tracer(tracerName)
		log.Info("OpenTelemetry tracing on, to the tracer provider given")
		return t, nil
	}
	var procs []sdktrace.TracerProviderOption
	if opt.spanProcessor != nil {
		procs = append(procs, sdktrace.WithSpanProcessor(opt.spanProcessor))
	}
	exp, where, err := newOTLPExporter(cfg.Tracing)
	if err != nil {
		return t, err
	}
	if exp != nil {
		procs = append(procs, sdktrace.WithBatcher(exp))
	}
	if len(procs) == 0 {
		return t, nil
	}
	res, err := resource.New(context.Background(),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "shadoweval")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		log.Warn("OpenTelemetry resource: some attributes were left out", "err", err)
	}
	tp := sdktrace.NewTracerProvider(append(procs,
		sdktrace.WithResource(res),
		// A sampled parent is honoured (and an unsampled one too); a root
		// span is sampled at tracing.sample_ratio.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.Tracing.SampleRatio))),
	)...)
	t.on, t.tracer, t.shutdown = true, tp.Tracer(tracerName), tp.Shutdown
	if exp != nil {
		log.Info("OpenTelemetry tracing on", "endpoint", where, "sample_ratio", cfg.Tracing.SampleRatio)
	}
	return t, nil
}

// newOTLPExporter is the OTLP/HTTP exporter of tracing.endpoint, else of
// the OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT environment; nil when neither
// names one, or OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none. The
// rest of the exporter's settings (headers, TLS, compression, timeout)
// come from the OTEL_EXPORTER_OTLP_* environment as the exporter reads it.
// where is the endpoint for the log, without credentials.
func newOTLPExporter(tc config.TracingConfig) (exp sdktrace.SpanExporter, where string, err error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")), "none") {
		return nil, "", nil
	}
	var opts []otlptracehttp.Option
	switch {
	case tc.Endpoint != "" && strings.Contains(tc.Endpoint, "://"):
		u, err := url.Parse(tc.Endpoint)
		if err != nil {
			return nil, "", fmt.Errorf("tracing.endpoint: %w", err)
		}
		// A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT: the traces path is
		// appended unless it is already there.
		if p := strings.TrimRight(u.Path, "/"); !strings.HasSuffix(p, otlpTracesPath) {
			u.Path = p + otlpTracesPath
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		where = u.Redacted()
	case tc.Endpoint != "":
		// host:port: https, as the exporter does (plain http with
		// OTEL_EXPORTER_OTLP_INSECURE=true, or write http://host:port).
		opts = append(opts, otlptracehttp.WithEndpoint(tc.Endpoint))
		where = tc.Endpoint
	default:
		where = os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if where == "" {
			where = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		if where == "" {
			return nil, "", nil
		}
		if u, err := url.Parse(where); err == nil {
			where = u.Redacted()
		}
	}
	exp, err = otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, "", fmt.Errorf("OTLP exporter: %w", err)
	}
	return exp, where, nil
}

// stop flushes the spans not yet exported and stops the provider, when it
// is ours.
func (t *eventTracer) stop(ctx context.Context) error {
	if t.shutdown == nil {
		return nil
	}
	err := t.shutdown(ctx)
	t.shutdown = nil
	return err
}

// span records the span of message m, which ended as end says: scored,
// late or unlabeled (a trace event that reached the gold join), or
// rejected.
func (t *eventTracer) span(m *stream.Message, end *ending) {
	if !t.on {
		return
	}
	ctx := context.Background()
	if len(m.Header) > 0 {
		ctx = propagation.TraceContext{}.Extract(ctx, headerCarrier(m.Header))
	}
	_, span := t.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindConsumer))
	defer span.End()
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 14)
	attrs = append(attrs,
		attrMessagingSystem.String("nats"),
		attrMessagingDest.String(bounded(m.Subject)),
		attrMessagingOpType.String("process"),
		attrMessagingBodySize.Int(len(m.Data)),
		AttrKind.String(m.Kind.String()),
		AttrArm.String(bounded(end.arm)),
		AttrOutcome.String(end.out.String()),
	)
	if id := stream.MsgID(m.Header); id != "" {
		attrs = append(attrs, attrMessagingMsgID.String(bounded(id)))
	} else if end.eventID != "" {
		attrs = append(attrs, attrMessagingMsgID.String(bounded(end.eventID)))
	}
	if end.traced {
		attrs = append(attrs, AttrQID.String(bounded(end.qid)))
		if end.requestID != "" {
			attrs = append(attrs, AttrRequestID.String(bounded(end.requestID)))
		}
	}
	if o := end.obs; o != nil {
		attrs = append(attrs, AttrContentType.String(bounded(cmp.Or(o.Type, vocab.DefaultType))))
	}
	if end.out == vocab.Rejected {
		// The reason only: a decoder's detail may quote the payload, which
		// is not logged unless log.payloads is set.
		attrs = append(attrs, AttrReason.String(end.reason), attrErrorType.String(end.reason))
		span.SetStatus(codes.Error, end.reason)
	}
	span.SetAttributes(attrs...)
	if end.obs != nil {
		addEvaluations(span, end.obs, t.ks)
	}
}

// addEvaluations adds one gen_ai.evaluation.result event per per-event
// check that o answers (checks.Evaluations), and one per traced per-event
// proportion of the registry (window.Metric.Traced) whose denominator o is
// in, as the windows count it, named after the metric. A metric over the
// triage labels gives one event, labelled with o's label.
func addEvaluations(span trace.Span, o *window.Observation, ks []int) {
	checks.Evaluations(o, func(ev checks.Evaluation) {
		attrs := []attribute.KeyValue{AttrEvalName.String(ev.Name), AttrEvalScoreValue.Float64(ev.Score)}
		if ev.Label != "" {
			attrs = append(attrs, AttrEvalScoreLabel.String(ev.Label))
		}
		if ev.Explanation != "" {
			attrs = append(attrs, AttrEvalExplanation.String(ev.Explanation))
		}
		evalEvent(span, attrs)
	})
	counts := window.NewEventCounts(ks)
	counts.Add(o)
	for p := range counts.Proportions() {
		switch {
		case p.Den == 0 || !p.Row.Traced():
		case p.Row.Over == window.PerTriageLabel:
			if p.Num > 0 {
				evalEvent(span, []attribute.KeyValue{
					AttrEvalName.String(strings.TrimSuffix(p.Row.Name, "_")),
					AttrEvalScoreLabel.String(p.Label),
				})
			}
		default:
			attrs := evalBool(p.Name, p.Num > 0, "pass", "fail")
			if why := checks.Explain(p.Name, o); why != "" {
				attrs = append(attrs, AttrEvalExplanation.String(why))
			}
			evalEvent(span, attrs)
		}
	}
}

func evalBool(name string, ok bool, yes, no string) []attribute.KeyValue {
	v, label := 0.0, no
	if ok {
		v, label = 1, yes
	}
	return []attribute.KeyValue{AttrEvalName.String(name), AttrEvalScoreValue.Float64(v), AttrEvalScoreLabel.String(label)}
}

func evalEvent(span trace.Span, attrs []attribute.KeyValue) {
	span.AddEvent(EvaluationEvent, trace.WithAttributes(attrs...))
}

// bounded cuts an input string to maxAttrLen bytes without splitting a
// code point.
func bounded(s string) string {
	if len(s) <= maxAttrLen {
		return s
	}
	n := maxAttrLen
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// headerCarrier reads the W3C trace context (traceparent, tracestate) from
// NATS headers. NATS header names are case-sensitive map keys, and
// publishers write "traceparent", "Traceparent" or "TRACEPARENT": Get tries
// the exact key, then any spelling of it.
type headerCarrier nats.Header

var _ propagation.TextMapCarrier = headerCarrier(nil)

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
