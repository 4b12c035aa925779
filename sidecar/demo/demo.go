// Package demo is `shadoweval demo`, the one-command tour (SPEC §7): it
// writes a generated gold set to a temporary directory, starts the sidecar
// with an embedded NATS server, publishes generated trace events for a
// `live` and a `canary` arm at a steady rate, degrades the canary after a
// while, and prints the arms' 1m window every few seconds. Nothing is
// needed on disk or on the network beforehand and nothing is left behind.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/stream/gen"
)

// Defaults of the zero Options fields.
const (
	DefaultRate         = 200.0
	DefaultDegradeAfter = 45 * time.Second
	DefaultListen       = "127.0.0.1:9464"
	DefaultEvery        = 5 * time.Second
)

// The tour's fixed settings.
const (
	// goldItems is large enough that a qid rarely comes back within the 1m
	// window at the default rate: λ groups are all runs of a qid in the
	// window, so with a small gold set the groups of many requests merge
	// and one bad request spoils them all (500 items give λ convergence
	// 0.46 on a healthy arm after a minute, 20000 give 0.91). 4.5 MB.
	goldItems       = 20000
	awkward         = 0.05 // share of awkward content, gold and traces alike
	liveQuality     = 0.92
	degradedQuality = 0.55
	reportWindow    = "1m"
	subjectPrefix   = "rag.trace."
	// tick is the shortest sleep of the publisher: at high rates each
	// wake-up publishes every event that has come due since the last one.
	tick = 5 * time.Millisecond
	// maxBacklog is how far the publisher may fall behind its schedule
	// (a suspended laptop, a starved CPU) before it skips ahead instead of
	// sending a burst.
	maxBacklog = 2 * time.Second
	// headerEvery repeats the table header every so many report rounds.
	headerEvery = 10
)

// Arms of the tour, in the order they are published and printed.
var arms = []string{"live", "canary"}

// Options configure Run. Zero values take the defaults.
type Options struct {
	// Out receives the tour's output (nil: io.Discard). Colours are used
	// only when Out is a terminal and NO_COLOR is not set.
	Out io.Writer
	// Duration of the traffic, counted from when the sidecar is up; 0
	// runs until ctx ends.
	Duration time.Duration
	// Rate is events per second per arm; 0: DefaultRate.
	Rate float64
	// DegradeAfter is when the canary's quality drops (from 0.92 to
	// 0.55), counted like Duration; 0: DefaultDegradeAfter, or half of
	// Duration when that is shorter than twice DefaultDegradeAfter.
	DegradeAfter time.Duration
	// Listen is the sidecar's HTTP address; empty: DefaultListen, or
	// 127.0.0.1:0 when that port is busy. An address given here that is
	// busy is an error.
	Listen string
	// Seed selects the generated gold set and traffic.
	Seed uint64
	// Logger receives the sidecar's own logs (nil: slog.Default()).
	Logger *slog.Logger
	// Every is how often the arms' lines are printed; 0: DefaultEvery.
	Every time.Duration
}

// Run runs the tour until opt.Duration has passed or ctx ends, then stops
// the sidecar, prints the final 1m window of both arms and removes its
// temporary directory. Ending by ctx is a clean stop, not an error.
func Run(ctx context.Context, opt Options) (err error) {
	if err := opt.resolve(); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "shadoweval-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = fmt.Errorf("demo: removing %s: %w", dir, rmErr)
		}
	}()
	goldPath := filepath.Join(dir, "gold.jsonl")
	genOpt := gen.Options{Seed: opt.Seed, Items: goldItems, Awkward: awkward}
	if err := writeGold(goldPath, genOpt); err != nil {
		return err
	}

	listen, fellBack := pickListen(opt.Listen)
	cfg := tourConfig(goldPath, filepath.Join(dir, "nats"), listen)
	out := newPrinter(opt.Out, cfg.Gates)
	start := time.Now()
	app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: opt.Logger, OnGateTransition: func(tr gates.Transition) {
		out.transition(time.Since(start), tr)
	}})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := app.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return fmt.Errorf("demo: %w", err)
	}
	stopped := false
	stopApp := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return app.Stop(sctx)
	}
	defer func() {
		if sErr := stopApp(); sErr != nil && err == nil {
			err = fmt.Errorf("demo: stopping the sidecar: %w", sErr)
		}
	}()

	// The traffic comes over its own connection, as a retriever's would.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nc, err := stream.Connect(cctx, stream.ConnOptions{URL: app.NATSURL(), Name: "shadoweval-demo"})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("demo: %w", err)
	}
	defer nc.Close()

	out.banner(opt, app, goldPath, fellBack)
	t := &tour{opt: opt, app: app, nc: nc, out: out}
	t.src = gen.NewTraceSource(gen.Options{
		Seed: opt.Seed, Items: goldItems, Awkward: awkward, Quality: liveQuality,
		Arms: arms, Now: time.Now,
	})
	runErr := t.run(ctx)
	t.ran = time.Since(t.start)

	// Every event published is applied before the final report: the flush
	// makes the server route them, Stop drains the sidecar's subscriptions.
	flushErr := nc.FlushTimeout(5 * time.Second)
	nc.Close()
	stopErr := stopApp()
	t.final(flushErr)
	if stopErr != nil {
		return fmt.Errorf("demo: stopping the sidecar: %w", stopErr)
	}
	return runErr
}

func (o *Options) resolve() error {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.Duration < 0:
		return fmt.Errorf("demo: duration %s is negative", o.Duration)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("demo: rate %v is not a positive number of events per second", o.Rate)
	case o.DegradeAfter < 0:
		return fmt.Errorf("demo: degrade-after %s is negative", o.DegradeAfter)
	case o.Every < 0:
		return fmt.Errorf("demo: report interval %s is negative", o.Every)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Rate > 1e6 {
		return fmt.Errorf("demo: rate %v is over 1e6 events per second per arm", o.Rate)
	}
	if o.DegradeAfter == 0 {
		o.DegradeAfter = DefaultDegradeAfter
		if o.Duration > 0 && o.Duration < 2*DefaultDegradeAfter {
			// a short tour still shows the canary degrading, half-way
			o.DegradeAfter = o.Duration / 2
		}
	}
	if o.Every == 0 {
		o.Every = DefaultEvery
	}
	return nil
}

// writeGold writes the tour's gold set.
func writeGold(path string, o gen.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := errors.Join(gen.WriteGold(f, o), f.Close()); err != nil {
		return fmt.Errorf("demo: writing %s: %w", path, err)
	}
	return nil
}

// pickListen returns the HTTP address to use: the one asked for, or for the
// default address, 127.0.0.1:0 when its port is busy (fellBack).
func pickListen(asked string) (addr string, fellBack bool) {
	if asked != "" {
		return asked, false
	}
	ln, err := net.Listen("tcp", DefaultListen)
	if err != nil {
		return "127.0.0.1:0", true
	}
	ln.Close()
	return DefaultListen, false
}

// tourConfig is config.Default() tuned for a short tour: windows short
// enough to move within a minute, the embedded NATS server with its store in
// the tour's directory, and a few gates on the 1m window (the shipped ones
// judge 5m, too slow to watch) so that the canary's fall shows as gate
// transitions and a failing verdict within the tour.
func tourConfig(gold, storeDir, listen string) *config.Config {
	cfg := config.Default()
	cfg.NATS.URL = ""
	cfg.NATS.StoreDir = storeDir
	cfg.Gold.File = gold
	cfg.HTTP.Listen = listen
	cfg.Windows = []config.WindowSpec{
		{Length: config.Duration(time.Minute), Resolution: config.Duration(5 * time.Second)},
		{Length: config.Duration(5 * time.Minute), Resolution: config.Duration(10 * time.Second)},
	}
	cfg.Lambda.MinRuns = 3
	cfg.Gates = []config.Gate{
		{Name: "demo_precision", Metric: "precision", Op: ">=", Threshold: 0.80, Window: "1m", MinSamples: 100, Severity: "page"},
		{Name: "demo_chr", Metric: "chr", Op: ">=", Threshold: 0.75, Window: "1m", MinSamples: 100, Severity: "page"},
		{Name: "demo_precision_vs_live", Metric: "precision", CompareTo: "live", Op: ">=", Threshold: -0.05, Window: "1m", MinSamples: 100, Arms: []string{"canary"}, Severity: "warning"},
		{Name: "demo_recall_at_5_vs_live", Metric: "recall_at_5", CompareTo: "live", Op: ">=", Threshold: -0.02, Window: "1m", MinSamples: 100, Arms: []string{"canary"}, Severity: "warning"},
	}
	return &cfg
}

// tour is the running traffic and its reports. One goroutine (Run's) owns
// it: the TraceSource is not safe for concurrent use, and a single writer
// keeps the output lines whole.
type tour struct {
	opt Options
	app *sidecar.App
	nc  *nats.Conn
	src *gen.TraceSource
	out *printer

	start    time.Time
	rounds   int64 // events published per arm (or skipped)
	sent     int64 // events published, both arms
	skipped  int64 // events skipped per arm after falling behind
	pubErr   error
	degraded bool
	reports  int
	stopped  string // why the traffic stopped
	ran      time.Duration
}

// due is the wall-clock time at which round i (0-based) is due.
func (t *tour) due(i int64) time.Time {
	return t.start.Add(time.Duration(float64(i) / t.opt.Rate * float64(time.Second)))
}

// run publishes and reports until the duration has passed or ctx ends.
func (t *tour) run(ctx context.Context) error {
	t.start = time.Now()
	var end time.Time
	if t.opt.Duration > 0 {
		end = t.start.Add(t.opt.Duration)
	}
	nextReport := t.start.Add(t.opt.Every)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			t.stopped = "interrupted"
			return nil
		case <-timer.C:
		}
		now := time.Now()
		if !end.IsZero() && !now.Before(end) {
			now = end // publish what was due up to the end, not after
		}
		if err := t.publishDue(now); err != nil {
			return err
		}
		if !end.IsZero() && !now.Before(end) {
			t.stopped = "finished"
			return nil
		}
		if !now.Before(nextReport) {
			t.report(now)
			for !nextReport.After(now) {
				nextReport = nextReport.Add(t.opt.Every)
			}
		}
		wake := t.due(t.rounds)
		if nextReport.Before(wake) {
			wake = nextReport
		}
		if !end.IsZero() && end.Before(wake) {
			wake = end
		}
		timer.Reset(max(time.Until(wake), tick))
	}
}

// publishDue publishes every round due at or before now: one event per arm
// per round, each stamped with the current time. The canary degrades at the
// first round due at or after DegradeAfter, so how much of the traffic is
// degraded does not depend on when the publisher gets the CPU.
func (t *tour) publishDue(now time.Time) error {
	// rounds due: those with due(i) <= now
	dueRounds := int64(now.Sub(t.start).Seconds()*t.opt.Rate) + 1
	if backlog := time.Duration(float64(dueRounds-t.rounds) / t.opt.Rate * float64(time.Second)); backlog > maxBacklog {
		skip := dueRounds - t.rounds - int64(t.opt.Rate*maxBacklog.Seconds()/2)
		t.rounds += skip
		t.skipped += skip
	}
	for ; t.rounds < dueRounds; t.rounds++ {
		if !t.degraded && t.due(t.rounds).Sub(t.start) >= t.opt.DegradeAfter {
			t.degraded = true
			t.src.SetQuality("canary", degradedQuality)
			t.out.degrade(t.due(t.rounds).Sub(t.start))
		}
		for _, arm := range arms {
			if err := t.nc.Publish(subjectPrefix+arm, t.src.NextFor(arm)); err != nil {
				if t.pubErr == nil {
					t.pubErr = err
				}
				if errors.Is(err, nats.ErrConnectionClosed) {
					return fmt.Errorf("demo: publishing: %w", err)
				}
				continue
			}
			t.sent++
		}
	}
	return nil
}

// report prints one line per arm with its 1m window at now.
func (t *tour) report(now time.Time) {
	if t.reports%headerEvery == 0 {
		t.out.header()
	}
	t.reports++
	label := formatElapsed(now.Sub(t.start))
	var live *sidecar.WindowReport
	for _, arm := range arms {
		rep, ok := t.app.Report(arm, reportWindow, "", time.Now())
		if !ok {
			t.out.noData(label, arm)
			continue
		}
		t.out.row(label, &rep, live)
		if arm == "live" {
			live = &rep
		}
	}
}

// final prints the closing report, after the sidecar applied every event.
func (t *tour) final(flushErr error) {
	o := t.out
	elapsed := t.ran.Round(100 * time.Millisecond)
	o.printf("\n%s after %s: published %d events (%.0f/s per arm)", o.bold("Stopped"), elapsed, t.sent, t.opt.Rate)
	if t.stopped == "interrupted" {
		o.printf(", interrupted")
	}
	o.printf(".\n")
	if t.skipped > 0 {
		o.printf("The publisher fell behind its schedule and skipped %d rounds (this machine is busy).\n", t.skipped)
	}
	if t.pubErr != nil {
		o.printf("Some events could not be published: %v\n", t.pubErr)
	}
	if flushErr != nil {
		o.printf("Flushing the last events failed: %v\n", flushErr)
	}
	o.printf("Final %s window:\n", reportWindow)
	o.header()
	now := time.Now()
	reps := map[string]*sidecar.WindowReport{}
	for _, arm := range arms {
		rep, ok := t.app.Report(arm, reportWindow, "", now)
		if !ok {
			o.noData("final", arm)
			continue
		}
		o.row("final", &rep, reps["live"])
		reps[arm] = &rep
	}
	if reps["live"] != nil && reps["canary"] != nil {
		o.compare(reps["canary"], reps["live"], t.degraded, t.opt.DegradeAfter)
	}
}

func formatElapsed(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// metricOf is a metric's value and samples; ok=false when it has none.
func metricOf(rep *sidecar.WindowReport, name string) (v float64, samples int64, ok bool) {
	m, found := rep.Metrics[name]
	if !found {
		return 0, 0, false
	}
	if m.Value == nil {
		return 0, m.Samples, false
	}
	return *m.Value, m.Samples, true
}

// hostURL is the base URL for addr, with a wildcard host made reachable.
func hostURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func colourAllowed() bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return !strings.EqualFold(os.Getenv("TERM"), "dumb")
}
