package sidecar_test

// Tests of the OpenTelemetry spans (sidecar/tracing.go): the whole app runs
// against a real NATS server and its spans go to the SDK's in-memory
// exporter through a synchronous span processor. The tracing hook of the
// ingest path runs before the event is counted, so once the windows API
// counts an event its span (or its absence) is final: nothing sleeps.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// The producer's span, as its traceparent header carries it.
const (
	parentTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpanID  = "00f067aa0ba902b7"
)

// traceparent is the W3C header of the producer's span; flags "01" is
// sampled, "00" not.
func traceparent(flags string) string {
	return "00-" + parentTraceID + "-" + parentSpanID + "-" + flags
}

// clearOTELEnv makes the test independent of the OTEL_* settings of the
// machine running it (t.Setenv: such tests cannot be parallel).
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_BSP_SCHEDULE_DELAY",
	} {
		t.Setenv(k, "")
	}
}

// tracedApp is a running app whose spans land in spans.
type tracedApp struct {
	*testApp
	spans *tracetest.InMemoryExporter
}

// startTraced starts an app with tracing on at sample_ratio ratio and no
// OTLP endpoint: its spans go to an in-memory exporter only.
func startTraced(t *testing.T, ratio float64) *tracedApp {
	t.Helper()
	clearOTELEnv(t)
	exp := tracetest.NewInMemoryExporter()
	h := startApp(t, appOptions{
		goldFile:  "testdata/gold_v1.jsonl",
		configure: func(c *config.Config) { c.Tracing.SampleRatio = ratio },
		options:   sidecar.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)),
	})
	if !h.Sidecar.TracingOn() {
		t.Fatal("tracing is off with a span processor set")
	}
	return &tracedApp{testApp: h, spans: exp}
}

// publishMsg publishes data with headers and flushes.
func (h *testApp) publishMsg(subject string, data []byte, hdr nats.Header) {
	h.T.Helper()
	if err := h.NC.PublishMsg(&nats.Msg{Subject: subject, Data: data, Header: hdr}); err != nil {
		h.T.Fatalf("publish %s: %v", subject, err)
	}
	if err := h.NC.FlushTimeout(testenv.Timeout); err != nil {
		h.T.Fatalf("flush: %v", err)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// takeSpans returns the spans exported so far and forgets them.
func (h *tracedApp) takeSpans() tracetest.SpanStubs {
	spans := h.spans.GetSpans()
	h.spans.Reset()
	return spans
}

// oneSpan is the only span exported since the last call.
func (h *tracedApp) oneSpan() tracetest.SpanStub {
	h.T.Helper()
	spans := h.takeSpans()
	if len(spans) != 1 {
		h.T.Fatalf("%d spans, want 1: %v", len(spans), spanNames(spans))
	}
	return spans[0]
}

func spanNames(spans tracetest.SpanStubs) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name+" "+attrMap(s.Attributes)["shadoweval.outcome"])
	}
	return names
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// checkAttrs fails unless the span has every attribute of want ("" means
// absent).
func checkAttrs(t testing.TB, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrMap(s.Attributes)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == "" && ok:
			t.Errorf("span attribute %s = %q, want none", k, g)
		case v != "" && g != v:
			t.Errorf("span attribute %s = %q, want %q (all: %v)", k, g, v, got)
		}
	}
}

func TestTracingChildOfTraceparent(t *testing.T) {
	h := startTraced(t, 0) // only the parent can get a span sampled
	for i, key := range []string{"traceparent", "Traceparent", "TRACEPARENT"} {
		t.Run(key, func(t *testing.T) {
			hdr := nats.Header{}
			hdr[key] = []string{traceparent("01")}
			hdr["TraceState"] = []string{"vendor=abc"}
			h.publishMsg("rag.trace.tp", mustJSON(t, goodTrace("A1")), hdr)
			h.waitEvents("tp", map[string]int64{"scored": int64(i + 1)})

			s := h.oneSpan()
			if s.Name != sidecar.SpanName || s.SpanKind != trace.SpanKindConsumer {
				t.Errorf("span %q kind %v, want %q consumer", s.Name, s.SpanKind, sidecar.SpanName)
			}
			if got := s.Parent.TraceID().String(); got != parentTraceID {
				t.Errorf("parent trace ID %s, want %s", got, parentTraceID)
			}
			if got := s.Parent.SpanID().String(); got != parentSpanID {
				t.Errorf("parent span ID %s, want %s", got, parentSpanID)
			}
			if !s.Parent.IsRemote() {
				t.Error("parent is not remote")
			}
			if got := s.SpanContext.TraceID().String(); got != parentTraceID {
				t.Errorf("trace ID %s, want the parent's %s", got, parentTraceID)
			}
			if got := s.SpanContext.TraceState().String(); got != "vendor=abc" {
				t.Errorf("tracestate %q, want the header's vendor=abc", got)
			}
			checkAttrs(t, s, map[string]string{
				"messaging.system":           "nats",
				"messaging.destination.name": "rag.trace.tp",
				"messaging.operation.type":   "process",
				"shadoweval.arm":             "tp",
				"shadoweval.qid":             "A1",
				"shadoweval.kind":            "trace",
				"shadoweval.outcome":         "scored",
				"shadoweval.content_type":    "prose",
				"shadoweval.reason":          "",
			})
			if s.Status.Code == codes.Error {
				t.Errorf("status %v for a scored event", s.Status)
			}
		})
	}
}

func TestTracingSampling(t *testing.T) {
	t.Run("root span without a header", func(t *testing.T) {
		h := startTraced(t, 1)
		h.PublishJSON("rag.trace.root", goodTrace("A1"))
		// A malformed traceparent is no parent either.
		h.publishMsg("rag.trace.root", mustJSON(t, goodTrace("A2")), nats.Header{"traceparent": {"00-zz-" + parentSpanID + "-01"}})
		h.waitEvents("root", map[string]int64{"scored": 2})
		spans := h.takeSpans()
		if len(spans) != 2 {
			t.Fatalf("%d spans, want 2", len(spans))
		}
		for _, s := range spans {
			if s.Parent.IsValid() {
				t.Errorf("span of %s has parent %s, want a root span", attrMap(s.Attributes)["shadoweval.qid"], s.Parent.SpanID())
			}
			if !s.SpanContext.IsSampled() || s.SpanContext.TraceID().String() == parentTraceID {
				t.Errorf("span context %v: want a new sampled trace", s.SpanContext)
			}
		}
	})
	t.Run("ratio 0 without a parent", func(t *testing.T) {
		h := startTraced(t, 0)
		h.PublishJSON("rag.trace.zero", goodTrace("A1"))
		h.Publish("rag.trace.zero", []byte(`{"qid":`)) // rejected
		h.waitEvents("zero", map[string]int64{"scored": 1, "rejected": 1})
		if spans := h.takeSpans(); len(spans) != 0 {
			t.Errorf("%d spans at sample_ratio 0 without a parent: %v", len(spans), spanNames(spans))
		}
	})
	t.Run("ratio 1 with an unsampled parent", func(t *testing.T) {
		h := startTraced(t, 1) // parent-based: the parent's "no" wins
		h.publishMsg("rag.trace.no", mustJSON(t, goodTrace("A1")), nats.Header{"traceparent": {traceparent("00")}})
		h.waitEvents("no", map[string]int64{"scored": 1})
		if spans := h.takeSpans(); len(spans) != 0 {
			t.Errorf("%d spans under an unsampled parent: %v", len(spans), spanNames(spans))
		}
	})
}

// evaluation is one gen_ai.evaluation.result event.
type evaluation struct {
	value       string // "" when absent
	label       string
	explanation string
}

// evaluations are the gen_ai.evaluation.result events of a span, by
// gen_ai.evaluation.name.
func evaluations(t testing.TB, s tracetest.SpanStub) map[string]evaluation {
	t.Helper()
	got := map[string]evaluation{}
	for _, ev := range s.Events {
		if ev.Name != sidecar.EvaluationEvent {
			t.Errorf("span event %q, want only %q", ev.Name, sidecar.EvaluationEvent)
			continue
		}
		a := attrMap(ev.Attributes)
		name := a["gen_ai.evaluation.name"]
		if _, dup := got[name]; dup || name == "" {
			t.Errorf("evaluation name %q empty or repeated", name)
		}
		got[name] = evaluation{a["gen_ai.evaluation.score.value"], a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.explanation"]}
	}
	return got
}

func checkEvaluations(t testing.TB, s tracetest.SpanStub, want map[string]evaluation) {
	t.Helper()
	got := evaluations(t, s)
	var names []string
	for n := range got {
		names = append(names, n)
	}
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 && names[i-1] == n {
			continue
		}
		g, gok := got[n]
		w, wok := want[n]
		switch {
		case !gok:
			t.Errorf("no evaluation %q, want %+v", n, w)
		case !wok:
			t.Errorf("unexpected evaluation %q: %+v", n, g)
		case g != w:
			t.Errorf("evaluation %q = %+v, want %+v", n, g, w)
		}
	}
}

func TestTracingEvaluationEvents(t *testing.T) {
	h := startTraced(t, 1)
	pass := evaluation{"1", "pass", ""}
	fail := evaluation{"0", "fail", ""}
	recallPass := map[string]evaluation{"recall_at_1": pass, "recall_at_3": pass, "recall_at_5": pass, "recall_at_10": pass,
		"hit_at_1": pass, "hit_at_3": pass, "hit_at_5": pass, "hit_at_10": pass}
	with := func(a, b map[string]evaluation) map[string]evaluation {
		m := map[string]evaluation{}
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = v
		}
		return m
	}

	t.Run("right answer", func(t *testing.T) {
		ev := map[string]any{
			"qid": "A1", "request_id": "r-1", "q": "What does alpha reject?",
			"topk": []map[string]any{
				{"id": "p1#1", "text": "Alpha rejects null keys in every map."},
				{"id": "p9#9", "text": "Unrelated text."},
			},
			"delta_s":     []float64{0.2, 0.7},
			"answer_json": map[string]any{"claim": "Alpha rejects null keys.", "citations": []string{"p1#1"}},
		}
		h.publishMsg("rag.trace.ev", mustJSON(t, ev), nats.Header{"Nats-Msg-Id": {"m-1"}})
		h.waitEvents("ev", map[string]int64{"scored": 1})
		s := h.oneSpan()
		checkAttrs(t, s, map[string]string{"shadoweval.outcome": "scored", "shadoweval.request_id": "r-1", "messaging.message.id": "m-1"})
		checkEvaluations(t, s, with(recallPass, map[string]evaluation{
			"refusal":       {"0", "shipped", ""},
			"precision":     pass,
			"containment":   pass,
			"citation_hit":  pass,
			"coverage":      pass,
			"delta_s_cited": {"0.2", "stable", ""},
			"triage":        {"", "ok", ""},
		}))
	})
	t.Run("wrong answer", func(t *testing.T) {
		ev := goodTrace("A1")
		ev.Answer = &answer{Claim: "Alpha accepts anything.", Citations: []string{"p9#9"}}
		h.PublishJSON("rag.trace.ev", ev)
		h.waitEvents("ev", map[string]int64{"scored": 2})
		checkEvaluations(t, h.oneSpan(), with(recallPass, map[string]evaluation{
			"refusal":       {"0", "shipped", ""},
			"precision":     {"0", "fail", "no gold substring in the claim and no gold citation"},
			"containment":   fail,
			"citation_hit":  fail,
			"coverage":      fail,
			"delta_s_cited": {"0.7", "risk", ""},
		}))
	})
	t.Run("over-refusal", func(t *testing.T) {
		ev := goodTrace("A1")
		ev.Answer = &answer{Claim: " Not in context ", Citations: []string{}}
		h.PublishJSON("rag.trace.ev", ev)
		h.waitEvents("ev", map[string]int64{"scored": 3})
		checkEvaluations(t, h.oneSpan(), with(recallPass, map[string]evaluation{
			"refusal":      {"1", "refused", "over-refusal: the gold item is answerable"},
			"containment":  fail,
			"citation_hit": fail,
			"coverage":     fail,
		}))
	})
	t.Run("under-refusal", func(t *testing.T) {
		ev := goodTrace("U1")
		ev.Answer = &answer{Claim: "Bob wrote it.", Citations: []string{}}
		h.PublishJSON("rag.trace.ev", ev)
		h.waitEvents("ev", map[string]int64{"scored": 4})
		checkEvaluations(t, h.oneSpan(), map[string]evaluation{
			"refusal":      {"0", "shipped", "under-refusal: the gold item is not answerable"},
			"precision":    {"0", "fail", "the gold item is not answerable"},
			"containment":  pass, // vacuous: no gold substrings
			"citation_hit": pass, // no gold citations, none cited
		})
	})
	t.Run("late", func(t *testing.T) {
		ev := mustJSON(t, map[string]any{
			"qid": "A1", "ts": clockBase.Add(-2 * time.Hour).Format(time.RFC3339),
			"retrieved_ids": []string{"p1#1"},
			"answer_json":   map[string]any{"claim": "Alpha rejects null keys.", "citations": []string{"p1#1"}},
		})
		h.Publish("rag.trace.ev", ev)
		h.waitEvents("ev", map[string]int64{"scored": 4, "late": 1})
		s := h.oneSpan()
		checkAttrs(t, s, map[string]string{"shadoweval.outcome": "late", "shadoweval.qid": "A1"})
		if got := evaluations(t, s); got["precision"] != pass {
			t.Errorf("late event: precision %+v, want %+v (all: %v)", got["precision"], pass, got)
		}
	})
	t.Run("unlabeled", func(t *testing.T) {
		h.PublishJSON("rag.trace.ev", goodTrace("N1"))
		h.waitEvents("ev", map[string]int64{"scored": 4, "late": 1, "unlabeled": 1})
		s := h.oneSpan()
		checkAttrs(t, s, map[string]string{"shadoweval.outcome": "unlabeled", "shadoweval.qid": "N1", "shadoweval.content_type": ""})
		checkEvaluations(t, s, nil)
	})
	t.Run("rejected", func(t *testing.T) {
		h.publishMsg("rag.trace.ev", []byte(`{"qid":`), nats.Header{"traceparent": {traceparent("01")}})
		h.waitEvents("ev", map[string]int64{"scored": 4, "late": 1, "unlabeled": 1, "rejected": 1})
		s := h.oneSpan()
		checkAttrs(t, s, map[string]string{
			"shadoweval.outcome": "rejected", "shadoweval.reason": sidecar.ReasonInvalidJSON,
			"error.type": sidecar.ReasonInvalidJSON, "shadoweval.arm": "ev", "shadoweval.qid": "",
		})
		if s.Status.Code != codes.Error || s.Status.Description != sidecar.ReasonInvalidJSON {
			t.Errorf("status %+v, want error %q", s.Status, sidecar.ReasonInvalidJSON)
		}
		if s.Parent.SpanID().String() != parentSpanID {
			t.Errorf("parent %s, want %s", s.Parent.SpanID(), parentSpanID)
		}
		checkEvaluations(t, s, nil)
	})
	t.Run("bounded qid", func(t *testing.T) {
		long := strings.Repeat("é", 200) // 400 bytes
		h.PublishJSON("rag.trace.ev", event{QID: long})
		h.waitEvents("ev", map[string]int64{"scored": 4, "late": 1, "unlabeled": 2, "rejected": 1})
		qid := attrMap(h.oneSpan().Attributes)["shadoweval.qid"]
		if len(qid) > 128 || !strings.HasPrefix(long, qid) || len(qid) < 120 {
			t.Errorf("qid attribute of %d bytes (%q), want a prefix of at most 128 bytes", len(qid), qid)
		}
	})
}

// TestTracingOff: without an endpoint or a provider, tracing is off: the
// app uses no tracer (not even the global one) and its hooks allocate
// nothing.
func TestTracingOff(t *testing.T) {
	clearOTELEnv(t)
	rec := tracetest.NewSpanRecorder()
	global := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(global) })

	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) { c.Tracing.SampleRatio = 1 }})
	if h.Sidecar.TracingOn() {
		t.Fatal("tracing is on without an endpoint")
	}
	h.publishMsg("rag.trace.off", mustJSON(t, goodTrace("A1")), nats.Header{"traceparent": {traceparent("01")}})
	h.Publish("rag.trace.off", []byte(`{"qid":`))
	h.waitEvents("off", map[string]int64{"scored": 1, "rejected": 1})
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans started with tracing off", n)
	}

	m := &stream.Message{Kind: wire.KindTrace, Subject: "rag.trace.off", Header: nats.Header{"Traceparent": {traceparent("01")}}}
	e := &wire.TraceEvent{QID: "A1", Arm: "off"}
	o := &window.Observation{HasAnswer: true, HasRetrieval: true, Triage: -1}
	if allocs := testing.AllocsPerRun(100, func() { h.Sidecar.TraceHooks(m, e, o) }); allocs != 0 {
		t.Errorf("tracing hooks allocate %v times per event with tracing off", allocs)
	}
}

// TestTracingTracerProvider: a provider given in Options gets the spans,
// with its own sampling, and the app leaves it running when it stops.
func TestTracingTracerProvider(t *testing.T) {
	clearOTELEnv(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	t.Run("app", func(t *testing.T) {
		h := startApp(t, appOptions{
			goldFile:  "testdata/gold_v1.jsonl",
			configure: func(c *config.Config) { c.Tracing.SampleRatio = 0 },
			options:   func(o *sidecar.Options) { o.TracerProvider = tp },
		})
		h.PublishJSON("rag.trace.tp", goodTrace("A1"))
		h.waitEvents("tp", map[string]int64{"scored": 1})
	}) // the app has stopped
	if n := len(exp.GetSpans()); n != 1 {
		t.Fatalf("%d spans, want 1", n)
	}
	_, s := tp.Tracer("t").Start(context.Background(), "after")
	s.End()
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("the provider given stopped with the app: %d spans, want 2", n)
	}
}

// otlpSink is an OTLP/HTTP receiver that keeps what it is sent.
type otlpSink struct {
	mu   sync.Mutex
	reqs []otlpRequest
}

type otlpRequest struct {
	path, contentType string
	body              []byte
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, otlpRequest{r.URL.Path, r.Header.Get("Content-Type"), body})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (s *otlpSink) requests() []otlpRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]otlpRequest(nil), s.reqs...)
}

// TestTracingOTLPExport: with an endpoint from the config or the
// environment, spans go over OTLP/HTTP to <endpoint>/v1/traces, and Stop
// flushes them (the batch processor's timer is 5 s: only the flush can have
// sent them by the time Stop returns).
func TestTracingOTLPExport(t *testing.T) {
	for _, from := range []string{"config", "env"} {
		t.Run(from, func(t *testing.T) {
			clearOTELEnv(t)
			sink := &otlpSink{}
			srv := httptest.NewServer(sink)
			t.Cleanup(srv.Close)
			if from == "env" {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
			}
			// Cleanups run last-in first-out: this one runs after the app
			// started below has stopped.
			t.Cleanup(func() {
				reqs := sink.requests()
				if len(reqs) == 0 {
					t.Error("nothing exported by the time Stop returned")
					return
				}
				traceID, _ := hex.DecodeString(parentTraceID)
				r := reqs[0]
				if r.path != "/v1/traces" || r.contentType != "application/x-protobuf" {
					t.Errorf("export to %s as %s, want /v1/traces as application/x-protobuf", r.path, r.contentType)
				}
				if !bytes.Contains(r.body, []byte(sidecar.SpanName)) || !bytes.Contains(r.body, traceID) {
					t.Errorf("the export does not hold the span %q of trace %s", sidecar.SpanName, parentTraceID)
				}
			})
			h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
				c.Tracing.SampleRatio = 0
				if from == "config" {
					c.Tracing.Endpoint = srv.URL
				}
			}})
			if !h.Sidecar.TracingOn() {
				t.Fatal("tracing is off with an endpoint")
			}
			h.publishMsg("rag.trace.otlp", mustJSON(t, goodTrace("A1")), nats.Header{"traceparent": {traceparent("01")}})
			h.waitEvents("otlp", map[string]int64{"scored": 1})
		})
	}
}
