// Command benchscore measures `shadoweval score` against the seed 002
// reference scorer on the same generated files in the same run: wall time
// and peak RSS of each, their ratios, and whether the two reports are
// byte-identical. Results go to BENCHMARKS.md by hand, with this command.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/wire/gen"
)

func main() {
	items := flag.Int("items", 1_000_000, "gold items (and about as many traces)")
	seed := flag.Uint64("seed", 42, "generator seed")
	runs := flag.Int("runs", 3, "runs of each scorer, interleaved")
	dir := flag.String("dir", "", "where to write the data (default: a temp dir, removed after)")
	bin := flag.String("bin", "bin/shadoweval", "shadoweval binary")
	ref := flag.String("ref", "offline/testdata/reference/score_eval.py", "reference scorer")
	k := flag.String("k", "5", "--k for both")
	flag.Parse()
	if err := run(*items, *seed, *runs, *dir, *bin, *ref, *k); err != nil {
		fmt.Fprintln(os.Stderr, "benchscore:", err)
		os.Exit(1)
	}
}

type sample struct {
	wall  time.Duration
	rssKB int64
	out   []byte
}

func run(items int, seed uint64, runs int, dir, bin, ref, k string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "benchscore")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	goldPath, tracePath := filepath.Join(dir, "gold.jsonl"), filepath.Join(dir, "trace.jsonl")
	opt := gen.Options{Seed: seed, Items: items, Awkward: 0.2}
	for _, f := range []struct {
		path  string
		write func(io.Writer, gen.Options) error
	}{{goldPath, gen.WriteGold}, {tracePath, gen.WriteTraces}} {
		if err := cmdutil.WriteFile(f.path, func(w io.Writer) error { return f.write(w, opt) }); err != nil {
			return err
		}
	}
	gs, _ := os.Stat(goldPath)
	ts, _ := os.Stat(tracePath)
	fmt.Printf("data: %d gold items, gold %.1f MB, trace %.1f MB, seed %d\n", items, mb(gs.Size()), mb(ts.Size()), seed)
	fmt.Printf("machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), pythonVersion())

	args := []string{"--gold", goldPath, "--trace", tracePath, "--k", k}
	var goRuns, pyRuns []sample
	for i := 0; i < runs; i++ {
		g, err := measure(bin, append([]string{"score"}, args...)...)
		if err != nil {
			return err
		}
		p, err := measure("python3", append([]string{ref}, args...)...)
		if err != nil {
			return err
		}
		goRuns, pyRuns = append(goRuns, g), append(pyRuns, p)
	}
	g, p := median(goRuns), median(pyRuns)
	same := bytes.Equal(g.out, p.out)
	fmt.Printf("%-22s %10s %12s\n", "scorer", "wall (s)", "peak RSS (MB)")
	fmt.Printf("%-22s %10.2f %12.1f\n", "shadoweval score", g.wall.Seconds(), float64(g.rssKB)/1024)
	fmt.Printf("%-22s %10.2f %12.1f\n", "seed 002 reference", p.wall.Seconds(), float64(p.rssKB)/1024)
	fmt.Printf("speed-up: %.1fx   memory: %.2fx of the reference   reports identical: %v\n",
		p.wall.Seconds()/g.wall.Seconds(), float64(g.rssKB)/float64(p.rssKB), same)
	if !same {
		return fmt.Errorf("reports differ:\n%s\n---\n%s", g.out, p.out)
	}
	return nil
}

// measure runs one command and reads its wall time and peak RSS (from the
// kernel's rusage of the child).
func measure(name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 { // 1 = a gate failed
			return sample{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, rssKB: ru.Maxrss, out: out.Bytes()}, nil
}

func median(s []sample) sample {
	sorted := slices.Clone(s)
	slices.SortFunc(sorted, func(a, b sample) int { return int(a.wall - b.wall) })
	m := sorted[len(sorted)/2]
	for _, x := range s { // report the worst peak memory seen
		m.rssKB = max(m.rssKB, x.rssKB)
	}
	return m
}

func pythonVersion() string {
	out, err := exec.Command("python3", "--version").Output()
	if err != nil {
		return "python3 missing"
	}
	return string(bytes.TrimSpace(out))
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
