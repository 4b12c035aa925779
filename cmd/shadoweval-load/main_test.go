package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// The load tool starts its children (server, publisher, sink) as
// `os.Executable() <child> ...`: under test that is this test binary, so
// it must run them as the tool would.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "server", "publish", "sink":
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// sidecarBinary builds cmd/shadoweval, which the tool runs as the sidecar.
func sidecarBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shadoweval")
	cmd := exec.Command("go", "build", "-o", bin, "../shadoweval")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runTool runs the tool with args against a sidecar built from
// cmd/shadoweval and returns its output, failing unless it exits 0; it
// starts processes, so it skips with -short, saying skip.
func runTool(t *testing.T, skip string, args ...string) *bytes.Buffer {
	t.Helper()
	if testing.Short() {
		t.Skip(skip)
	}
	var out, errs bytes.Buffer
	if code := run(append([]string{"--bin", sidecarBinary(t)}, args...), &out, &errs); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	return &out
}

// A whole small benchmark run: real server, publisher, plain subscriber
// and sidecar processes, with two canary analyses on the sidecar. What it
// must show: the raw and the sidecar's rates measured, every event
// counted (loss 0), the table, and every scored event taken by the
// analyses.
func TestBenchSmall(t *testing.T) {
	out := runTool(t, "starts processes and sends 20,000 messages twice", "--runs", "1", "--n", "20000", "--items", "200", "--pool", "4000",
		"--sustain-probes", "1", "--sustain-time", "1s", "--lag-time", "1s", "--timeout", "3m", "--analyses", "2")
	row := regexp.MustCompile(`(?m)^1\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s`).FindStringSubmatch(out.String())
	if row == nil {
		t.Fatalf("no row for run 1 in\n%s", out.String())
	}
	raw, _ := strconv.Atoi(row[1])
	flood, _ := strconv.Atoi(row[4])
	if raw <= 0 || flood <= 0 {
		t.Errorf("raw %d msgs/s, flood %d events/s: want both measured\n%s", raw, flood, out.String())
	}
	if row[6] != "0" || row[7] != "0" {
		t.Errorf("loss %s, dropped %s: want 0\n%s", row[6], row[7], out.String())
	}
	// The raw rate was measured twice (before the flood and before the
	// one probe) and the table gives their median.
	raws := regexp.MustCompile(`(?m)^\s+run 1: (\d+)k, (\d+)k$`).FindStringSubmatch(out.String())
	if raws == nil {
		t.Errorf("no two raw measurements for run 1 in\n%s", out.String())
	} else if r1, r2 := atoi(t, raws[1]), atoi(t, raws[2]); r1 <= 0 || r2 <= 0 || math.Abs(float64(raw)/1000-float64(r1+r2)/2) > 1 {
		t.Errorf("raw %d msgs/s, want the median of %dk and %dk\n%s", raw, r1, r2, out.String())
	}
	scored := regexp.MustCompile(`outcomes \(run 1\) map\[scored:(\d+)`).FindStringSubmatch(out.String())
	if scored == nil {
		t.Fatalf("no scored outcomes in\n%s", out.String())
	}
	// The live and canary events scored during the flood are every event
	// the analyses could take.
	if want := "events of both arms the first took during the flood: [" + scored[1] + "]"; !bytes.Contains(out.Bytes(), []byte(want)) {
		t.Errorf("no %q in\n%s", want, out.String())
	}
}

// Trials of the target itself: each line has the raw rate measured, a
// probe at the given share of it and a verdict, and the summary counts
// the verdicts. At a tenth of the raw rate a sidecar keeps up.
func TestTargetTrials(t *testing.T) {
	out := runTool(t, "starts processes", "--trials", "2", "--target-ratio", "0.1", "--n", "20000", "--items", "200", "--pool", "4000",
		"--sustain-time", "1s", "--timeout", "3m")
	rows := regexp.MustCompile(`(?m)^(\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+( ms| µs| s)?\s+(\d+)\s+(\d+)\s+(\d+)\s+(kept up|fell behind)\s*$`).FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 2 {
		t.Fatalf("want 2 trial rows in\n%s", out.String())
	}
	kept := 0
	for _, r := range rows {
		raw, rate := atoi(t, r[2]), atoi(t, r[3])
		if raw <= 0 || math.Abs(float64(rate)-0.1*float64(raw)) > 1 {
			t.Errorf("trial %s: rate %d for a raw rate of %d, want a tenth\n%s", r[1], rate, raw, out.String())
		}
		if r[7] != "0" || r[8] != "0" {
			t.Errorf("trial %s: loss %s, raw loss %s\n%s", r[1], r[7], r[8], out.String())
		}
		if r[9] == "kept up" {
			kept++
		}
	}
	if want := "kept up with 0.10 of the raw rate in " + strconv.Itoa(kept) + " of 2 trials"; !bytes.Contains(out.Bytes(), []byte(want)) {
		t.Errorf("no %q in\n%s", want, out.String())
	}
	if kept == 0 {
		t.Errorf("kept up in no trial at a tenth of the raw rate\n%s", out.String())
	}
}

// A short soak with hostile messages: every message is counted, the
// hostile ones rejected by reason.
func TestSoakHostile(t *testing.T) {
	out := runTool(t, "starts processes", "--duration", "3s", "--rate", "4000", "--hostile", "0.05", "--sample", "1s",
		"--items", "200", "--pool", "4000", "--timeout", "3m")
	m := regexp.MustCompile(`sent (\d+) at .* sidecar counted (\d+): loss (-?\d+), NATS dropped (\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no totals in\n%s", out.String())
	}
	if m[1] != "12000" || m[2] != m[1] || m[3] != "0" || m[4] != "0" {
		t.Errorf("sent %s, counted %s, loss %s, dropped %s: want 12000 sent, all counted\n%s", m[1], m[2], m[3], m[4], out.String())
	}
	h := regexp.MustCompile(`hostile share 5.00%: (\d+) rejected \((.*)\)`).FindStringSubmatch(out.String())
	if h == nil {
		t.Fatalf("no hostile line in\n%s", out.String())
	}
	if n, _ := strconv.Atoi(h[1]); n < 300 || n > 900 {
		t.Errorf("%d rejected of 12000 at a 5%% hostile share\n%s", n, out.String())
	}
	for _, reason := range []string{"invalid_json", "invalid_utf8", "missing_qid"} {
		if !regexp.MustCompile(reason + ` [1-9]`).MatchString(h[2]) {
			t.Errorf("no %s rejections in %q", reason, h[2])
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
