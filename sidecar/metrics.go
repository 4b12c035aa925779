package sidecar

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// appMetrics are the Prometheus series of SPEC §6. The per-event ones are
// kept in tallies (tally.go), one per ingest goroutine plus one for
// everything else (expiry, tests), and summed at scrape time.
type appMetrics struct {
	rejected    *prometheus.CounterVec // reason
	goldItems   prometheus.Gauge
	goldReloads *prometheus.CounterVec // result
	goldOK      prometheus.Gauge
	goldLast    prometheus.Gauge
	deadLetters *prometheus.CounterVec // result
	slowDrops   prometheus.Counter
	disconnects prometheus.Counter

	tallies []*tally
	metricK []string  // per-event proportion metrics, in counter index order
	created time.Time // of the series that exist from the start
}

var (
	processingBounds = prometheus.ExponentialBuckets(1e-6, 4, 10)
	lagBounds        = prometheus.ExponentialBucketsRange(50e-6, 120, 64)
)

// newAppMetrics registers the series; tallies is how many ingest
// goroutines keep their own (the last tally is shared by the rest).
func newAppMetrics(reg prometheus.Registerer, ks []int, tallies int) *appMetrics {
	m := &appMetrics{
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_rejected_events_total", Help: "Events rejected, by reason.",
		}, []string{"reason"}),
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
		created: time.Now(),
	}
	for range max(tallies, 1) {
		m.tallies = append(m.tallies, newTally())
	}
	for _, r := range []string{"success", "failure"} {
		m.goldReloads.WithLabelValues(r)
		m.deadLetters.WithLabelValues(r)
	}
	reg.MustRegister(m.rejected, m.goldItems, m.goldReloads, m.goldOK, m.goldLast, m.deadLetters, m.slowDrops, m.disconnects,
		newTallyCollector(m))
	return m
}

// proportionMetricNames are the per-event proportions counted in the
// numerator/denominator series, in the order observationCounts yields.
func proportionMetricNames(ks []int) []string {
	names := []string{"precision", "chr", "under_refusal", "over_refusal", "coverage", "citation_accuracy"}
	for _, k := range ks {
		names = append(names, "recall_at_"+itoa(k))
	}
	for _, l := range vocab.TriageLabels {
		names = append(names, "triage_"+l)
	}
	return names
}

// tally is the tally of ingest goroutine worker; any other index (-1: not
// an ingest goroutine) gets the shared last one.
func (m *appMetrics) tally(worker int) *tally {
	if worker < 0 || worker >= len(m.tallies)-1 {
		return m.tallies[len(m.tallies)-1]
	}
	return m.tallies[worker]
}

// event counts one event of (kind, arm) with outcome o.
func (t *tally) event(kind stream.Kind, arm string, o vocab.Outcome, nMetrics int) {
	if kind < 0 || kind >= stream.NumKinds || o < 0 || int(o) >= len(vocab.Outcomes) {
		return // not a kind or outcome of this build: nothing makes one
	}
	t.mu.Lock()
	t.arm(arm, nMetrics).events[kind][o]++
	t.mu.Unlock()
}

// scored counts one scored observation: its outcome, the numerators and
// denominators (the same as the windows'), ΔS and the lag (lag < 0: the
// event had no ts).
func (t *tally) scored(kind stream.Kind, o *window.Observation, nk, nMetrics int, lag float64, count bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.arm(o.Arm, nMetrics)
	if count && kind >= 0 && kind < stream.NumKinds {
		c.events[kind][vocab.Scored]++
	}
	if lag >= 0 {
		t.lag.observe(lagBounds, lag)
	}
	c.observed = true
	add := func(i int, inDen, inNum bool) {
		if inDen {
			c.den[i]++
			if inNum {
				c.num[i]++
			}
		}
	}
	if o.HasAnswer {
		add(0, o.Shipped, o.Answerable && o.Contained && o.Hit)
		add(1, o.Shipped, o.Answerable && o.Hit)
		add(2, !o.Answerable, o.Shipped)
		add(3, o.Answerable, !o.Shipped)
		add(4, o.CoverageEligible, o.Covered)
		add(5, o.CitationAccEligible, o.CitationAccurate)
		if o.Shipped && o.HasDeltaSCited {
			c.dsCited.observe(o.DeltaSCited)
		}
	}
	if o.HasRetrieval {
		for i := 0; i < nk; i++ {
			add(6+i, o.Answerable, o.RecallStrict&(1<<i) != 0)
		}
	}
	if o.Triage >= 0 {
		for i := range vocab.TriageLabels {
			add(6+nk+i, true, i == o.Triage)
		}
	}
	for _, ds := range o.DeltaSRetrieved {
		c.dsRetr.observe(ds)
	}
}

// processed observes the time one message of kind took.
func (t *tally) processed(kind stream.Kind, seconds float64) {
	if kind < 0 || kind >= stream.NumKinds {
		return
	}
	t.mu.Lock()
	t.processing[kind].observe(processingBounds, seconds)
	t.mu.Unlock()
}

// tallyCollector exports the sum of the tallies.
type tallyCollector struct {
	m                    *appMetrics
	events, num, den, ds *prometheus.Desc
	processing, lag      *prometheus.Desc
}

func newTallyCollector(m *appMetrics) *tallyCollector {
	return &tallyCollector{
		m:      m,
		events: prometheus.NewDesc("shadoweval_events_total", "Events received, by kind, arm and outcome.", []string{"kind", "arm", "outcome"}, nil),
		num: prometheus.NewDesc("shadoweval_metric_numerator_total",
			"Numerator of each proportion metric, summed over scored events; divide rates to aggregate replicas.", []string{"arm", "metric"}, nil),
		den: prometheus.NewDesc("shadoweval_metric_denominator_total",
			"Denominator of each proportion metric, summed over scored events.", []string{"arm", "metric"}, nil),
		ds: prometheus.NewDesc("shadoweval_delta_s",
			"ΔS of scored events: of the cited item (which=cited) and of every top-k item (which=retrieved).", []string{"arm", "which"}, nil),
		processing: prometheus.NewDesc("shadoweval_processing_seconds", "Time from receiving an event to applying it to the windows.", []string{"kind"}, nil),
		lag: prometheus.NewDesc("shadoweval_event_lag_seconds",
			"Time from an event's ts to its addition to the windows (events that carry ts and are scored).", nil, nil),
	}
}

func (c *tallyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.events, c.num, c.den, c.ds, c.processing, c.lag} {
		ch <- d
	}
}

func (c *tallyCollector) Collect(ch chan<- prometheus.Metric) {
	nMetrics := len(c.m.metricK)
	sum := &tally{arms: map[string]*armTally{}}
	for _, t := range c.m.tallies {
		t.mu.Lock()
		for arm, at := range t.arms {
			s := sum.arm(arm, nMetrics)
			s.created = earliest(s.created, at.created)
			for k := range at.events {
				for o, n := range at.events[k] {
					s.events[k][o] += n
				}
			}
			s.observed = s.observed || at.observed
			for i := range at.num {
				s.num[i] += at.num[i]
				s.den[i] += at.den[i]
			}
			s.dsCited.merge(&at.dsCited)
			s.dsRetr.merge(&at.dsRetr)
		}
		for k := range t.processing {
			sum.processing[k].merge(&t.processing[k])
		}
		sum.lag.merge(&t.lag)
		t.mu.Unlock()
	}
	for arm, s := range sum.arms {
		for k := range s.events {
			for o, n := range s.events[k] {
				if n > 0 {
					ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.events, prometheus.CounterValue, float64(n), s.created,
						stream.Kind(k).String(), arm, vocab.Outcome(o).String())
				}
			}
		}
		if !s.observed {
			continue
		}
		for i, name := range c.m.metricK {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.num, prometheus.CounterValue, float64(s.num[i]), s.created, arm, name)
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.den, prometheus.CounterValue, float64(s.den[i]), s.created, arm, name)
		}
		for _, h := range []struct {
			which string
			hist  *deltaSHist
		}{{"cited", &s.dsCited}, {"retrieved", &s.dsRetr}} {
			m, err := h.hist.metric(c.ds, s.created, arm, h.which)
			if err != nil {
				m = prometheus.NewInvalidMetric(c.ds, err)
			}
			ch <- m
		}
	}
	for k := range sum.processing {
		if h := &sum.processing[k]; h.count > 0 {
			ch <- prometheus.MustNewConstHistogramWithCreatedTimestamp(c.processing, h.count, h.sum, h.cumulative(processingBounds), h.created, stream.Kind(k).String())
		}
	}
	ch <- prometheus.MustNewConstHistogramWithCreatedTimestamp(c.lag, sum.lag.count, sum.lag.sum, sum.lag.cumulative(lagBounds), earliest(sum.lag.created, c.m.created))
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
