package sidecar

import (
	"strconv"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
)

// BenchmarkApplyAnalyses is BenchmarkApply on compact events of the live
// and canary arms with 0 and 8 canary analyses running, every one of which
// reads both arms: the extra cost of accumulating each event into 8
// analyses, in the same run. cpu-ns/op is the process' CPU per event.
func BenchmarkApplyAnalyses(b *testing.B) {
	for _, active := range []int{0, 1, 8} {
		b.Run("analyses="+strconv.Itoa(active), func(b *testing.B) {
			a, msgs := benchApp(b, "compact")
			for i := range active {
				if _, _, err := a.analyses.m.Start(analysis.StartRequest{ID: "bench" + strconv.Itoa(i)}, time.Now().Add(-time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			n, cpu := applyEach(b, a, msgs)
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
