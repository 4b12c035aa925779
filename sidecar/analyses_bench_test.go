package sidecar

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/stream/gen"
)

// BenchmarkApplyAnalyses is BenchmarkApply on compact events of the live
// and canary arms with 0 and 8 canary analyses running, every one of which
// reads both arms: the extra cost of accumulating each event into 8
// analyses, in the same run. cpu-ns/op is the process' CPU per event.
func BenchmarkApplyAnalyses(b *testing.B) {
	for _, active := range []int{0, 8} {
		b.Run("analyses="+strconv.Itoa(active), func(b *testing.B) {
			a, msgs := benchApp(b, "compact")
			for i := range active {
				if _, _, err := a.analyses.m.Start(analysis.StartRequest{ID: "bench" + strconv.Itoa(i)}, time.Now().Add(-time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			n := 0
			var ts []byte
			for b.Loop() {
				m := &msgs[n%len(msgs)]
				now := time.Now()
				if n%256 == 0 {
					ts = now.UTC().AppendFormat(ts[:0], gen.TSLayout)
				}
				copy(m.data[7:], ts)
				a.handle(&stream.Message{Kind: stream.KindTrace, Subject: m.subject, Data: m.data, Received: now})
				n++
			}
			cpu := processCPU() - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
			if active > 0 {
				an, _ := a.analyses.m.Get("bench0")
				if r := an.Result(); r.Events.Arm == 0 || r.Events.Baseline == 0 {
					b.Fatalf("the analyses took no event: %+v", r.Events)
				}
			}
		})
	}
}
