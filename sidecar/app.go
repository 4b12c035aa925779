package sidecar

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/sidecar/statuspage"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// Options configure an App.
type Options struct {
	Config *config.Config
	Logger *slog.Logger // nil: slog.Default()
	// Registry receives the sidecar's metrics; nil: a new registry with
	// the Go and process collectors.
	Registry *prometheus.Registry
	// Now is the clock; nil: time.Now. Tests pass their own.
	Now func() time.Time
	// GoldWatchInterval is how often the gold file is checked for changes;
	// 0: 2 s.
	GoldWatchInterval time.Duration
	// OnGateTransition, when set, sees every gate state change.
	OnGateTransition func(gates.Transition)
	// OnVerdict, when set, sees every change of an analysis' verdict.
	OnVerdict func(analysis.Result)
	// TracerProvider, when set, gets the span of each event (sidecar/
	// tracing.go) whatever tracing.* and OTEL_* say; its sampling and
	// shutdown are its owner's. nil: a provider built from tracing.* and
	// the OTEL_EXPORTER_OTLP_* environment, and no tracing at all when
	// neither names an endpoint.
	TracerProvider trace.TracerProvider
	// AdaptProcs runs the process on one processor while the traffic is
	// light (procs.go). It changes GOMAXPROCS for the whole process, so
	// only a process that is the sidecar sets it.
	AdaptProcs bool
	// EmbeddedNATSPort is the port of the embedded NATS server (started
	// when no nats.url is configured), or a free one when it is in use;
	// 0: a free port. `shadoweval run` asks for 4222, where replay, the
	// nats CLI and client libraries look by default.
	EmbeddedNATSPort int
	// Version is the sidecar's version, logged at start and exported as
	// shadoweval_build_info; empty: "unknown".
	Version string
	// spanProcessor, set by tests, also gets the spans of the provider
	// built from the config, so tracing is on even without an endpoint.
	spanProcessor sdktrace.SpanProcessor
}

// App is the running sidecar: NATS in, windows and verdicts out, one HTTP
// listener. It holds the configuration, starts and stops the parts, and
// serves the HTTP mux; the ingester owns the path of each message
// (ingest.go), the cluster a replica's part in a consumer group
// (cluster.go). main turns signals into a context and calls New, Start and
// Stop; tests run the whole app on 127.0.0.1:0.
type App struct {
	cfg      *config.Config
	log      *slog.Logger
	reg      *prometheus.Registry
	now      func() time.Time
	goldWait time.Duration
	natsPort int    // Options.EmbeddedNATSPort
	version  string // Options.Version

	ingest   *ingester
	gold     *GoldStore
	goldKV   *stream.KVWatch // gold.kv_bucket (goldkv.go); nil without one
	win      *window.Windows
	outcomes *window.OutcomeCounter
	metrics  *appMetrics
	notices  *notices // the first unscored events, logged (notices.go)
	workers  int      // goroutines per subject (ingestWorkers)
	tracing  *eventTracer
	stores   *replicaGauges // replicas of the streams and buckets in use (jetstream.go)

	embedded *stream.Embedded
	nc       *nats.Conn
	sub      *stream.Subscription
	pub      *stream.Publisher
	ln       net.Listener
	srv      *http.Server

	gating       *gating
	analyses     *analyses
	history      *statuspage.History
	historyEvery time.Duration

	adaptProcs bool
	connected  atomic.Bool
	subscribed atomic.Bool
	stopping   atomic.Bool
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	cluster    *cluster                                     // cluster.partitions > 0 (cluster.go); nil otherwise
	jsub       atomic.Pointer[stream.JetStreamSubscription] // JetStream mode (jetstream.go)
	adminToken []byte                                       // SHA-256 of the admin token (admin.go); nil: none
}

// New checks the configuration and builds an App; nothing starts yet.
func New(opt Options) (*App, error) {
	if opt.Config == nil {
		d := config.Default()
		opt.Config = &d
	}
	if err := opt.Config.Validate(); err != nil {
		return nil, err
	}
	cfg := opt.Config
	a := &App{cfg: cfg, log: opt.Logger, reg: opt.Registry, now: opt.Now, goldWait: opt.GoldWatchInterval, adaptProcs: opt.AdaptProcs,
		natsPort: opt.EmbeddedNATSPort, version: cmp.Or(opt.Version, "unknown")}
	if a.log == nil {
		a.log = slog.Default()
	}
	realClock := a.now == nil
	if realClock {
		a.now = time.Now
	}
	if a.goldWait == 0 {
		a.goldWait = 2 * time.Second
	}
	if a.reg == nil {
		a.reg = prometheus.NewRegistry()
		registerProcessCollectors(a.reg)
	}
	specs := make([]window.Spec, len(cfg.Windows))
	for i, w := range cfg.Windows {
		specs[i] = window.Spec{Name: w.Name(), Length: time.Duration(w.Length), Resolution: time.Duration(w.Resolution)}
	}
	win, err := window.New(window.Config{
		Windows: specs, Ks: cfg.K, LambdaMinRuns: cfg.Lambda.MinRuns,
		MaxLateness: time.Duration(cfg.Window.MaxLateness),
		MaxArms:     cfg.Limits.MaxArms, MaxTypes: cfg.Limits.MaxContentTypes,
	})
	if err != nil {
		return nil, fmt.Errorf("windows: %w", err)
	}
	a.win = win
	a.outcomes = window.NewOutcomeCounter(win.Specs())
	a.workers = ingestWorkers(cfg)
	a.metrics = newAppMetrics(a.reg, cfg.K, stream.Workers(a.workers)+1)
	a.reg.MustRegister(newWindowCollector(win, a.now))
	a.notices = newNotices(a.log)
	a.gold = NewGoldStore(cfg.Gold.File)
	a.gold.OnReload = a.onGoldReload
	a.gold.OnChange = func(set *GoldSet) { a.metrics.goldItems.Set(float64(set.Len())) }
	a.stores = newReplicaGauges(a.reg, cfg.NATS.Replicas, a.log)
	if a.adminToken, err = loadAdminToken(cfg.HTTP.AdminTokenFile); err != nil {
		return nil, err
	}
	if err := a.newGating(opt.OnGateTransition); err != nil {
		return nil, fmt.Errorf("alerting: %w", err)
	}
	a.newAnalyses(opt.OnVerdict)
	if a.tracing, err = newEventTracer(opt, a.log); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	a.ingest = &ingester{
		limits: cfg.Limits, deadletter: cfg.Subjects.Deadletter, logPayloads: cfg.Log.Payloads,
		log: a.log, now: a.now, realClock: realClock, expiryNow: a.expiryNow,
		arms: newLabelSet(cfg.Limits.MaxArms), gold: a.gold, dedupe: newDedupe(cfg),
		evalOpt: checks.Options{Ks: cfg.K, Tolerance: int64(cfg.CitationOffsetTolerance)},
		joiner:  wire.NewJoiner(time.Duration(cfg.Join.TTL), cfg.Join.MaxPending),
		pairs:   newPairer(time.Duration(cfg.Join.TTL), cfg.Join.MaxPending),
		win:     win, analyses: a.analyses.m, outcomes: a.outcomes, metrics: a.metrics, tracing: a.tracing, notices: a.notices,
		countHandled: a.adaptProcs,
	}
	a.ingest.writers = make([]*window.Writer, stream.Workers(a.workers))
	for i := range a.ingest.writers {
		a.ingest.writers[i] = win.NewWriter()
	}
	a.ingest.obsPool.New = func() any { return new(window.Observation) }
	a.ingest.scratch.New = func() any { return new(wire.TraceScratch) }
	if cfg.Cluster.Clustered() {
		c := &cluster{cfg: cfg, log: a.log, now: a.now, win: win, outcomes: a.outcomes, analyses: a.analyses.m, stores: a.stores}
		if a.cluster, err = newCluster(c, a.gold, a.reg); err != nil {
			return nil, err
		}
	}
	a.registerMetrics()
	return a, nil
}

// registerMetrics adds the App's own series: build info, readiness, what
// waits for a partner, the client's drops and the JetStream consumer's.
func (a *App) registerMetrics() {
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_build_info", Help: "Always 1; the labels say which build of the sidecar runs.",
		ConstLabels: prometheus.Labels{"version": a.version, "goversion": runtime.Version()},
	}, func() float64 { return 1 }))
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_join_pending", Help: "Split-event halves waiting for their partner.",
	}, func() float64 { return float64(a.ingest.pending()) }))
	a.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shadoweval_nats_dropped_messages_total", Help: "Messages the NATS client dropped as a slow consumer (core NATS is at-most-once).",
	}, func() float64 {
		if a.sub == nil {
			return 0
		}
		return float64(a.sub.Dropped())
	}))
	a.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shadoweval_ready", Help: "1 when gold is loaded, NATS is connected and the subscriptions are live.",
	}, func() float64 {
		if a.Ready() == nil {
			return 1
		}
		return 0
	}))
	a.registerJetStreamMetrics()
}

// ingestWorkers is how many goroutines handle each subject: nats.workers,
// by default one per CPU; one in JetStream mode, whose consumer delivers
// in stream order.
func ingestWorkers(cfg *config.Config) int {
	switch {
	case cfg.NATS.JetStream:
		return 1
	case cfg.NATS.Workers > 0:
		return cfg.NATS.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Start loads the gold file, connects to NATS (starting an embedded server
// when no URL is configured), loads the gold bucket, subscribes and serves
// HTTP. It returns once everything is up; the work goes on until Stop.
func (a *App) Start(ctx context.Context) error {
	if a.cfg.Gold.File != "" {
		if err := a.gold.Reload(); err != nil {
			if a.cfg.Gold.KVBucket != "" && errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w (to use gold.kv_bucket alone, set gold.file to \"\")", err)
			}
			return err
		}
	}
	url := a.cfg.NATS.URL
	if url == "" {
		emb, err := stream.StartEmbedded(stream.EmbeddedOptions{StoreDir: a.cfg.NATS.StoreDir, Port: a.natsPort, FreePortIfBusy: true})
		if err != nil {
			return fmt.Errorf("embedded NATS: %w", err)
		}
		a.embedded = emb
		url = emb.ClientURL()
		a.log.Info("no NATS URL configured: started an embedded NATS server with JetStream", "url", url, "store_dir", emb.StoreDir())
		if a.natsPort > 0 && emb.Port() != a.natsPort {
			// Publishers that go by the default port would reach whatever
			// holds it: say where the events must go.
			a.log.Warn(fmt.Sprintf("port %d is in use: the embedded NATS server listens on %s; publish there, e.g. shadoweval replay FILE --nats-url %s", a.natsPort, url, url), "url", url)
		}
	}
	nc, err := stream.Connect(ctx, stream.ConnOptions{
		URL: url, Name: "shadoweval",
		User: a.cfg.NATS.User, Password: a.cfg.NATS.Password, Token: a.cfg.NATS.Token,
		NKeySeedFile: a.cfg.NATS.NKeySeedFile, CredsFile: a.cfg.NATS.CredsFile,
		TLSCAFile: a.cfg.NATS.TLS.CAFile, TLSCertFile: a.cfg.NATS.TLS.CertFile, TLSKeyFile: a.cfg.NATS.TLS.KeyFile,
		OnDisconnect: func(err error) {
			a.connected.Store(false)
			if a.stopping.Load() {
				return // our own Close
			}
			a.metrics.disconnects.Inc()
			a.log.Warn("NATS connection lost", "err", err)
		},
		OnReconnect: func() {
			a.connected.Store(true)
			a.log.Info("NATS connection restored")
		},
		OnSlowConsumer: func(subject string) {
			a.metrics.slowDrops.Inc()
			a.log.Warn("slow consumer: NATS is dropping messages", "subject", subject)
		},
		OnError: func(err error) { a.log.Warn("NATS error", "err", err) },
	})
	if err != nil {
		a.shutdownNATS()
		return fmt.Errorf("NATS: %w", err)
	}
	a.nc = nc
	a.connected.Store(true)
	a.pub = stream.NewPublisher(nc)
	a.ingest.pub = a.pub // before the first message
	if err := a.checkClustered(); err != nil {
		a.shutdownNATS()
		return err
	}
	// Before the subscriptions: no event is judged on part of the gold.
	if a.cfg.Gold.KVBucket != "" {
		if err := a.openGoldKV(ctx); err != nil {
			a.shutdownNATS()
			return err
		}
	}
	// Before the first event: a JetStream replay reaches back to the
	// oldest restored analysis.
	if err := a.restoreAnalyses(ctx); err != nil {
		a.shutdownNATS()
		return err
	}
	switch {
	case a.cluster != nil:
		err = a.cluster.subscribe(ctx, nc, a.replayStart(), a.ingest.handle, a.ingest.unkeyed)
	case a.cfg.NATS.JetStream:
		err = a.subscribeJetStream(ctx)
	default:
		// Up to 512 MiB of a kind's messages wait in the client, whatever
		// the number of workers; beyond, NATS drops and the drops are
		// counted (shadoweval_nats_dropped_messages_total).
		a.sub, err = stream.Subscribe(nc, inputSubjects(a.cfg.Subjects), a.workers, -1, 512<<20, a.ingest.handle)
	}
	if err != nil {
		a.shutdownNATS()
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		a.shutdownNATS()
		return fmt.Errorf("subscribe: %w", err)
	}
	a.subscribed.Store(true)

	a.ln, err = net.Listen("tcp", a.cfg.HTTP.Listen)
	if err != nil {
		a.shutdownNATS()
		return fmt.Errorf("http: %w", err)
	}
	a.srv = &http.Server{Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second}
	bg, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.goBackground(func() {
		if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server stopped", "err", err)
		}
	})
	a.goBackground(func() { a.gold.Watch(bg, a.goldWait) })
	if a.goldKV != nil {
		a.goBackground(func() { a.goldKVLoop(bg) })
	}
	a.goBackground(func() { a.expireLoop(bg) })
	a.goBackground(func() { a.notices.loop(bg, noticeEvery) })
	a.goBackground(func() { a.jetStreamLoop(bg) })
	a.goBackground(func() { a.gateLoop(bg) })
	a.goBackground(func() { a.historyLoop(bg) })
	if a.cluster != nil {
		a.cluster.loops(bg, a.goBackground)
	}
	if a.adaptProcs {
		a.goBackground(func() { a.procsLoop(bg) })
	}
	a.log.Info("shadoweval ready", "version", a.version, "http", a.Addr(), "nats", nc.ConnectedUrlRedacted(), "gold_items", a.gold.Current().Len())
	return nil
}

func (a *App) goBackground(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// Stop drains the subscriptions (every delivered event is applied), then
// closes NATS, the HTTP listener and the embedded server.
func (a *App) Stop(ctx context.Context) error {
	var errs []error
	if a.cluster != nil {
		a.subscribed.Store(false)
		a.cluster.stop(ctx)
	}
	if js := a.jsub.Load(); js != nil {
		a.subscribed.Store(false)
		if err := js.Drain(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.sub != nil {
		a.subscribed.Store(false)
		if err := a.sub.Drain(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain: %w", err))
		}
	}
	if a.gating != nil {
		// Deliver what the last evaluation queued before cutting the loops.
		if err := a.gating.alerts.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("alerts: %w", err))
		}
	}
	a.checkpointAll(ctx)
	if a.cancel != nil {
		a.cancel()
	}
	if a.srv != nil {
		if err := a.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http: %w", err))
		}
	}
	a.shutdownNATS()
	a.wg.Wait()
	if err := a.tracing.stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tracing: %w", err))
	}
	return errors.Join(errs...)
}

func (a *App) shutdownNATS() {
	a.stopping.Store(true)
	if a.goldKV != nil {
		a.goldKV.Stop()
	}
	if a.nc != nil {
		a.nc.Close()
	}
	if a.embedded != nil {
		a.embedded.Shutdown()
	}
}

// Addr is the HTTP listener's address.
func (a *App) Addr() string {
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// NATSURL is the URL the sidecar is connected to (the embedded server's
// when it started one).
func (a *App) NATSURL() string {
	if a.nc == nil {
		return ""
	}
	return a.nc.ConnectedUrl()
}

// Ready is nil once gold is loaded, NATS is connected and the subscriptions
// are live; otherwise it says what is missing.
func (a *App) Ready() error {
	switch {
	case a.gold.Current() == nil:
		return errors.New("gold not loaded")
	case !a.connected.Load():
		return errors.New("NATS disconnected")
	case !a.subscribed.Load():
		return errors.New("not subscribed")
	}
	return nil
}

// Reload reads the gold file again; a bad file keeps the old set. The
// gold bucket needs no reload: its changes apply as they happen.
func (a *App) Reload() error { return a.gold.Reload() }

// Windows exposes the windows (for the demo and the gate engine).
func (a *App) Windows() *window.Windows { return a.win }

func (a *App) onGoldReload(set *GoldSet, err error) {
	if err != nil {
		a.metrics.goldReloads.WithLabelValues("failure").Inc()
		a.metrics.goldOK.Set(0)
		if a.gold.Current() == nil {
			// At start: nothing was ever in force, and run stops.
			a.log.Error("gold file refused: no gold set is in force", "file", a.gold.Path(), "err", err)
			return
		}
		a.log.Error("gold file refused; the previous gold set stays in force", "file", a.gold.Path(), "err", err)
		return
	}
	a.metrics.goldReloads.WithLabelValues("success").Inc()
	a.metrics.goldOK.Set(1)
	a.metrics.goldLast.Set(float64(set.LoadedAt.UnixNano()) / 1e9)
	if set.KV != nil {
		a.log.Info("gold loaded", "file", set.Source, "items", set.Len(), "kv_bucket", a.cfg.Gold.KVBucket, "kv_items", len(set.KV))
		return
	}
	if set.Len() == 0 {
		// Allowed (a gold set filled later by reload), but every event
		// counts unlabeled until then: said where on-call looks.
		a.log.Warn("gold loaded with no items: every event counts as unlabeled, none is scored, until the file has some", "file", set.Source)
		return
	}
	a.log.Info("gold loaded", "file", set.Source, "items", set.Len())
}

// expireLoop times out split-event halves and judgement halves.
func (a *App) expireLoop(ctx context.Context) {
	every(ctx, time.Second, func() { a.ingest.expire(a.expiryNow()) })
}
