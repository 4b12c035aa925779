package sidecar

import (
	"bytes"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/wire"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// The apply benchmarks time the whole in-process path of one live event,
// without NATS: App.handle → DecodeTrace → Evaluate → window Add →
// Prometheus metrics (the cost `shadoweval-load` measures end to end, minus
// the NATS client). Compare with window.BenchmarkAdd, the window share.
//
// Besides ns/op they report cpu-ns/op, the CPU time of the whole process per
// event (GC and other background work included), and events/s/core =
// 1e9 / cpu-ns/op, which stays meaningful on a busy machine.

const (
	benchSeed  = 42
	benchItems = 1000
)

// benchShapes are the message shapes of cmd/shadoweval-load: "small" (a
// seed 002 trace line plus λ state, about 230 bytes with ts), "compact"
// (small plus ΔS, about 300 bytes) and "full" (the whole TraceSource event,
// about 1.2 KB, with top-k texts, so triage runs too).
var benchShapes = []string{"small", "compact", "full"}

// shapeKeys are gen.Shapes and "full": everything but event_id (the
// benchmark cycles through its events, and repeats of an event_id are
// counted as duplicates, not scored).
var shapeKeys = func() map[string][]string {
	m := maps.Clone(gen.Shapes)
	m["full"] = []string{"qid", "q_id", "q", "query", "retrieved_ids", "answer_json", "topk", "delta_s", "ΔS", "delta_s_cited",
		"lambda_state", "λ_state", "arm", "request_id", "paraphrase", "seed", "latency_ms", "index_hash"}
	return m
}()

type benchMsg struct {
	subject string
	data    []byte // {"ts":"<30 bytes>", ...}
}

// benchApp is an App with its gold set loaded and no NATS connection, and
// messages for it; ts is at byte offset 7 of every message.
func benchApp(b *testing.B, shape string) (*App, []benchMsg) {
	dir := b.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	f, err := os.Create(goldPath)
	if err != nil {
		b.Fatal(err)
	}
	opt := gen.Options{Seed: benchSeed, Items: benchItems, Awkward: 0.05, Arms: []string{"live", "canary"}}
	if err := gen.WriteGold(f, opt); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Gold.File = goldPath
	a, err := New(Options{Config: &cfg, Registry: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.gold.Reload(); err != nil {
		b.Fatal(err)
	}
	src := gen.NewTraceSource(opt)
	msgs := make([]benchMsg, 1<<14)
	for i := range msgs {
		arm := opt.Arms[i%2]
		ev := src.NextFor(arm)
		if keys, ok := shapeKeys[shape]; ok {
			var err error
			if ev, err = gen.Keep(ev, keys); err != nil {
				b.Fatal(err)
			}
		}
		data := append([]byte(`{"ts":"`+time.Now().UTC().Format(gen.TSLayout)+`",`), ev[1:]...)
		msgs[i] = benchMsg{subject: "rag.trace." + arm, data: data}
	}
	return a, msgs
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// applyEach handles the messages in turn, one an iteration of b.Loop, on
// one goroutine, and returns how many it handled and the process' CPU
// time meanwhile. at is the clock the n-th message is received and
// stamped by; nil: time.Now.
func applyEach(b *testing.B, a *App, msgs []benchMsg, at func(n int) time.Time) (n int, cpu time.Duration) {
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	var ts []byte
	for b.Loop() {
		m := &msgs[n%len(msgs)]
		var now time.Time
		if at != nil {
			now = at(n)
		} else {
			now = time.Now()
		}
		if n%256 == 0 {
			// The publisher stamps ts; refresh it often enough that the
			// lag stays realistic.
			ts = now.UTC().AppendFormat(ts[:0], gen.TSLayout)
		}
		copy(m.data[7:], ts)
		a.ingest.handle(&stream.Message{Kind: wire.KindTrace, Subject: m.subject, Data: m.data, Received: now})
		n++
	}
	cpu = processCPU() - cpu0
	b.StopTimer()
	return n, cpu
}

// BenchmarkApply: one goroutine, as the sidecar's trace subscription.
func BenchmarkApply(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape, func(b *testing.B) {
			a, msgs := benchApp(b, shape)
			var size int
			for _, m := range msgs {
				size += len(m.data)
			}
			b.ReportMetric(float64(size)/float64(len(msgs)), "bytes/msg")
			n, cpu := applyEach(b, a, msgs, nil)
			if n > 0 && cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
				b.ReportMetric(float64(n)/cpu.Seconds(), "events/s/core")
			}
			checkAllScored(b, a, n)
		})
	}
}

// checkAllScored fails the benchmark when an event was rejected: the
// timings would be of the error path.
func checkAllScored(b *testing.B, a *App, n int) {
	b.Helper()
	mfs, err := a.reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var counted float64
	for _, mf := range mfs {
		if mf.GetName() != "shadoweval_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && (l.GetValue() == "rejected" || l.GetValue() == "late" || l.GetValue() == "duplicate") {
					b.Fatalf("%v events %s", m.GetCounter().GetValue(), l.GetValue())
				}
			}
			counted += m.GetCounter().GetValue()
		}
	}
	if int(counted) < n {
		b.Fatalf("%v events counted, want at least %d", counted, n)
	}
}

// BenchmarkApplyParallel: as many goroutines as GOMAXPROCS, as the
// sidecar's subscriptions with nats.workers 0; cpu-ns/op against
// BenchmarkApply's is the cost of sharing the windows and arms between
// cores.
func BenchmarkApplyParallel(b *testing.B) {
	a, msgs := benchApp(b, "compact")
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	var worker, total atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		w := int(worker.Add(1) - 1)
		// Each goroutine has its own copies of the messages: ts is patched
		// in place.
		mine := make([]benchMsg, len(msgs))
		for i, m := range msgs {
			mine[i] = benchMsg{subject: m.subject, data: bytes.Clone(m.data)}
		}
		n := 0
		var ts []byte
		for pb.Next() {
			m := &mine[(n*7+w)%len(mine)]
			now := time.Now()
			if n%256 == 0 {
				ts = now.UTC().AppendFormat(ts[:0], gen.TSLayout)
			}
			copy(m.data[7:], ts)
			a.ingest.handle(&stream.Message{Kind: wire.KindTrace, Subject: m.subject, Data: m.data, Received: now, Worker: w})
			n++
		}
		total.Add(int64(n))
	})
	cpu := processCPU() - cpu0
	b.StopTimer()
	if n := total.Load(); n > 0 && cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
		b.ReportMetric(float64(n)/cpu.Seconds(), "events/s/core")
	}
	checkAllScored(b, a, int(total.Load()))
}
