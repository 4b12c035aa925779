package eval

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// BenchmarkEval measures `eval` on generated traces, one evaluation of the
// whole file per iteration: SHADOWEVAL_BENCH_TRACES lines (default
// 1,000,000) for a gold set of SHADOWEVAL_BENCH_GOLD questions (default
// 10,000: a seed 001 gold set is a few hundred, so each question has many
// paraphrase and seed runs). The traces are the generator's live events
// (wire/gen TraceSource: event ids with redeliveries, λ groups, top-k
// with sections and offsets, ΔS, answers), in two shapes:
//
//   - seed001: without the top-k texts, as seed 001's retrieval logs are
//     (about 700 bytes a line);
//   - live: with them, so triage runs too (about 1.3 kB a line).
//
// It reports ns/trace and the process' peak RSS during the evaluation
// (peak-MB, Linux). Files are written once per run, outside the timing.
func BenchmarkEval(b *testing.B) {
	traces := envInt(b, "SHADOWEVAL_BENCH_TRACES", 1_000_000)
	items := envInt(b, "SHADOWEVAL_BENCH_GOLD", 10_000)
	dir := b.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	writeBenchFile(b, goldPath, func(w io.Writer) error {
		return gen.WriteGold(w, gen.Options{Items: items, Seed: 42})
	})
	for _, shape := range []struct {
		name string
		text bool
	}{{"seed001", false}, {"live", true}} {
		b.Run(shape.name, func(b *testing.B) {
			tracePath := filepath.Join(dir, shape.name+".jsonl")
			writeBenchFile(b, tracePath, func(w io.Writer) error {
				src := gen.NewTraceSource(gen.Options{Items: items, Seed: 42})
				for range traces {
					line := src.Next()
					if !shape.text {
						line = stripTexts(line)
					}
					if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
						return err
					}
				}
				return nil
			})
			resetPeakRSS()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if _, err := Run(Options{Gold: goldPath, Trace: tracePath}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(traces), "ns/trace")
			if mb := peakRSSMB(); mb > 0 {
				b.ReportMetric(mb, "peak-MB")
			}
		})
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

func writeBenchFile(b *testing.B, path string, write func(io.Writer) error) {
	b.Helper()
	if err := cmdutil.WriteFile(path, write); err != nil {
		b.Fatal(err)
	}
}

// stripTexts removes the "text" members of a generated event's top-k
// items (the generator writes each last in its item).
func stripTexts(line []byte) []byte {
	const key = `,"text":"`
	var out []byte
	for {
		i := bytes.Index(line, []byte(key))
		if i < 0 {
			return append(out, line...)
		}
		out = append(out, line[:i]...)
		j := i + len(key)
		for j < len(line) && line[j] != '"' {
			if line[j] == '\\' {
				j++
			}
			j++
		}
		line = line[j+1:]
	}
}

// resetPeakRSS starts the kernel's peak RSS (VmHWM) over from the current
// RSS, so that it measures the evaluation and not the file generation.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMB is VmHWM in MiB; 0 where /proc has none.
func peakRSSMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
