package analysis

import (
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/window"
)

// BenchmarkVerdictRead times GET /api/v1/verdict for one analysis while 1
// or 64 (analysis.max_active) run, each with 5,000 canary and 20,000
// baseline events behind it, as traffic brings them: visits of 3 runs of
// a question drawn from 3,000, canary 4 events/s and live 16/s, so that
// most canary visits are paired (and closed) and every check reads its
// pairs. Between reads the traffic goes on (untimed), so that a read has
// new events and newly closed visits to fold, as a controller's poll has.
// The read judges one analysis, so the count should not matter. It
// reports the 99th percentile of the reads' latency.
func BenchmarkVerdictRead(b *testing.B) {
	for _, active := range []int{1, 64} {
		b.Run("active="+strconv.Itoa(active), func(b *testing.B) {
			m := newTestManager(nil)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range active {
				id := "a" + strconv.Itoa(i)
				if _, _, err := m.Start(StartRequest{ID: id, Arm: "canary" + strconv.Itoa(i)}, t0); err != nil {
					b.Fatal(err)
				}
			}
			// Each arm's visits at its rate over 1,250 s: live 16 events/s
			// (20,000), each canary 4/s (5,000).
			var o window.Observation
			visit := func(arm string, at time.Time) {
				q := rng.IntN(3000)
				for run := range 3 {
					benchEvent(rng, arm, q, at.Add(time.Duration(run)*time.Second), &o)
					if err := m.Observe(&o, o.Time); err != nil {
						b.Fatal(err)
					}
				}
			}
			k := 0
			step := func(canaries int) {
				at := t0.Add(time.Duration(k) * 187500 * time.Microsecond)
				visit("live", at)
				if k%4 == 0 {
					for i := range canaries {
						visit("canary"+strconv.Itoa(i), at)
					}
				}
				k++
			}
			for k < 20000/3 {
				step(active)
			}
			if r := m.List()[0].Result(); r.Checks[0].Pairs == 0 {
				b.Fatalf("no pairs: %+v", r.Checks[0])
			}
			mux := http.NewServeMux()
			(&Handlers{M: m, Now: func() time.Time { return t0 }}).Register(mux)
			lat := make([]time.Duration, 0, 1<<16)
			n := 0
			for b.Loop() {
				// Traffic goes on between reads, as it does between a
				// controller's polls: a live visit, and every fourth a
				// visit of each canary, closing visits the read then
				// folds.
				b.StopTimer()
				step(active)
				b.StartTimer()
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
			for _, q := range []int{50, 95, 99} {
				b.ReportMetric(float64(lat[len(lat)*q/100].Microseconds()), "p"+strconv.Itoa(q)+"-µs")
			}
		})
	}
}

// benchEvent fills o with a run of question q of arm at t: a question's
// own chance of a right answer, a λ state and a cited ΔS fixed per
// question, as a real index has them.
func benchEvent(rng *rand.Rand, arm string, q int, at time.Time, o *window.Observation) {
	right := float64(q%10) / 9 // 0, 1/9, …, 1
	good := rng.Float64() < right
	state := window.LambdaConvergent
	if good != (right >= 0.5) {
		state = window.LambdaDivergent
	}
	*o = window.Observation{
		Arm: arm, QID: "q" + strconv.Itoa(q), QIDKey: uint32(q + 1), Time: at, HasAnswer: true, Answerable: q%5 != 0, Shipped: true,
		Hit: good, Contained: good, Triage: -1, HasDeltaSCited: true, DeltaSCited: float64(q%997) / 997,
		Lambda: window.LambdaRun{State: state},
	}
}

// BenchmarkQuantileShapes is the visits' shapes a ΔS quantile check reads,
// at 10,000 and 300,000 distinct visits (every run's ΔS new, as when
// answers cite differently each time: about 30 minutes of a canary at 500
// events/s), as the two quantiles' bins wander a bin or two between reads
// and visits close: what a read and a narrowing pay for the shapes, and
// the sample's heap per visit.
func BenchmarkQuantileShapes(b *testing.B) {
	for _, n := range []int{10000, 300000} {
		b.Run("visits="+strconv.Itoa(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			visit := func() window.CitedVisit {
				buf := make([]byte, 12)
				prs := make([]uint32, 3)
				for j := range prs {
					c, d := 300+rng.IntN(400), 300+rng.IntN(400)
					prs[j] = uint32(c)<<16 | uint32(d)
				}
				slices.Sort(prs)
				for j, p := range prs {
					binary.BigEndian.PutUint32(buf[4*j:], p)
				}
				return window.CitedVisit(buf)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			cs := newCitedSample(nil, nil)
			for range n {
				cs.add(visit(), 1)
			}
			cs.shapesAt(500, 500)
			runtime.GC()
			runtime.ReadMemStats(&after)
			// The sample's heap, its visits' keys (shared with the
			// analysis' counts of them) included.
			perVisit := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
			qs := [2][2]int{{500, 500}, {660, 660}}
			k := 0
			for b.Loop() {
				b.StopTimer()
				for range 5 {
					cs.add(visit(), 1)
				}
				q := &qs[k%2]
				q[0] = min(max(q[0]+rng.IntN(5)-2, 300), 700)
				q[1] = min(max(q[1]+rng.IntN(5)-2, 300), 700)
				k++
				b.StartTimer()
				cs.shapesAt(q[0], q[1])
			}
			b.ReportMetric(perVisit, "heap-B/visit")
		})
	}
}
