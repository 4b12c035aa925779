package analysis

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkVerdictRead times GET /api/v1/verdict for one analysis while 1
// or 64 (analysis.max_active) run, each with 5,000 canary and 20,000
// baseline events behind it: the read judges one analysis, so the count
// should not matter. It reports the 99th percentile of the reads' latency.
func BenchmarkVerdictRead(b *testing.B) {
	for _, active := range []int{1, 64} {
		b.Run("active="+strconv.Itoa(active), func(b *testing.B) {
			m := newTestManager(nil)
			rng := rand.New(rand.NewPCG(1, 1))
			t := &testing.T{}
			for i := range active {
				id := "a" + strconv.Itoa(i)
				if _, _, err := m.Start(StartRequest{ID: id, Arm: "canary" + strconv.Itoa(i)}, t0); err != nil {
					b.Fatal(err)
				}
				feed(t, m, rng, "canary"+strconv.Itoa(i), healthy, 5000, t0)
			}
			feed(t, m, rng, "live", healthy, 20000, t0)
			mux := http.NewServeMux()
			(&Handlers{M: m, Now: func() time.Time { return t0 }}).Register(mux)
			lat := make([]time.Duration, 0, 1<<16)
			n := 0
			for b.Loop() {
				req := httptest.NewRequest("GET", "/api/v1/verdict?analysis=a"+strconv.Itoa(n%active), nil)
				rec := httptest.NewRecorder()
				start := time.Now()
				mux.ServeHTTP(rec, req)
				lat = append(lat, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
				n++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
