package sidecar_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/shadoweval/shadoweval/testenv"
)

// gatherAndCount counts the series of the named families in g, as
// testutil.GatherAndCount does (testutil itself needs a module go.mod does
// not list, github.com/kylelemons/godebug; its promlint does not).
func gatherAndCount(t testing.TB, g prometheus.Gatherer, names ...string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	n := 0
	for _, mf := range mfs {
		if len(names) == 0 || contains(names, mf.GetName()) {
			n += len(mf.GetMetric())
		}
	}
	return n
}

// TestMetrics checks the Prometheus series of SPEC §6 after a replay, on a
// pedantic registry: names, labels and types, counters against the
// windows API, the native ΔS histogram, no value sample for a metric with
// no value, and promlint.
func TestMetrics(t *testing.T) {
	t.Parallel()
	const items = 400
	ds := writeDataSet(t, 11, items, 0.8)
	reg := prometheus.NewPedanticRegistry()
	h := startApp(t, appOptions{goldFile: ds.gold, registry: reg})

	h.replay(ds.trace, "rag.trace.live")
	h.Publish("rag.trace.live", []byte(`{"qid":"not-in-gold","answer_json":{"claim":"x"}}`))
	h.Publish("rag.trace.live", []byte(`{"qid":`))
	h.PublishJSON("rag.retrieval.live", event{QID: "A000001", RequestID: "waiting", RetrievedIDs: []string{"p1#1"}})
	rep := h.waitEvents("live", map[string]int64{"scored": items, "unlabeled": 1, "rejected": 1})
	h.waitPending(1)
	// Latency is observed once the event is applied: wait for the last.
	h.WaitMetric("shadoweval_processing_seconds", map[string]string{"kind": "trace"}, items+2)

	fams := h.Scrape()
	wantFamilies := []struct {
		name   string
		typ    dto.MetricType
		labels string
	}{
		{"shadoweval_events_total", dto.MetricType_COUNTER, "arm,kind,outcome"},
		{"shadoweval_rejected_events_total", dto.MetricType_COUNTER, "reason"},
		{"shadoweval_metric_numerator_total", dto.MetricType_COUNTER, "arm,metric"},
		{"shadoweval_metric_denominator_total", dto.MetricType_COUNTER, "arm,metric"},
		{"shadoweval_delta_s", dto.MetricType_HISTOGRAM, "arm,which"},
		{"shadoweval_window_value", dto.MetricType_GAUGE, "arm,metric,window"},
		{"shadoweval_window_samples", dto.MetricType_GAUGE, "arm,metric,window"},
		{"shadoweval_gold_items", dto.MetricType_GAUGE, ""},
		{"shadoweval_gold_last_reload_successful", dto.MetricType_GAUGE, ""},
		{"shadoweval_gold_reloads_total", dto.MetricType_COUNTER, "result"},
		{"shadoweval_join_pending", dto.MetricType_GAUGE, ""},
		{"shadoweval_processing_seconds", dto.MetricType_HISTOGRAM, "kind"},
	}
	for _, w := range wantFamilies {
		f, ok := fams[w.name]
		if !ok {
			t.Errorf("/metrics has no %s", w.name)
			continue
		}
		if f.GetType() != w.typ {
			t.Errorf("%s is a %v, want a %v", w.name, f.GetType(), w.typ)
		}
		if got := testenv.LabelNames(f); got != w.labels {
			t.Errorf("%s has labels {%s}, want {%s}", w.name, got, w.labels)
		}
	}

	// Event counters match the windows API.
	for outcome, n := range map[string]float64{"scored": items, "unlabeled": 1, "rejected": 1} {
		h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "trace", "arm": "live", "outcome": outcome}, n)
	}
	h.CheckMetric("shadoweval_rejected_events_total", map[string]string{"reason": "invalid_json"}, 1)
	h.CheckMetric("shadoweval_gold_items", nil, items)
	h.CheckMetric("shadoweval_join_pending", nil, 1)
	h.CheckMetric("shadoweval_processing_seconds", map[string]string{"kind": "retrieval"}, 1)

	// Numerators and denominators add up to the window's proportions.
	ks := []string{"recall_at_1", "recall_at_3", "recall_at_5", "recall_at_10"}
	for _, name := range append([]string{"precision", "chr", "under_refusal", "over_refusal", "coverage", "citation_accuracy"}, ks...) {
		lbl := map[string]string{"arm": "live", "metric": name}
		num, okN := fams.Series("shadoweval_metric_numerator_total", lbl)
		den, okD := fams.Series("shadoweval_metric_denominator_total", lbl)
		if !okN || !okD {
			t.Errorf("no numerator/denominator series for %s", name)
			continue
		}
		m := metric(t, rep, name)
		if testenv.SampleValue(den) != float64(m.Samples) {
			t.Errorf("%s: denominator counter %v, window samples %d", name, testenv.SampleValue(den), m.Samples)
		}
		if m.Samples > 0 && (m.Value == nil || testenv.SampleValue(num)/testenv.SampleValue(den) != *m.Value) {
			t.Errorf("%s: counters give %v/%v, window %s", name, testenv.SampleValue(num), testenv.SampleValue(den), fmtValue(m))
		}
		// The window gauges say the same.
		wl := map[string]string{"arm": "live", "window": "5m", "metric": name}
		if s, ok := fams.Series("shadoweval_window_samples", wl); !ok || testenv.SampleValue(s) != float64(m.Samples) {
			t.Errorf("shadoweval_window_samples%v missing or not %d", wl, m.Samples)
		}
		if v, ok := fams.Series("shadoweval_window_value", wl); m.Value != nil && (!ok || testenv.SampleValue(v) != *m.Value) {
			t.Errorf("shadoweval_window_value%v missing or not %v", wl, *m.Value)
		}
	}
	if samples(t, rep, "precision") < 300 {
		t.Fatalf("precision has only %d samples", samples(t, rep, "precision"))
	}

	// A metric with no value exports its sample count and no value.
	for _, name := range []string{"agreement", "kappa", "lambda_convergence", "triage_ok"} {
		wl := map[string]string{"arm": "live", "window": "5m", "metric": name}
		if m := metric(t, rep, name); m.Value != nil {
			t.Fatalf("%s has a value %v: pick a metric without one", name, *m.Value)
		}
		if s, ok := fams.Series("shadoweval_window_samples", wl); !ok || testenv.SampleValue(s) != 0 {
			t.Errorf("shadoweval_window_samples%v: want a 0 sample", wl)
		}
		if v, ok := fams.Series("shadoweval_window_value", wl); ok {
			t.Errorf("shadoweval_window_value%v = %v exported for a metric with no value", wl, testenv.SampleValue(v))
		}
	}

	// The ΔS histogram is a native one: scrape it as Prometheus does, in
	// the protobuf format, where the native buckets are.
	code, header, body := h.Do(http.MethodGet, "/metrics", http.Header{"Accept": {
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}}, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics (protobuf): %d", code)
	}
	dec := expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.ResponseFormat(header))
	counts := map[string]uint64{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		if mf.GetName() != "shadoweval_delta_s" {
			continue
		}
		for _, m := range mf.GetMetric() {
			hist := m.GetHistogram()
			which := ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "which" {
					which = lp.GetValue()
				}
			}
			if hist.Schema == nil || len(hist.GetPositiveSpan()) == 0 {
				t.Errorf("shadoweval_delta_s{which=%q} has no native buckets (schema %v, %d spans)", which, hist.Schema, len(hist.GetPositiveSpan()))
			}
			counts[which] = hist.GetSampleCount()
		}
	}
	if got, want := counts["cited"], samples(t, rep, "delta_s_median"); got != uint64(want) {
		t.Errorf("shadoweval_delta_s{which=cited} counts %d values, the window %d", got, want)
	}
	if got, want := counts["retrieved"], samples(t, rep, "delta_s_retrieved_median"); got != uint64(want) {
		t.Errorf("shadoweval_delta_s{which=retrieved} counts %d values, the window %d", got, want)
	}

	// OpenMetrics is offered too.
	code, header, body = h.Do(http.MethodGet, "/metrics", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0"}}, "", "")
	if code != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "application/openmetrics-text") ||
		!strings.HasSuffix(string(body), "# EOF\n") {
		t.Errorf("GET /metrics with OpenMetrics accepted: %d %q, ends %q", code, header.Get("Content-Type"), tail(body))
	}

	// The pedantic registry gathers cleanly and passes promlint.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("pedantic gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	// Known and explained: promlint reads the "_s" of delta_s as an
	// abbreviated unit (seconds); ΔS is a unitless distance.
	explained := map[string]string{"shadoweval_delta_s": "abbreviated units"}
	for _, p := range problems {
		if why, ok := explained[p.Metric]; ok && strings.Contains(p.Text, why) {
			t.Logf("promlint (explained): %s: %s", p.Metric, p.Text)
			continue
		}
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if n := gatherAndCount(t, reg, "shadoweval_window_value"); n < 20 {
		t.Errorf("%d shadoweval_window_value series, want every valued metric of both windows", n)
	}
	nv, ns := gatherAndCount(t, reg, "shadoweval_window_value"), gatherAndCount(t, reg, "shadoweval_window_samples")
	if nv >= ns {
		t.Errorf("%d window values for %d sample counts: metrics without a value must export none", nv, ns)
	}
	if n := gatherAndCount(t, reg, "shadoweval_window_samples"); n != 2*len(rep.Metrics) {
		t.Errorf("%d shadoweval_window_samples series, want %d (every metric of 2 windows of arm live)", n, 2*len(rep.Metrics))
	}
}

func tail(b []byte) string {
	if len(b) > 40 {
		b = b[len(b)-40:]
	}
	return fmt.Sprintf("%q", b)
}
