package sidecar

// Canary analyses in the app (SPEC §5.2): the Manager gets every scored
// observation, the verdict endpoints answer from it, and a loop judges the
// analyses, publishes verdict changes on <subjects.verdicts>.<arm> and
// checkpoints them in the analysis.kv_bucket KV bucket.
//
// What a checkpoint holds depends on the mode. In JetStream mode it holds
// a running analysis' spec and end only: a restart replays the stream from
// the start of the oldest running analysis, so the accumulators come back
// the same as an uninterrupted run's. An ended one's, which the replay
// does not reach, are saved once it has ended, except in a cluster. With core NATS, which keeps nothing, it
// holds the accumulators too, written on every tick: a restart resumes from
// the last one, and the events of the gap between the checkpoint and the
// restart are lost as core NATS loses them; a clean stop writes a last
// checkpoint after draining, so that only kill -9 loses any.

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
)

// analyses is the app's side of the analysis Manager.
type analyses struct {
	m *analysis.Manager

	kvMu sync.Mutex // serialises checkpoints, so a stale one never lands last
	kv   *stream.KV // nil until Start opens it, or when it cannot be opened

	checkpointErrors prometheus.Counter
	truncated        atomic.Bool // a checkpoint left its open λ groups out (logged once)
	// onVerdict, when set, sees every verdict change (the demo prints them).
	onVerdict func(analysis.Result)
}

func (a *App) newAnalyses(onVerdict func(analysis.Result)) {
	an := &analyses{onVerdict: onVerdict}
	opt := analysis.Options{
		Config: a.cfg.Analysis, Ks: a.cfg.K, MinRuns: a.cfg.Lambda.MinRuns, Lateness: time.Duration(a.cfg.Window.MaxLateness),
		Persist: func(x *analysis.Analysis) { a.checkpoint(context.Background(), x) },
	}
	if a.cfg.Cluster.Clustered() {
		opt.StartDelay = time.Duration(a.cfg.Cluster.PublishInterval)
	}
	an.m = analysis.NewManager(opt)
	an.checkpointErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shadoweval_analysis_checkpoint_errors_total",
		Help: "Analysis checkpoints that could not be written to or read from the analysis.kv_bucket KV bucket.",
	})
	a.reg.MustRegister(an.checkpointErrors, newAnalysisCollector(an.m))
	a.analyses = an
}

// Analyses is the analysis Manager (for the demo and the status page).
func (a *App) Analyses() *analysis.Manager { return a.analyses.m }

// restoreAnalyses opens the KV bucket and restores every saved analysis.
// Without the bucket (a server with no JetStream) analyses still run, but
// do not survive a restart; that is logged and counted. A bucket refused
// for more replicas than the servers can hold is an error: nats.replicas
// is wrong.
func (a *App) restoreAnalyses(ctx context.Context) error {
	an := a.analyses
	bucket := a.cfg.Analysis.KVBucket
	kv, err := stream.OpenKV(ctx, a.nc, bucket, "shadoweval canary analyses", a.cfg.NATS.Replicas)
	if stream.TooFewServers(err) {
		return a.stores.refusal("analysis.kv_bucket "+bucket, err)
	}
	if err != nil {
		an.checkpointErrors.Inc()
		a.log.Warn("analysis checkpoints off: analyses will not survive a restart", "bucket", bucket, "err", err)
		return nil
	}
	a.stores.note("analysis_bucket", bucket, kv.Replicas())
	an.kvMu.Lock()
	an.kv = kv
	an.kvMu.Unlock()
	saved, err := kv.All(ctx)
	if err != nil {
		an.checkpointErrors.Inc()
		a.log.Warn("analysis checkpoints: some could not be read", "bucket", bucket, "err", err)
	}
	for id, data := range saved {
		s, err := analysis.DecodeSaved(data)
		if err != nil {
			an.checkpointErrors.Inc()
			a.log.Warn("analysis checkpoint unreadable; analysis dropped", "analysis", id, "err", err)
			continue
		}
		if err := an.m.Restore(s); err != nil {
			an.checkpointErrors.Inc()
			a.log.Warn("analysis checkpoint not restored", "analysis", id, "err", err)
			continue
		}
		a.log.Info("analysis restored", "analysis", id, "arm", s.Spec.Arm, "baseline", s.Spec.Baseline, "since", s.Spec.Start.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkpoint writes x to the KV bucket: its accumulators too with core
// NATS (see the top of this file). A checkpoint larger than the server
// takes in one message leaves out the λ groups still open, the bulk of it
// (one per qid seen): those runs then start new groups after a restart.
func (a *App) checkpoint(ctx context.Context, x *analysis.Analysis) {
	an := a.analyses
	an.kvMu.Lock()
	defer an.kvMu.Unlock()
	if an.kv == nil {
		return
	}
	modes := []analysis.SaveMode{analysis.SaveSpec}
	switch {
	case !a.cfg.NATS.JetStream:
		modes = []analysis.SaveMode{analysis.SaveAll, analysis.SaveClosedGroups}
	case !x.Running() && a.cluster == nil:
		// The replay starts at the oldest running analysis, so an ended
		// one comes back with its accumulators only from its checkpoint,
		// written once it has ended and nothing it holds changes; too
		// large for one message, its spec and end at least. In a cluster
		// every member writes the same key with its own part, so there
		// the spec and end are all a checkpoint can hold.
		modes = []analysis.SaveMode{analysis.SaveAll, analysis.SaveClosedGroups, analysis.SaveSpec}
	}
	limit := a.nc.MaxPayload() - 1024 // the KV's headers
	var err error
	for i, mode := range modes {
		var s analysis.Saved
		var data []byte
		if s, err = x.Save(mode); err != nil {
			break
		}
		if data, err = s.Encode(); err != nil {
			break
		}
		if int64(len(data)) > limit && i+1 < len(modes) {
			if modes[i+1] == analysis.SaveSpec {
				a.log.Warn("ended analysis too large for one NATS message with its accumulators: its checkpoint keeps its spec and end, and after a restart it reads without events", "analysis", x.Spec().ID, "bytes", len(data), "max_payload", a.nc.MaxPayload())
			} else if an.truncated.CompareAndSwap(false, true) {
				a.log.Warn("analysis checkpoints too large for one NATS message: the λ groups still open are left out", "analysis", x.Spec().ID, "bytes", len(data), "max_payload", a.nc.MaxPayload())
			}
			continue
		}
		err = an.kv.Put(ctx, s.Spec.ID, data)
		break
	}
	if err != nil && !stopped(ctx, err) {
		an.checkpointErrors.Inc()
		a.log.Warn("analysis checkpoint not written", "analysis", x.Spec().ID, "err", err)
	}
}

// stopped reports whether err is ctx's own cancellation: the tick loop's
// checkpoint cut short by a clean stop, which checkpointAll has written
// (or writes) with every event the sidecar took.
func stopped(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled)
}

// checkpointAll writes a last checkpoint of every running analysis on a
// clean stop, with core NATS, once the subscriptions have drained: a
// restart then resumes with every event this sidecar counted, not only
// those of the last tick.
func (a *App) checkpointAll(ctx context.Context) {
	if a.analyses == nil || a.cfg.NATS.JetStream {
		return
	}
	for _, x := range a.analyses.m.List() {
		if x.Running() {
			a.checkpoint(ctx, x)
		}
	}
}

// tickAnalyses judges the analyses at now: verdict changes are published,
// forgotten analyses leave the bucket, and with core NATS every running
// analysis is checkpointed.
func (a *App) tickAnalyses(ctx context.Context, now time.Time) {
	an := a.analyses
	changed, forgotten := an.m.Tick(now)
	for _, r := range changed {
		if an.onVerdict != nil {
			an.onVerdict(r)
		}
		a.log.Info("analysis verdict "+string(r.Verdict), "analysis", r.Analysis, "arm", r.Arm, "baseline", r.Baseline, "reason", r.Reason)
		if a.pub != nil {
			if err := a.pub.PublishJSON(a.cfg.Subjects.Verdicts+"."+r.Arm, r); err != nil {
				a.log.Warn("verdict not published", "analysis", r.Analysis, "arm", r.Arm, "err", err)
			}
		}
	}
	an.kvMu.Lock()
	kv := an.kv
	an.kvMu.Unlock()
	if kv == nil {
		return
	}
	for _, id := range forgotten {
		if err := kv.Delete(ctx, id); err != nil {
			an.checkpointErrors.Inc()
			a.log.Warn("analysis checkpoint not deleted", "analysis", id, "err", err)
		}
	}
	if !a.cfg.NATS.JetStream {
		for _, x := range an.m.List() {
			if x.Running() {
				a.checkpoint(ctx, x)
			}
		}
	}
}

func (a *App) analysisRoutes(mux *http.ServeMux) {
	h := &analysis.Handlers{M: a.analyses.m, Now: a.now, Admin: a.authorized, KnownArms: a.knownArms}
	if a.cluster != nil {
		h.Result = a.analysisResult
	}
	h.Register(mux)
}

// standardArms are known before any event names them (SPEC §6).
var standardArms = []string{"canary", "live", "shadow"}

// knownArms are the arms a verdict request may start an analysis for,
// sorted: live, shadow and canary, the arms the configuration names (a
// gate's arms and compare_to), every arm an event named (in a cluster,
// any member's), and the arms of the analyses there are.
func (a *App) knownArms() []string {
	set := map[string]bool{}
	for _, arm := range standardArms {
		set[arm] = true
	}
	for _, g := range a.cfg.Gates {
		for _, arm := range g.Arms {
			set[arm] = true
		}
		if g.CompareTo != "" {
			set[g.CompareTo] = true
		}
	}
	for _, arm := range a.ingest.arms.names() {
		set[arm] = true
	}
	for _, arm := range a.reportArms(a.now()) {
		set[arm] = true
	}
	for _, x := range a.analyses.m.List() {
		s := x.Spec()
		set[s.Arm], set[s.Baseline] = true, true
	}
	delete(set, vocab.Other)
	return slices.Sorted(maps.Keys(set))
}

// analysisCollector exports each running analysis' verdict and each
// check's estimate and bounds as the latest evaluation tick judged them
// (as the gates' gauges are), so that a scrape neither judges every
// analysis again nor holds up the events meanwhile; an analysis not yet
// judged by a tick is judged at the scrape. Ended analyses are left out,
// so the label sets stay bounded by analysis.max_active.
type analysisCollector struct {
	m                                          *analysis.Manager
	active, verdict, estimate, low, upp, limit *prometheus.Desc

	// built holds each running analysis' series as built from its
	// recorded judgement: a judgement stands until the next tick, and
	// scrapes come far more often than once a tick in tests and tools.
	mu    sync.Mutex
	built map[*analysis.Analysis]builtSeries
}

// builtSeries are the series of one recorded judgement.
type builtSeries struct {
	from   *analysis.Result
	series []prometheus.Metric
}

func newAnalysisCollector(m *analysis.Manager) *analysisCollector {
	return &analysisCollector{m: m, built: map[*analysis.Analysis]builtSeries{},
		active:   prometheus.NewDesc("shadoweval_analyses_active", "Canary analyses running.", nil, nil),
		verdict:  prometheus.NewDesc("shadoweval_analysis_verdict", "1 for the current verdict of a running canary analysis (pass, fail, inconclusive).", []string{"analysis", "arm", "baseline", "verdict"}, nil),
		estimate: prometheus.NewDesc("shadoweval_analysis_check_estimate", "Estimate of a check of a running analysis: arm − baseline for a comparison, the arm's value for an absolute check.", []string{"analysis", "check", "metric"}, nil),
		low:      prometheus.NewDesc("shadoweval_analysis_check_lower", "Lower bound of a check's confidence sequence.", []string{"analysis", "check", "metric"}, nil),
		upp:      prometheus.NewDesc("shadoweval_analysis_check_upper", "Upper bound of a check's confidence sequence.", []string{"analysis", "check", "metric"}, nil),
		limit: prometheus.NewDesc("shadoweval_analysis_check_limit", "The line a check's interval is judged against, on the estimate's scale: −tolerance for a higher-is-better comparison, +tolerance for a lower-is-better one, the threshold of an absolute check.",
			[]string{"analysis", "check", "metric"}, nil),
	}
}

func (c *analysisCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.verdict, c.estimate, c.low, c.upp, c.limit} {
		ch <- d
	}
}

func (c *analysisCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	running := make(map[*analysis.Analysis]bool, len(c.built))
	for _, x := range c.m.List() {
		if !x.Running() {
			continue
		}
		running[x] = true
		rec := x.Recorded()
		if rec == nil {
			r := x.Result()
			c.send(ch, &r, nil)
			continue
		}
		b := c.built[x]
		if b.from != rec {
			b = builtSeries{from: rec, series: c.send(nil, rec, make([]prometheus.Metric, 0, 3+4*len(rec.Checks)))}
			c.built[x] = b
		}
		for _, s := range b.series {
			ch <- s
		}
	}
	for x := range c.built {
		if !running[x] {
			delete(c.built, x)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(len(running)))
}

// send builds r's series, sends them on ch if it is not nil and appends
// them to keep if that is not nil.
func (c *analysisCollector) send(ch chan<- prometheus.Metric, r *analysis.Result, keep []prometheus.Metric) []prometheus.Metric {
	emit := func(d *prometheus.Desc, v float64, labels ...string) {
		m := prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		if ch != nil {
			ch <- m
		}
		if keep != nil {
			keep = append(keep, m)
		}
	}
	for _, v := range []analysis.Verdict{analysis.Pass, analysis.Fail, analysis.Inconclusive} {
		val := 0.0
		if r.Verdict == v {
			val = 1
		}
		emit(c.verdict, val, r.Analysis, r.Arm, r.Baseline, string(v))
	}
	for _, ck := range r.Checks {
		emit(c.limit, ck.Presentation().Limit, r.Analysis, ck.Name, ck.Metric)
		if ck.Estimate == nil || ck.Interval == nil {
			continue
		}
		emit(c.estimate, *ck.Estimate, r.Analysis, ck.Name, ck.Metric)
		emit(c.low, ck.Interval[0], r.Analysis, ck.Name, ck.Metric)
		emit(c.upp, ck.Interval[1], r.Analysis, ck.Name, ck.Metric)
	}
	return keep
}

// analysisResult is an's result as the API gives it: merged over the
// members' parts in a cluster.
func (a *App) analysisResult(an *analysis.Analysis) analysis.Result {
	if a.cluster != nil {
		return a.cluster.result(an)
	}
	return an.Result()
}
