package sidecar

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/sidecar/alert"
	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// gating evaluates the gates on a ticker and sends alerts on every change
// to firing or resolved.
type gating struct {
	engine   *gates.Engine
	alerts   *alert.Dispatcher
	interval time.Duration

	// onTransition, when set, sees every state change (the demo prints
	// them).
	onTransition func(gates.Transition)
}

func (a *App) newGating(onTransition func(gates.Transition)) error {
	eng := gates.New(a.cfg.Gates, a.win)
	disp, err := alert.New(alert.Options{
		Config: a.cfg.Alerting,
		Publish: func(subject string, v any) error {
			if a.pub == nil {
				return errNotConnected
			}
			return a.pub.PublishJSON(subject, v)
		},
		SubjectPrefix: a.cfg.Subjects.Alerts,
		Registerer:    a.reg,
		Logger:        a.log,
		Now:           a.now,
	})
	if err != nil {
		return err
	}
	// Evaluate as often as the finest window moves.
	interval := 10 * time.Second
	for _, w := range a.win.Specs() {
		interval = min(interval, w.Resolution)
	}
	a.gating = &gating{engine: eng, alerts: disp, interval: interval, onTransition: onTransition}
	a.reg.MustRegister(&gateCollector{engine: eng,
		state: prometheus.NewDesc("shadoweval_gate_state", "1 for the current state of a gate for an arm (inconclusive, ok, pending, firing, resolved).", []string{"gate", "arm", "window", "state"}, nil),
		value: prometheus.NewDesc("shadoweval_gate_value", "Value a gate judged for an arm (arm minus reference arm with compare_to).", []string{"gate", "arm", "window", "metric"}, nil),
		thr:   prometheus.NewDesc("shadoweval_gate_threshold", "Threshold of a gate.", []string{"gate", "window", "metric", "op"}, nil),
	})
	return nil
}

type notConnected struct{}

func (notConnected) Error() string { return "NATS not connected" }

var errNotConnected error = notConnected{}

// gateLoop runs the dispatcher, evaluates the gates and judges the
// analyses until ctx ends.
func (a *App) gateLoop(ctx context.Context) {
	g := a.gating
	a.goBackground(func() { g.alerts.Run(ctx) })
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		now := a.now()
		a.evaluateGates(now)
		a.tickAnalyses(ctx, now)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// evaluateGates runs one evaluation: alerts for changes to firing or
// resolved.
func (a *App) evaluateGates(now time.Time) {
	g := a.gating
	for _, tr := range g.engine.Evaluate(now) {
		if g.onTransition != nil {
			g.onTransition(tr)
		}
		al, ok := alert.Of(tr)
		if !ok {
			continue
		}
		g.alerts.Notify(al)
		a.log.Info("gate "+tr.State.String(), "gate", tr.Gate, "arm", tr.Arm, "window", tr.Window, "reason", tr.Reason)
	}
}

// Gates is the gate engine (for the demo and the status page).
func (a *App) Gates() *gates.Engine { return a.gating.engine }

// gateCollector exports the gate states and values at scrape time.
type gateCollector struct {
	engine            *gates.Engine
	state, value, thr *prometheus.Desc
}

func (c *gateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.value
	ch <- c.thr
}

func (c *gateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.engine.Gates() {
		ch <- prometheus.MustNewConstMetric(c.thr, prometheus.GaugeValue, g.Threshold, g.Name, g.Window, g.Metric, g.Op)
	}
	for _, r := range c.engine.Results("", "") {
		for _, s := range []gates.State{gates.Inconclusive, gates.OK, gates.Pending, gates.Firing, gates.Resolved} {
			v := 0.0
			if r.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, r.Gate, r.Arm, r.Window, s.String())
		}
		if r.Value != nil {
			ch <- prometheus.MustNewConstMetric(c.value, prometheus.GaugeValue, *r.Value, r.Gate, r.Arm, r.Window, r.Metric)
		}
	}
}
