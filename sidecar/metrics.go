package sidecar

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
)

// appMetrics are the Prometheus series of SPEC §6.
type appMetrics struct {
	events      *prometheus.CounterVec // kind, arm, outcome
	rejected    *prometheus.CounterVec // reason
	numerator   *prometheus.CounterVec // arm, metric
	denominator *prometheus.CounterVec // arm, metric
	deltaS      *prometheus.HistogramVec
	processing  *prometheus.HistogramVec
	lag         prometheus.Histogram
	goldItems   prometheus.Gauge
	goldReloads *prometheus.CounterVec // result
	goldOK      prometheus.Gauge
	goldLast    prometheus.Gauge
	deadLetters *prometheus.CounterVec // result
	slowDrops   prometheus.Counter
	disconnects prometheus.Counter

	// The hot path reads these caches without locks: each map is replaced
	// whole (under mu) when an arm is added, and arms are capped.
	mu        sync.Mutex
	perArm    atomic.Pointer[map[string]*armCounters]
	armEvents atomic.Pointer[map[string]*armEventCounters]
	processed [stream.NumKinds]atomic.Pointer[observerBox]
	metricK   []string // per-event proportion metrics, in counter index order
}

// armEventCounters caches one arm's shadoweval_events_total children. They
// are made on first use, as WithLabelValues would, so no series appears
// before its first event.
type armEventCounters struct {
	arm string
	c   [stream.NumKinds][len(window.Outcomes)]atomic.Pointer[counterBox]
}

type counterBox struct{ prometheus.Counter }

type observerBox struct{ prometheus.Observer }

// armCounters caches one arm's counter children so the hot path does no
// label hashing.
type armCounters struct {
	num, den []prometheus.Counter
	dsCited  prometheus.Observer
	dsRetr   prometheus.Observer
}

func newAppMetrics(reg prometheus.Registerer, ks []int) *appMetrics {
	nativeHist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: buckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, labels)
	}
	m := &appMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_events_total", Help: "Events received, by kind, arm and outcome.",
		}, []string{"kind", "arm", "outcome"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_rejected_events_total", Help: "Events rejected, by reason.",
		}, []string{"reason"}),
		numerator: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_metric_numerator_total", Help: "Numerator of each proportion metric, summed over scored events; divide rates to aggregate replicas.",
		}, []string{"arm", "metric"}),
		denominator: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_metric_denominator_total", Help: "Denominator of each proportion metric, summed over scored events.",
		}, []string{"arm", "metric"}),
		deltaS: nativeHist("shadoweval_delta_s", "ΔS of scored events: of the cited item (which=cited) and of every top-k item (which=retrieved).",
			[]float64{0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.85, 1}, "arm", "which"),
		processing: nativeHist("shadoweval_processing_seconds", "Time from receiving an event to applying it to the windows.",
			prometheus.ExponentialBuckets(1e-6, 4, 10), "kind"),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shadoweval_event_lag_seconds", Help: "Time from an event's ts to its addition to the windows (events that carry ts and are scored).",
			Buckets:                         prometheus.ExponentialBucketsRange(50e-6, 120, 64),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		goldItems: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shadoweval_gold_items", Help: "Gold items (distinct qids) in force.",
		}),
		goldReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_gold_reloads_total", Help: "Gold reload attempts, by result.",
		}, []string{"result"}),
		goldOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shadoweval_gold_last_reload_successful", Help: "Whether the last gold reload attempt succeeded.",
		}),
		goldLast: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shadoweval_gold_last_reload_success_timestamp_seconds", Help: "Time of the last successful gold load.",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_deadletter_messages_total", Help: "Rejected events published to the dead-letter subject, by result.",
		}, []string{"result"}),
		slowDrops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shadoweval_nats_slow_consumer_events_total", Help: "Slow-consumer episodes reported by the NATS client.",
		}),
		disconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shadoweval_nats_disconnects_total", Help: "Times the NATS connection was lost.",
		}),
		metricK: proportionMetricNames(ks),
	}
	for _, r := range []string{"success", "failure"} {
		m.goldReloads.WithLabelValues(r)
		m.deadLetters.WithLabelValues(r)
	}
	reg.MustRegister(m.events, m.rejected, m.numerator, m.denominator, m.deltaS, m.processing, m.lag,
		m.goldItems, m.goldReloads, m.goldOK, m.goldLast, m.deadLetters, m.slowDrops, m.disconnects)
	return m
}

// proportionMetricNames are the per-event proportions counted in the
// numerator/denominator series, in the order observationCounts yields.
func proportionMetricNames(ks []int) []string {
	names := []string{"precision", "chr", "under_refusal", "over_refusal", "coverage", "citation_accuracy"}
	for _, k := range ks {
		names = append(names, "recall_at_"+itoa(k))
	}
	for _, l := range window.TriageLabels {
		names = append(names, "triage_"+l)
	}
	return names
}

func (m *appMetrics) arm(arm string) *armCounters {
	if p := m.perArm.Load(); p != nil {
		if c, ok := (*p)[arm]; ok {
			return c
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.perArm.Load()
	if old != nil {
		if c, ok := (*old)[arm]; ok {
			return c
		}
	}
	c := &armCounters{
		dsCited: m.deltaS.WithLabelValues(arm, "cited"),
		dsRetr:  m.deltaS.WithLabelValues(arm, "retrieved"),
	}
	for _, name := range m.metricK {
		c.num = append(c.num, m.numerator.WithLabelValues(arm, name))
		c.den = append(c.den, m.denominator.WithLabelValues(arm, name))
	}
	m.perArm.Store(withEntry(old, arm, c))
	return c
}

// withEntry is a copy of *old (nil: empty) with k set to v.
func withEntry[V any](old *map[string]V, k string, v V) *map[string]V {
	next := make(map[string]V, 1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = v
	return &next
}

// event is the shadoweval_events_total child of (kind, arm, outcome).
func (m *appMetrics) event(kind stream.Kind, arm string, o window.Outcome) prometheus.Counter {
	if kind < 0 || kind >= stream.NumKinds || o < 0 || int(o) >= len(window.Outcomes) {
		return m.events.WithLabelValues(kind.String(), arm, o.String())
	}
	var ac *armEventCounters
	if p := m.armEvents.Load(); p != nil {
		ac = (*p)[arm]
	}
	if ac == nil {
		m.mu.Lock()
		old := m.armEvents.Load()
		if old != nil {
			ac = (*old)[arm]
		}
		if ac == nil {
			ac = &armEventCounters{arm: arm}
			m.armEvents.Store(withEntry(old, arm, ac))
		}
		m.mu.Unlock()
	}
	slot := &ac.c[kind][o]
	if b := slot.Load(); b != nil {
		return b.Counter
	}
	// Racing goroutines get the same child from the vector.
	c := m.events.WithLabelValues(kind.String(), arm, o.String())
	slot.Store(&counterBox{c})
	return c
}

// processing is the shadoweval_processing_seconds child of kind.
func (m *appMetrics) processingOf(kind stream.Kind) prometheus.Observer {
	if kind < 0 || kind >= stream.NumKinds {
		return m.processing.WithLabelValues(kind.String())
	}
	slot := &m.processed[kind]
	if b := slot.Load(); b != nil {
		return b.Observer
	}
	h := m.processing.WithLabelValues(kind.String())
	slot.Store(&observerBox{h})
	return h
}

// observe adds one scored observation to the counters and histograms, with
// the same numerators and denominators as the windows.
func (m *appMetrics) observe(o *window.Observation, nk int) {
	c := m.arm(o.Arm)
	count := func(i int, inDen, inNum bool) {
		if inDen {
			c.den[i].Inc()
			if inNum {
				c.num[i].Inc()
			}
		}
	}
	if o.HasAnswer {
		count(0, o.Shipped, o.Answerable && o.Contained && o.Hit)
		count(1, o.Shipped, o.Answerable && o.Hit)
		count(2, !o.Answerable, o.Shipped)
		count(3, o.Answerable, !o.Shipped)
		count(4, o.CoverageEligible, o.Covered)
		count(5, o.CitationAccEligible, o.CitationAccurate)
		if o.Shipped && o.HasDeltaSCited {
			c.dsCited.Observe(o.DeltaSCited)
		}
	}
	if o.HasRetrieval {
		for i := 0; i < nk; i++ {
			count(6+i, o.Answerable, o.RecallStrict&(1<<i) != 0)
		}
	}
	if o.Triage >= 0 {
		for i := range window.TriageLabels {
			count(6+nk+i, true, i == o.Triage)
		}
	}
	for _, ds := range o.DeltaSRetrieved {
		c.dsRetr.Observe(ds)
	}
}

// windowCollector exports every window value and sample count at scrape
// time; a metric with no value exports no sample.
type windowCollector struct {
	win          *window.Windows
	now          func() time.Time
	value, count *prometheus.Desc
	names        []string
}

func newWindowCollector(win *window.Windows, now func() time.Time) *windowCollector {
	return &windowCollector{
		win: win, now: now,
		value: prometheus.NewDesc("shadoweval_window_value", "Current value of a window metric (SPEC §4).", []string{"arm", "window", "metric"}, nil),
		count: prometheus.NewDesc("shadoweval_window_samples", "Sample count behind a window metric.", []string{"arm", "window", "metric"}, nil),
		names: window.MetricNames(win.Ks()),
	}
}

func (c *windowCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.value
	ch <- c.count
}

func (c *windowCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, arm := range c.win.Arms() {
		for _, spec := range c.win.Specs() {
			snap, ok := c.win.Snapshot(arm, spec.Name, "", now)
			if !ok {
				continue
			}
			for _, name := range c.names {
				v, ok := snap.Metrics[name]
				if !ok {
					continue
				}
				ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(v.Samples), arm, spec.Name, name)
				if v.Valid {
					ch <- prometheus.MustNewConstMetric(c.value, prometheus.GaugeValue, v.Value, arm, spec.Name, name)
				}
			}
		}
	}
}
