package sidecar

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// appMetrics are the Prometheus series of SPEC §6. The per-event ones are
// kept in tallies (tally.go), one per ingest goroutine plus one for
// everything else (expiry, tests), and summed at scrape time.
type appMetrics struct {
	rejected       *prometheus.CounterVec // reason
	goldItems      prometheus.Gauge
	goldReloads    *prometheus.CounterVec // result
	goldOK         prometheus.Gauge
	goldLast       prometheus.Gauge
	goldKVRejected *prometheus.CounterVec // reason
	deadLetters    *prometheus.CounterVec // result
	slowDrops      prometheus.Counter
	disconnects    prometheus.Counter

	tallies []*tally
	ks      []int     // the cut-offs the tallies count recall at
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
		rejected:       counterVec("shadoweval_rejected_events_total", "Events rejected, by reason.", "reason"),
		goldItems:      gauge("shadoweval_gold_items", "Gold items (distinct qids) in force."),
		goldReloads:    counterVec("shadoweval_gold_reloads_total", "Gold reload attempts, by result.", "result"),
		goldOK:         gauge("shadoweval_gold_last_reload_successful", "Whether the last gold reload attempt succeeded."),
		goldLast:       gauge("shadoweval_gold_last_reload_success_timestamp_seconds", "Time of the last successful gold load."),
		goldKVRejected: counterVec("shadoweval_gold_kv_rejected_values_total", "Values of the gold.kv_bucket KV bucket refused, by reason; such a key has no gold item from the bucket.", "reason"),
		deadLetters:    counterVec("shadoweval_deadletter_messages_total", "Rejected events published to the dead-letter subject, by result.", "result"),
		slowDrops:      counter("shadoweval_nats_slow_consumer_events_total", "Slow-consumer episodes reported by the NATS client."),
		disconnects:    counter("shadoweval_nats_disconnects_total", "Times the NATS connection was lost."),
		ks:             ks,
		created:        time.Now(),
	}
	for range max(tallies, 1) {
		m.tallies = append(m.tallies, newTally(ks))
	}
	for _, r := range []string{"success", "failure"} {
		m.goldReloads.WithLabelValues(r)
		m.deadLetters.WithLabelValues(r)
	}
	reg.MustRegister(m.rejected, m.goldItems, m.goldReloads, m.goldOK, m.goldLast, m.goldKVRejected, m.deadLetters, m.slowDrops, m.disconnects,
		newTallyCollector(m))
	return m
}

func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func counterVec(name, help, label string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// tally is the tally of ingest goroutine worker; any other index (-1: not
// an ingest goroutine) gets the shared last one.
func (m *appMetrics) tally(worker int) *tally {
	if worker < 0 || worker >= len(m.tallies)-1 {
		return m.tallies[len(m.tallies)-1]
	}
	return m.tallies[worker]
}

// record counts the end of one message's path (seconds < 0: of a half no
// message delivered): n events of (kind, arm) with outcome out (n 0:
// none yet); o, an observation the windows accepted (nil: none), with its
// numerators and denominators (the windows' own counters), ΔS and its lag
// (< 0: the event had no ts); and the message's processing time.
func (t *tally) record(kind wire.Kind, arm string, out vocab.Outcome, n uint64, o *window.Observation, lag, seconds float64) {
	if kind < 0 || kind >= wire.NumKinds || out < 0 || int(out) >= vocab.NumOutcomes {
		return // not a kind or outcome of this build: nothing makes one
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > 0 {
		t.arm(arm).events[kind][out] += n
	}
	if seconds >= 0 {
		t.processing[kind].observe(processingBounds, seconds)
	}
	if o == nil {
		return
	}
	if lag >= 0 {
		t.lag.observe(lagBounds, lag)
	}
	c := t.arm(o.Arm)
	c.observed = true
	c.counts.Add(o)
	if o.HasAnswer && o.Shipped && o.HasDeltaSCited {
		c.dsCited.observe(o.DeltaSCited)
	}
	for _, ds := range o.DeltaSRetrieved {
		c.dsRetr.observe(ds)
	}
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
	sum := newTally(c.m.ks)
	for _, t := range c.m.tallies {
		t.mu.Lock()
		for arm, at := range t.arms {
			s := sum.arm(arm)
			s.created = earliest(s.created, at.created)
			for k := range at.events {
				for o, n := range at.events[k] {
					s.events[k][o] += n
				}
			}
			s.observed = s.observed || at.observed
			s.counts.Merge(at.counts)
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
						wire.Kind(k).String(), arm, vocab.Outcome(o).String())
				}
			}
		}
		if !s.observed {
			continue
		}
		for p := range s.counts.Proportions() {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.num, prometheus.CounterValue, float64(p.Num), s.created, arm, p.Name)
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(c.den, prometheus.CounterValue, float64(p.Den), s.created, arm, p.Name)
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
			ch <- prometheus.MustNewConstHistogramWithCreatedTimestamp(c.processing, h.count, h.sum, h.cumulative(processingBounds), h.created, wire.Kind(k).String())
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
