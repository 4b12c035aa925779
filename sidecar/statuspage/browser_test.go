//go:build unix

package statuspage_test

// Browser tests: headless Chromium (Debian's `chromium`, installed by
// `make deps`) loads the status page, runs its script for 6 s of virtual
// time, so that it fetches /fragment once and swaps it in, then dumps the
// DOM and takes a screenshot. They skip when Chromium is absent, except
// under CI, where that is a failure. Screenshots are kept in
// $SHADOWEVAL_SCREENSHOT_DIR or $ARTIFACT_DIR when set (else in the test's
// artifact directory: `go test -artifacts`); with -update the analyses one
// also replaces testdata/status-analyses.png, for reviewers.

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/statuspage"
	"github.com/shadoweval/shadoweval/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/status-analyses.png from the screenshot")

func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SHADOWEVAL_SCREENSHOT_DIR")
	if dir == "" {
		dir = os.Getenv("ARTIFACT_DIR")
	}
	if dir == "" {
		return t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browse loads url in headless Chromium, lets its scripts run for 6 s of
// virtual time, and returns the DOM then; the screenshot (1280×2000) is
// written to the artifact directory as name.png.
func browse(t *testing.T, url, name string) (dom, shot string) {
	t.Helper()
	return browseSized(t, url, name, 1280, 2000)
}

// browseSized is browse with a window of w×h CSS px.
func browseSized(t *testing.T, url, name string, w, h int) (dom, shot string) {
	t.Helper()
	bin := testenv.Chromium(t)
	shot = filepath.Join(artifactDir(t), name+".png")
	os.Remove(shot)
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-proxy-server", "--hide-scrollbars",
		"--user-data-dir="+profile,
		"--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h),
		"--virtual-time-budget=6000",
		"--screenshot="+shot,
		"--dump-dom", url)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Chromium forks helpers: run it in its own process group and end
	// that group (and only it) when done or on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stray helpers of our group
	}
	if err != nil {
		t.Fatalf("chromium: %v (after %s)\nstderr:\n%s", err, time.Since(start).Round(time.Millisecond), testenv.Tail(stderr.String(), 3000))
	}
	t.Logf("chromium ran in %s; screenshot: %s", time.Since(start).Round(time.Millisecond), shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Errorf("screenshot %s missing or empty (%v)\nstderr:\n%s", shot, err, testenv.Tail(stderr.String(), 3000))
	}
	return stdout.String(), shot
}

// countFragments wraps h, counting GET /fragment and calling before first.
func countFragments(h http.Handler, n *atomic.Int64, before func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fragment" {
			n.Add(1)
			if before != nil {
				before()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// checkDOM checks what the page must show after its refresh.
func checkDOM(t *testing.T, dom string, arms []string, firingGate string, fragments int64, wants ...string) {
	t.Helper()
	if fragments == 0 {
		t.Error("the page never fetched /fragment")
	}
	if !strings.Contains(dom, `<main id="live">`) {
		t.Fatalf("no live container in the DOM:\n%s", testenv.Tail(dom, 2000))
	}
	for i, arm := range arms {
		if !regexp.MustCompile(`<h2 id="arm-` + string(rune('0'+i)) + `">` + regexp.QuoteMeta(arm) + `\b`).MatchString(dom) {
			t.Errorf("arm %s not shown in position %d after the refresh", arm, i)
		}
	}
	firing := regexp.MustCompile(`<th scope="row">` + regexp.QuoteMeta(firingGate) + `<span class="meta">[^<]*</span>(?:<span class="reason">[^<]*</span>)?</th><td><span class="badge badge-firing">firing</span></td>`)
	if !firing.MatchString(dom) {
		t.Errorf("no firing badge for gate %s after the refresh", firingGate)
	}
	if !strings.Contains(dom, `id="refresh-note" role="status">Updates every 5 s.</p>`) {
		t.Errorf("the script did not run or its refresh failed: %s", testenv.Between(dom, `id="refresh-note"`, "</p>"))
	}
	if strings.Contains(dom, `<main id="live" data-stale`) {
		t.Error("the refresh failed: content marked stale")
	}
	for _, w := range wants {
		if !strings.Contains(dom, w) {
			t.Errorf("DOM lacks %q (from the refreshed fragment)", w)
		}
	}
	if n := strings.Count(dom, "<svg "); n < 10 {
		t.Errorf("%d charts in the DOM", n)
	}
}

// TestBrowserFakeSources: the page with fake sources; the fragment served
// to the script carries a scored count the first page did not have.
func TestBrowserFakeSources(t *testing.T) {
	testenv.Chromium(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	src := statuspage.NewFakeSource()
	hist := statuspage.NewHistory(60)
	statuspage.FillHistory(hist, src, now.Add(-10*time.Second))
	var fragments atomic.Int64
	h := statuspage.Handler(src, statuspage.NewFakeGates(), hist, func() time.Time { return now })
	srv := httptest.NewServer(countFragments(h, &fragments, func() { src.SetScored("canary", 424242) }))
	defer srv.Close()

	dom, _ := browse(t, srv.URL+"/", "statuspage-fake")
	checkDOM(t, dom, []string{"live", "canary"}, "precision_floor", fragments.Load(), `<td class="num">424242</td>`)
}

// TestBrowserAnalyses: the page with analyses judged over simulated
// traffic leads with the running ones, the failing canary first, and
// shows it on screen.
func TestBrowserAnalyses(t *testing.T) {
	testenv.Chromium(t)
	m, now := statuspage.SimulatedAnalyses(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	src := statuspage.NewFakeSource()
	hist := statuspage.NewHistory(60)
	statuspage.FillHistory(hist, src, now.Add(-10*time.Second))
	var fragments atomic.Int64
	h := statuspage.Handler(src, statuspage.NewFakeGates(), hist, func() time.Time { return now },
		statuspage.WithAnalyses(statuspage.AnalysisList(m.List)))
	srv := httptest.NewServer(countFragments(h, &fragments, nil))
	defer srv.Close()

	dom, shot := browseSized(t, srv.URL+"/", "status-analyses", 1280, 1500)
	checkDOM(t, dom, []string{"live", "canary"}, "precision_floor", fragments.Load(),
		`<h2 id="analysis-0"><span class="badge badge-fail">fail</span> Analysis <span class="an-id">c1</span>: canary vs live</h2>`,
		`<span class="an-id">shadow-1</span>: shadow vs live`,
		`<details class="analysis verdict-inconclusive" id="analysis-ended-c0">`,
		`<tr class="check check-no_data"><th scope="row">kappa<span class="reason">no sample of kappa in either arm</span></th>`)
	// the failing analysis is the first thing in the live part
	main := testenv.Between(dom, `<main id="live">`, "</main>")
	first := regexp.MustCompile(`<(section|details)\b[^>]*>`).FindString(main)
	if first != `<section class="analysis verdict-fail" aria-labelledby="analysis-0">` {
		t.Errorf("first section of the page: %s", first)
	}
	if a, g := strings.Index(main, `aria-labelledby="analysis-0"`), strings.Index(main, `<h2 id="arm-0">`); a < 0 || g < 0 || a > g {
		t.Errorf("analysis at %d, first arm at %d: want the analysis first", a, g)
	}
	// and it is on screen: its red verdict border runs down the top of
	// the screenshot, left of the content
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n := countColor(img, image.Rect(0, 0, 120, 400), color.RGBA{0xcf, 0x22, 0x2e, 0xff}); n < 6*150 {
		t.Errorf("%d pixels of the fail border in the top left of %s: the failing analysis is not shown first", n, shot)
	}
	if *update {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "status-analyses.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("updated testdata/status-analyses.png")
	}
}

// countColor counts the pixels of r in img that are c.
func countColor(img image.Image, r image.Rectangle, c color.RGBA) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}
