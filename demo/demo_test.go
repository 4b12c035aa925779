package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/testenv"
)

// syncBuffer collects output, safe to read while it is written.
type syncBuffer = testenv.SyncBuffer

// finalValue returns the value of column col (0: precision, see
// valueCols) of arm in the final table.
func finalValue(t *testing.T, out string, arm string, col int) float64 {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2+len(valueCols) && f[0] == "final" && f[1] == arm {
			v, err := strconv.ParseFloat(f[2+col], 64)
			if err != nil {
				t.Fatalf("final %s line %q: %v", arm, l, err)
			}
			return v
		}
	}
	t.Fatalf("no final line for %s in output:\n%s", arm, out)
	return 0
}

func finalPrecision(t *testing.T, out string, arm string) float64 {
	return finalValue(t, out, arm, 0)
}

// settledGoroutines waits until the goroutine count is back to at most
// want, and returns the last count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	testenv.Until(5*time.Second, func() string {
		if n = runtime.NumGoroutine(); n > want {
			return "more goroutines"
		}
		return ""
	})
	return n
}

// waitOutput waits until the output of the Run that reports on done holds
// want; it fails when Run ends first or timeout passes.
func waitOutput(t *testing.T, out *syncBuffer, done chan error, want string, timeout time.Duration) {
	t.Helper()
	testenv.Poll(t, timeout, fmt.Sprintf("%q in the output", want), func() string {
		select {
		case err := <-done:
			t.Fatalf("Run ended before printing %q: %v\n%s", want, err, out.String())
		default:
		}
		if !strings.Contains(out.String(), want) {
			return "not yet; output:\n" + out.String()
		}
		return ""
	})
}

func TestRunDegradesCanary(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the demo's and the embedded server's temp dirs
	before := runtime.NumGoroutine()

	var out bytes.Buffer
	opt := Options{
		Out:          &out,
		Duration:     4 * time.Second,
		Rate:         500,
		Speed:        1, // real time, as the demo runs after its story
		DegradeAfter: 1500 * time.Millisecond,
		Listen:       "127.0.0.1:0",
		Seed:         7,
		Every:        time.Second,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := Run(ctx, opt); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	took := time.Since(start)
	s := out.String()
	t.Logf("took %s; output:\n%s", took, s)

	for _, want := range []string{
		"http://127.0.0.1:", "/metrics", "/api/v1/windows?arm=canary&window=1m",
		"/api/v1/verdict?arm=canary&analysis=demo", "canary degrades at 1.5s",
		"◆ analysis demo: inconclusive (started", "Analysis demo (canary − live",
		// The awkward share is said, and so is what it becomes.
		"5% of it awkward on purpose", "Not scored in the 1m window, the awkward 5% of the traffic", "\n  live ", " unlabeled", "Reading the status page: delta_s_retrieved_*",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "\x1b[") {
		t.Error("output to a buffer has ANSI escape codes")
	}
	// periodic lines for both arms (at least one round before the end)
	for _, arm := range []string{"live", "canary"} {
		rows := 0
		for _, l := range strings.Split(s, "\n") {
			f := strings.Fields(l)
			if len(f) >= 3 && f[1] == arm && strings.Contains(f[0], ":") {
				if _, err := strconv.ParseFloat(f[2], 64); err == nil {
					rows++
				}
			}
		}
		if rows == 0 {
			t.Errorf("no periodic line with a precision for %s", arm)
		}
	}
	// Live runs at quality 0.93 throughout; the canary at 0.55 for 2.5 of
	// its 4 seconds, so its precision is far lower (about 0.25 at these
	// sizes; the sampling noise is about 0.02).
	live, canary := finalPrecision(t, s, "live"), finalPrecision(t, s, "canary")
	if !(canary < live-0.10) {
		t.Errorf("final precision: canary %.3f, live %.3f: want canary clearly below live", canary, live)
	}
	if live < 0.7 {
		t.Errorf("final precision of live %.3f: want the healthy arm healthy", live)
	}

	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in the temp dir: %s", e.Name())
	}
	if n := settledGoroutines(before); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf)
	}
}

// verdictLine is a printed change of the analysis' verdict.
var verdictLine = regexp.MustCompile(`◆ analysis demo: (inconclusive|pass|fail)\b`)

// TestRunVerdictSequence runs the tour as `shadoweval demo` does (the
// canary degrades once the analysis passes), faster, until the story is
// told: the analysis' verdict must go inconclusive → pass → fail, in that
// order, with the canary degrading between the pass and the fail, and the
// healthy live arm must triage mostly ok.
func TestRunVerdictSequence(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Run(ctx, Options{Out: out, Speed: 15, Every: 30 * time.Second, Listen: "127.0.0.1:0", Seed: 1,
			Logger: slog.New(slog.DiscardHandler)})
	}()
	told := "▶ the story is told"
	waitOutput(t, out, done, told, 120*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	s := out.String()
	t.Logf("took %s; output:\n%s", time.Since(start), s)

	var verdicts []string
	var passLine, failLine, degradeAt, passAt, failAt int
	for i, l := range strings.Split(s, "\n") {
		if m := verdictLine.FindStringSubmatch(l); m != nil {
			verdicts = append(verdicts, m[1])
			if m[1] == "pass" && passAt == 0 {
				passAt, passLine = i, len(verdicts)-1
			}
			if m[1] == "fail" && failAt == 0 {
				failAt, failLine = i, len(verdicts)-1
				if !strings.Contains(l, "arm − baseline in [") || !strings.Contains(l, ", entirely ") {
					t.Errorf("the fail line does not say which check decided: %q", l)
				}
			}
			if m[1] == "pass" && !strings.Contains(l, "last to pass: ") {
				t.Errorf("the pass line does not name the last check to pass: %q", l)
			}
		}
		if strings.Contains(l, "▼ canary degrades") && degradeAt == 0 {
			degradeAt = i
		}
	}
	switch {
	case len(verdicts) == 0 || verdicts[0] != "inconclusive":
		t.Errorf("verdicts %v: want the analysis to start inconclusive", verdicts)
	case passAt == 0 || failAt == 0 || passLine > failLine:
		t.Errorf("verdicts %v: want a pass, then a fail", verdicts)
	case slices.Contains(verdicts[failLine:], "pass"):
		t.Errorf("verdicts %v: a pass after the fail", verdicts)
	case !(passAt < degradeAt && degradeAt < failAt):
		t.Errorf("lines: pass %d, canary degrades %d, fail %d: want the canary to degrade between the pass and the fail", passAt, degradeAt, failAt)
	}
	if !strings.Contains(s, "■ firing gate demo_precision on canary") {
		t.Error("the canary's precision gate never fired")
	}
	for _, want := range []string{"status page  http://127.0.0.1:", "/api/v1/verdict?arm=canary&analysis=demo"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The live arm stays healthy: its answers are grounded in their
	// evidence (seed 004 triage ok) but for refusals and a few bad runs.
	// The degraded canary's are not.
	live, canary := finalValue(t, s, "live", 5), finalValue(t, s, "canary", 5)
	if live < 0.8 || canary > live-0.15 {
		t.Errorf("final triage ok share: live %.2f (want >= 0.80), canary %.2f (want far below)", live, canary)
	}
	if p := finalPrecision(t, s, "live"); p < 0.85 || p > 0.95 {
		t.Errorf("final precision of live %.3f, want a healthy 0.85..0.95", p)
	}
}

func TestClockSpeed(t *testing.T) {
	c := newClock(1000)
	t0 := c.Now()
	time.Sleep(20 * time.Millisecond)
	t1 := c.Now()
	if d := t1.Sub(t0); d < 15*time.Second || d > 5*time.Minute {
		t.Errorf("20 ms at 1000×: the clock moved %s", d)
	}
	c.setSpeed(1)
	t2 := c.Now()
	if t2.Before(t1) || t2.Sub(t1) > time.Minute {
		t.Errorf("slowing down moved the clock from %s to %s", t1, t2)
	}
	if w := c.wallUntil(t2.Add(time.Second)); w < 900*time.Millisecond || w > time.Second {
		t.Errorf("a second ahead at 1×: wallUntil %s", w)
	}
}

func TestVerdictLines(t *testing.T) {
	ck := func(name string, v analysis.Verdict, lo, hi float64) analysis.CheckResult {
		est := (lo + hi) / 2
		return analysis.CheckResult{Name: name, Metric: name, Kind: analysis.KindComparison, Tolerance: 0.02,
			Estimate: &est, Interval: &[2]float64{lo, hi}, Verdict: v}
	}
	incon := analysis.Result{Analysis: "demo", Verdict: analysis.Inconclusive, Checks: []analysis.CheckResult{
		ck("precision", analysis.Pass, -0.01, 0.01), ck("citation_accuracy", analysis.Inconclusive, -0.03, 0.02),
		{Name: "kappa", Verdict: analysis.NoData},
	}}
	pass := incon
	pass.Verdict, pass.Checks = analysis.Pass, slices.Clone(incon.Checks)
	pass.Checks[1].Verdict = analysis.Pass
	fail := pass
	fail.Verdict, fail.Checks = analysis.Fail, slices.Clone(pass.Checks)
	fail.Checks[0] = ck("precision", analysis.Fail, -0.21, -0.12)
	var b bytes.Buffer
	p := &printer{w: &b}
	p.verdict(80*time.Second, pass, incon)
	p.verdict(100*time.Second, fail, pass)
	p.verdict(110*time.Second, incon, fail)
	fail.Checks[0] = ck("precision", analysis.Fail, -0.0231, -0.0203)
	p.verdict(120*time.Second, fail, incon)
	p.verdict(130*time.Second, incon, pass)
	want := "  1:20  ◆ analysis demo: pass (all 2 checks with data pass; last to pass: citation_accuracy)\n" +
		"  1:40  ◆ analysis demo: fail — precision arm − baseline in [−0.210, −0.120], entirely below −0.02\n" +
		"  1:50  ◆ analysis demo: inconclusive (undecided: citation_accuracy)\n" +
		"  2:00  ◆ analysis demo: fail — precision arm − baseline in [−0.023, −0.0203], entirely below −0.02\n" +
		"  2:10  ◆ analysis demo: inconclusive (undecided: citation_accuracy) — no longer a pass: the canary changed, and a check whose interval moved off its earlier readings is judged afresh\n"
	if b.String() != want {
		t.Errorf("verdict lines:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	before := runtime.NumGoroutine()
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Out: out, Rate: 100, Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	}()
	// cancel once the traffic runs (the sidecar may take a while to start
	// on a busy machine)
	waitOutput(t, out, done, "Running until Ctrl-C", 15*time.Second)
	// ... and the sidecar has applied events of the canary (its window
	// answers 404 until then)
	window := regexp.MustCompile(`window +(http://\S+)`).FindStringSubmatch(out.String())
	if window == nil {
		t.Fatalf("no window URL in the output:\n%s", out.String())
	}
	testenv.Poll(t, 15*time.Second, "events in "+window[1], func() string {
		if code, _, body := testenv.Fetch(t, 15*time.Second, http.MethodGet, window[1], nil, "", ""); code != http.StatusOK {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
	cancel()
	if err := testenv.Receive(t, done, 15*time.Second, "Run to stop after its context ended"); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("left behind in the temp dir: %v", entries)
	}
	if n := settledGoroutines(before); n > before {
		t.Errorf("%d goroutines before, %d after", before, n)
	}
	// Stopping early still prints the final report (the events so far).
	if !strings.Contains(out.String(), "Stopped after") || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("no final report after cancel:\n%s", out.String())
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{Rate: -1}, {Duration: -time.Second}, {DegradeAfter: -time.Second}, {Every: -time.Second},
		{Speed: -1}, {Rate: 1e5, Speed: 100},
	} {
		if err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestPaceNoDrift(t *testing.T) {
	tr := &tour{opt: Options{Rate: 3}, start: time.Unix(100, 0)}
	// due times are computed from the start, not accumulated
	if got, want := tr.due(3000), time.Unix(1100, 0); !got.Equal(want) {
		t.Errorf("due(3000) = %v, want %v", got, want)
	}
	if got := formatElapsed(3723 * time.Second); got != "1:02:03" {
		t.Errorf("formatElapsed = %q", got)
	}
}

func TestRowColours(t *testing.T) {
	val := func(v float64) sidecar.MetricValue { return sidecar.MetricValue{Value: &v, Samples: 100} }
	live := &sidecar.WindowReport{Arm: "live", Metrics: map[string]sidecar.MetricValue{
		"precision": val(0.9), "chr": val(0.9), "recall_at_5": val(0.95), "delta_s_median": val(0.2), "lambda_convergence": val(0.97),
	}}
	canary := &sidecar.WindowReport{Arm: "canary", Metrics: map[string]sidecar.MetricValue{
		"precision": val(0.6), "chr": val(0.9), "recall_at_5": val(0.90), "delta_s_median": val(0.2),
	}}
	cfg := tourConfig("g", "d", "127.0.0.1:0")
	var b bytes.Buffer
	p := &printer{w: &b, colour: true, gates: cfg.Gates}
	p.row("0:05", live, nil)
	p.row("0:05", canary, live)
	lines := strings.Split(b.String(), "\n")
	if strings.Contains(lines[0], ansiRed) {
		t.Errorf("healthy live row painted: %q", lines[0])
	}
	// precision (ship gate) and recall@5 vs live (canary gate) fail; chr does not
	if got := strings.Count(lines[1], ansiRed); got != 2 {
		t.Errorf("canary row has %d red cells, want 2: %q", got, lines[1])
	}
	if !strings.Contains(lines[1], ansiRed+"    0.600"+ansiReset) || !strings.Contains(lines[1], "—") {
		t.Errorf("canary row: %q", lines[1])
	}
	// without colour, the same columns line up with the header
	b.Reset()
	p.colour = false
	p.header()
	p.row("0:05", canary, live)
	lines = strings.Split(b.String(), "\n")
	col := func(l string) int { // in runes, as a terminal shows it
		i := strings.Index(l, "│")
		if i < 0 {
			return -1
		}
		return utf8.RuneCountInString(l[:i])
	}
	if h, r := col(lines[0]), col(lines[1]); h != r || h < 0 {
		t.Errorf("separator at %d in the header, %d in the row:\n%s", h, r, b.String())
	}
}

func TestListenBusy(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// an address asked for that is busy is an error, not a silent fallback
	err = Run(context.Background(), Options{Listen: ln.Addr().String(), Duration: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Run on a busy address: %v", err)
	}
	if entries, _ := os.ReadDir(os.Getenv("TMPDIR")); len(entries) > 0 {
		t.Errorf("left behind in the temp dir: %v", entries)
	}
	// the default address falls back to a free port when busy
	if addr, fell := pickListen(""); addr != DefaultListen && (!fell || addr != "127.0.0.1:0") {
		t.Errorf("pickListen(\"\") = %q, %v", addr, fell)
	}
}

// TestDegradeDue: with the default DegradeAfter the canary degrades when
// the analysis passes, but never so late that a --duration leaves the
// degraded canary less than failRoom (or half the run) to fail in.
func TestDegradeDue(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		duration, degradeAfter, passedAt, want time.Duration
	}{
		{0, 0, 0, maxHealthy},
		{0, 0, 66 * time.Second, 66 * time.Second},
		{150 * time.Second, 0, 0, 105 * time.Second},
		{150 * time.Second, 0, 66 * time.Second, 66 * time.Second},
		{150 * time.Second, 0, 2 * time.Minute, 105 * time.Second},
		{time.Minute, 0, 0, 30 * time.Second},
		{time.Hour, 0, 0, maxHealthy},
		{150 * time.Second, 10 * time.Second, 66 * time.Second, 10 * time.Second},
	} {
		tr := &tour{opt: Options{Duration: c.duration, DegradeAfter: c.degradeAfter}, start: start, story: &story{}}
		if c.passedAt > 0 {
			tr.story.passed = start.Add(c.passedAt)
		}
		if got := tr.degradeDue(); got != c.want {
			t.Errorf("duration %s, degrade-after %s, passed at %s: degrades at %s, want %s", c.duration, c.degradeAfter, c.passedAt, got, c.want)
		}
	}
}
