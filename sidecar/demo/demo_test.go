package demo

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar"

	"github.com/shadoweval/shadoweval/sidecar/internal/testtools"
)

// syncBuffer collects output, safe to read while it is written.
type syncBuffer = testtools.SyncBuffer

// finalPrecision returns the precision of arm in the final table.
func finalPrecision(t *testing.T, out string, arm string) float64 {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == "final" && f[1] == arm {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatalf("final %s line %q: %v", arm, l, err)
			}
			return v
		}
	}
	t.Fatalf("no final line for %s in output:\n%s", arm, out)
	return 0
}

// settledGoroutines waits until the goroutine count is back to at most
// want, and returns the last count.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
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
		"/api/v1/verdict?arm=canary&window=1m", "canary degrades at 1.5s",
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
	// Live runs at quality 0.92 throughout; the canary at 0.55 for 2.5 of
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
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(out.String(), "Running until Ctrl-C"); {
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not start within 15 s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not stop within 15 s of its context ending")
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
	if h, r := strings.Index(lines[0], "│"), strings.Index(lines[1], "│"); h != r || h < 0 {
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
