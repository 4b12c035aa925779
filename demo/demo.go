// Package demo is `shadoweval demo`, the one-command tour (SPEC §7): it
// writes a generated gold set to a temporary directory, starts the sidecar
// with an embedded NATS server, starts a canary analysis and publishes
// generated trace events for a `live` and a `canary` arm. The demo runs on
// a clock of its own, faster than the wall clock until the story is told:
// the analysis passes while the canary is healthy, the canary degrades, the
// analysis fails and the gates fire; then the clock slows to real time. It
// prints the arms' 1m window every few seconds, the analysis' verdict
// changes and the gates' transitions. Nothing is needed on disk or on the
// network beforehand and nothing is left behind.
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
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// Defaults of the zero Options fields.
const (
	DefaultRate   = 200.0
	DefaultSpeed  = 10.0
	DefaultListen = "127.0.0.1:9464"
	DefaultEvery  = 15 * time.Second
)

// The tour's fixed settings.
const (
	// goldItems is large enough that a qid rarely comes back within the 1m
	// window at the default rate: λ groups are all runs of a qid in the
	// window, so with a small gold set the groups of many requests merge
	// and one bad request spoils them all (500 items give λ convergence
	// 0.46 on a healthy arm after a minute, 20000 give 0.91). 4.5 MB.
	goldItems = 20000
	awkward   = 0.05 // share of awkward content, gold and traces alike
	// answerable is the share of questions the corpus answers: a healthy
	// arm refuses the others, and seed 004 labels no refusal ok. Every
	// gold citation has offsets (the generator's default is 30 %), so
	// that citation_accuracy, a check of the analysis, has samples.
	answerable      = 0.92
	liveQuality     = 0.93
	degradedQuality = 0.55
	reportWindow    = "1m"
	subjectPrefix   = "rag.trace."
	// analysisID is the canary analysis the tour starts (canary vs live,
	// the shipped "canary" checks).
	analysisID = "demo"
	// maxHealthy is how long the canary stays healthy at most, with the
	// default DegradeAfter, when the analysis does not pass. It degrades as
	// soon as the analysis passes: a verdict that has just passed may turn
	// inconclusive again while its last check hovers at the tolerance, and
	// the story reads better when that is the degradation showing.
	maxHealthy = 5 * time.Minute
	// afterFail is how long the clock keeps its speed after the analysis
	// fails: the 1m windows fill with degraded traffic and the gates fire.
	afterFail = time.Minute
	// failRoom is how much of a --duration the degraded canary keeps at
	// least, for the analysis to fail (about 12 s of the demo clock after
	// the degradation) and the 1m windows to show it. The pass comes at
	// about 1m05s, so --duration 2m30s has room for the whole story.
	failRoom = 45 * time.Second
	// tick is the shortest sleep of the publisher: at high rates each
	// wake-up publishes every event that has come due since the last one.
	tick = 5 * time.Millisecond
	// maxBacklog is how far (wall time) the publisher may fall behind its
	// schedule (a suspended laptop, a starved CPU) before it skips ahead
	// instead of sending a burst.
	maxBacklog = 2 * time.Second
	// pollEvery is how often (wall time) the tour reads the analysis, so
	// that a pass can name the checks that passed last.
	pollEvery = 100 * time.Millisecond
	// headerEvery repeats the table header every so many report rounds.
	headerEvery = 10
)

// Arms of the tour, in the order they are published and printed.
var arms = []string{"live", "canary"}

// Options configure Run. Zero values take the defaults. Durations are on
// the demo's clock (see Speed).
type Options struct {
	// Out receives the tour's output (nil: io.Discard). Colours are used
	// only when Out is a terminal and NO_COLOR is not set.
	Out io.Writer
	// Duration of the traffic, counted from when the sidecar is up; 0
	// runs until ctx ends.
	Duration time.Duration
	// Rate is events per second per arm; 0: DefaultRate.
	Rate float64
	// Speed is how much faster than the wall clock the demo's clock runs
	// until the story is told (afterFail past the analysis' fail), so the
	// analysis gathers its thousands of events in seconds; then it runs
	// in real time. Events carry ts on this clock, and the sidecar runs on
	// it. 0: DefaultSpeed; 1: real time throughout.
	Speed float64
	// DegradeAfter is when the canary's quality drops (from 0.93 to
	// 0.55). 0: as soon as the analysis passes, and at the latest
	// maxHealthy, or half of Duration when that is shorter.
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
// the sidecar, prints the final 1m window of both arms and the analysis,
// and removes its temporary directory. Ending by ctx is a clean stop, not
// an error.
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
	genOpt := gen.Options{Seed: opt.Seed, Items: goldItems, Awkward: awkward, Answerable: answerable, Offsets: 1}
	if err := writeGold(goldPath, genOpt); err != nil {
		return err
	}

	listen, fellBack := pickListen(opt.Listen)
	cfg := tourConfig(goldPath, filepath.Join(dir, "nats"), listen)
	out := newPrinter(opt.Out, cfg.Gates)
	// Real time until the traffic starts (loading the gold set is not
	// part of the story).
	clk := newClock(1)
	st := &story{out: out, clock: clk, start: clk.Now()}
	logger := opt.Logger
	app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: logger, Now: clk.Now,
		OnGateTransition: func(tr gates.Transition) { out.transition(st.elapsed(), tr) },
	})
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
	t := &tour{opt: opt, app: app, nc: nc, out: out, clock: clk, story: st}
	genOpt.Quality, genOpt.Arms, genOpt.Now = liveQuality, arms, clk.Now
	t.src = gen.NewTraceSource(genOpt)
	if err := t.startAnalysis(); err != nil {
		return err
	}
	runErr := t.run(ctx)
	t.ran = clk.Now().Sub(t.start)
	t.wall = time.Since(t.wallStart)

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
	case o.Speed < 0 || math.IsNaN(o.Speed) || math.IsInf(o.Speed, 0):
		return fmt.Errorf("demo: speed %v is not a positive factor", o.Speed)
	case o.DegradeAfter < 0:
		return fmt.Errorf("demo: degrade-after %s is negative", o.DegradeAfter)
	case o.Every < 0:
		return fmt.Errorf("demo: report interval %s is negative", o.Every)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Speed == 0 {
		o.Speed = DefaultSpeed
	}
	if o.Rate*o.Speed > 1e6 {
		return fmt.Errorf("demo: rate %v at speed %v is over 1e6 events per second per arm", o.Rate, o.Speed)
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
// transitions within the tour. The 1m window's 1 s buckets make the sidecar
// judge gates and analyses every wall second (it does so as often as the
// finest window moves), often enough on the fast clock.
func tourConfig(gold, storeDir, listen string) *config.Config {
	cfg := config.Default()
	cfg.NATS.URL = ""
	cfg.NATS.StoreDir = storeDir
	cfg.Gold.File = gold
	cfg.HTTP.Listen = listen
	cfg.Windows = []config.WindowSpec{
		{Length: config.Duration(time.Minute), Resolution: config.Duration(time.Second)},
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

// clock is the demo's clock: it runs speed times as fast as the wall
// clock, from an anchor moved on every change of speed, so it never jumps.
// Safe for concurrent use (the sidecar reads it).
type clock struct {
	mu          sync.Mutex
	wall0, demo time.Time // the anchor: wall time and demo time then
	speed       float64
}

func newClock(speed float64) *clock {
	now := time.Now()
	return &clock{wall0: now, demo: now, speed: speed}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at(time.Now())
}

func (c *clock) at(wall time.Time) time.Time {
	return c.demo.Add(time.Duration(float64(wall.Sub(c.wall0)) * c.speed))
}

func (c *clock) setSpeed(speed float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.demo, c.wall0, c.speed = c.at(now), now, speed
}

func (c *clock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// wallUntil is the wall time until the demo clock shows t.
func (c *clock) wallUntil(t time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(float64(t.Sub(c.at(time.Now()))) / c.speed)
}

// story follows the canary analysis and prints its verdict changes. The
// tour reads the analysis every pollEvery and before each report rather
// than waiting for the sidecar's OnVerdict: the sidecar judges once per
// wall second, up to half a minute on the fast clock, and a report would
// show a verdict before its change was printed.
type story struct {
	out   *printer
	clock *clock

	mu    sync.Mutex
	start time.Time // demo time the traffic started
	// last is the latest judgement read: a change prints, and a pass
	// names the checks that were not passing in the one before.
	last           analysis.Result
	passed, failed time.Time // first pass and first fail, demo time
}

func (s *story) elapsed() time.Duration {
	s.mu.Lock()
	start := s.start
	s.mu.Unlock()
	return max(0, s.clock.Now().Sub(start))
}

// observe takes a judgement of the analysis and prints it when its
// verdict changed. It prints under the lock, so changes print in order.
func (s *story) observe(r analysis.Result) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.last
	s.last = r
	if r.Verdict == prev.Verdict {
		return
	}
	if r.Verdict == analysis.Pass && s.passed.IsZero() {
		s.passed = now
	}
	if r.Verdict == analysis.Fail && s.failed.IsZero() {
		s.failed = now
	}
	s.out.verdict(max(0, now.Sub(s.start)), r, prev)
}

// times returns the demo times of the first pass and first fail (zero
// when none yet).
func (s *story) times() (passed, failed time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passed, s.failed
}

// tour is the running traffic and its reports. One goroutine (Run's) owns
// it: the TraceSource is not safe for concurrent use, and a single writer
// keeps the table lines in order.
type tour struct {
	opt   Options
	app   *sidecar.App
	nc    *nats.Conn
	src   *gen.TraceSource
	out   *printer
	clock *clock
	story *story
	an    *analysis.Analysis

	start     time.Time // demo time
	wallStart time.Time
	rounds    int64 // events published per arm (or skipped)
	sent      int64 // events published, both arms
	skipped   int64 // events skipped per arm after falling behind
	pubErr    error
	degraded  bool
	degradeAt time.Duration // since start; set when degraded
	realTime  bool          // the clock slowed to real time
	reports   int
	lastPoll  time.Time // wall
	stopped   string    // why the traffic stopped
	ran, wall time.Duration
}

// startAnalysis starts the clock and the canary analysis: it takes the
// events stamped from now on.
func (t *tour) startAnalysis() error {
	t.clock.setSpeed(t.opt.Speed)
	t.wallStart = time.Now()
	t.start = t.clock.Now()
	t.story.mu.Lock()
	t.story.start = t.start
	t.story.mu.Unlock()
	m := t.app.Analyses()
	r, _, err := m.Start(analysis.StartRequest{ID: analysisID, Arm: "canary", Baseline: "live", Checks: config.CanaryCheckSet}, t.start)
	if err != nil {
		return fmt.Errorf("demo: starting the analysis: %w", err)
	}
	t.an, _ = m.Get(analysisID)
	t.story.mu.Lock()
	t.story.last = r
	t.story.mu.Unlock()
	t.out.analysisStarted(r)
	return nil
}

// due is the demo time at which round i (0-based) is due.
func (t *tour) due(i int64) time.Time {
	return t.start.Add(time.Duration(float64(i) / t.opt.Rate * float64(time.Second)))
}

// degradeDue returns when the canary degrades, counted from the start.
func (t *tour) degradeDue() time.Duration {
	if t.opt.DegradeAfter > 0 {
		return t.opt.DegradeAfter
	}
	limit := maxHealthy
	if t.opt.Duration > 0 {
		limit = min(limit, max(t.opt.Duration/2, t.opt.Duration-failRoom))
	}
	if passed, _ := t.story.times(); !passed.IsZero() {
		return min(passed.Sub(t.start), limit)
	}
	return limit
}

// run publishes and reports until the duration has passed or ctx ends.
func (t *tour) run(ctx context.Context) error {
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
		now := t.clock.Now()
		if !end.IsZero() && !now.Before(end) {
			now = end // publish what was due up to the end, not after
		}
		if err := t.publishDue(now); err != nil {
			return err
		}
		t.poll()
		if !end.IsZero() && !now.Before(end) {
			t.stopped = "finished"
			return nil
		}
		t.slowDown(now)
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
		timer.Reset(min(max(t.clock.wallUntil(wake), tick), pollEvery))
	}
}

// publishDue publishes every round due at or before now: one event per arm
// per round, each stamped with the demo clock. The canary degrades at the
// first round due at or after its time, so how much of the traffic is
// degraded does not depend on when the publisher gets the CPU.
func (t *tour) publishDue(now time.Time) error {
	// rounds due: those with due(i) <= now
	dueRounds := int64(now.Sub(t.start).Seconds()*t.opt.Rate) + 1
	speed := t.clock.Speed()
	if backlog := time.Duration(float64(dueRounds-t.rounds) / t.opt.Rate / speed * float64(time.Second)); backlog > maxBacklog {
		skip := dueRounds - t.rounds - int64(t.opt.Rate*speed*maxBacklog.Seconds()/2)
		t.rounds += skip
		t.skipped += skip
	}
	at := t.degradeDue()
	for ; t.rounds < dueRounds; t.rounds++ {
		if !t.degraded && t.due(t.rounds).Sub(t.start) >= at {
			t.degraded, t.degradeAt = true, t.due(t.rounds).Sub(t.start)
			t.src.SetQuality("canary", degradedQuality)
			passed, _ := t.story.times()
			t.out.degrade(t.degradeAt, t.opt.DegradeAfter == 0 && !passed.IsZero())
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

// poll reads the analysis now and then (wall time).
func (t *tour) poll() {
	if time.Since(t.lastPoll) < pollEvery {
		return
	}
	t.lastPoll = time.Now()
	t.story.observe(t.an.Result())
}

// slowDown returns the clock to real time once the story is told.
func (t *tour) slowDown(now time.Time) {
	if t.realTime || t.clock.Speed() == 1 {
		return
	}
	if _, failed := t.story.times(); failed.IsZero() || now.Sub(failed) < afterFail {
		return
	}
	t.realTime = true
	t.clock.setSpeed(1)
	until := "until Ctrl-C"
	if t.opt.Duration > 0 {
		until = "until " + formatElapsed(t.opt.Duration)
	}
	t.out.realTime(now.Sub(t.start), t.opt.Speed, until)
}

// report prints one line per arm with its 1m window at now, and where the
// analysis stands.
func (t *tour) report(now time.Time) {
	if t.reports%headerEvery == 0 {
		t.out.header()
	}
	t.reports++
	label := formatElapsed(now.Sub(t.start))
	var live *sidecar.WindowReport
	for _, arm := range arms {
		rep, ok := t.app.Report(arm, reportWindow, "", t.clock.Now())
		if !ok {
			t.out.noData(label, arm)
			continue
		}
		t.out.row(label, &rep, live)
		if arm == "live" {
			live = &rep
		}
	}
	r := t.an.Result()
	t.story.observe(r)
	t.out.analysisLine(r)
}

// final prints the closing report, after the sidecar applied every event.
func (t *tour) final(flushErr error) {
	o := t.out
	ran := t.ran.Round(100 * time.Millisecond)
	o.printf("\n%s after %s on the demo clock (%s wall): published %d events (%.0f/s per arm)", o.bold("Stopped"), ran, t.wall.Round(100*time.Millisecond), t.sent, t.opt.Rate)
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
	now := t.clock.Now()
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
	o.unscored(reps)
	if reps["live"] != nil && reps["canary"] != nil {
		o.compare(reps["canary"], reps["live"], t.degraded)
	}
	if t.an != nil {
		o.analysisFinal(t.an.Result())
	}
	o.readingNotes()
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

func colourAllowed() bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return !strings.EqualFold(os.Getenv("TERM"), "dumb")
}
