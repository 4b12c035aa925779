package sidecar

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// TestDeltaSHistMatchesClientGolang: the tally's ΔS histogram writes the
// same series as a client_golang histogram with the same classic buckets,
// bucket factor 1.1 and zero threshold fed the same values: schema, zero
// bucket, spans, deltas, classic buckets, count and sum.
func TestDeltaSHistMatchesClientGolang(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := map[string][]float64{
		"typical":  nil,
		"edges":    {0, 1e-300, deltaSZeroLimit, math.Nextafter(deltaSZeroLimit, 1), 0.5, 1, 2, 0x1p-10, 0.1, 0.45, 0.85},
		"one zero": {0},
		"empty":    {},
	}
	for range 20000 {
		cases["typical"] = append(cases["typical"], r.Float64()*r.Float64())
	}
	desc := prometheus.NewDesc("shadoweval_delta_s", "help", []string{"arm", "which"}, nil)
	for name, vals := range cases {
		t.Run(name, func(t *testing.T) {
			ref := prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name: "shadoweval_delta_s", Help: "help", Buckets: deltaSClassic,
				NativeHistogramBucketFactor:  1.1,
				NativeHistogramZeroThreshold: deltaSZeroLimit,
			}, []string{"arm", "which"}).WithLabelValues("live", "cited")
			var h deltaSHist
			for _, v := range vals {
				ref.Observe(v)
				h.observe(v)
			}
			var want, got dto.Metric
			if err := ref.(prometheus.Metric).Write(&want); err != nil {
				t.Fatal(err)
			}
			created := time.Now()
			m, err := h.metric(desc, created, "live", "cited")
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Write(&got); err != nil {
				t.Fatal(err)
			}
			if !got.Histogram.GetCreatedTimestamp().AsTime().Equal(created) {
				t.Errorf("created %v, want %v", got.Histogram.GetCreatedTimestamp().AsTime(), created)
			}
			// Each histogram's own creation time.
			want.Histogram.CreatedTimestamp, got.Histogram.CreatedTimestamp = nil, nil
			if !proto.Equal(want.Histogram, got.Histogram) {
				t.Errorf("histograms differ:\nclient_golang %v\ntally         %v", want.Histogram, got.Histogram)
			}
		})
	}
}

// TestTallySumsWorkers: the collector adds up the tallies of every
// goroutine.
func TestTallySumsWorkers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := newAppMetrics(reg, []int{1}, 3)
	if m.tally(0) == m.tally(1) || m.tally(2) != m.tally(-1) || m.tally(7) != m.tally(-1) {
		t.Fatal("want two tallies of their own and one shared by the rest")
	}
	for i := range 3 {
		m.tally(i).record(0, "live", 1, 1, nil, -1, 0.001)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			switch mf.GetName() {
			case "shadoweval_events_total":
				found[mf.GetName()] += s.GetCounter().GetValue()
			case "shadoweval_processing_seconds":
				found[mf.GetName()] += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	if found["shadoweval_events_total"] != 3 || found["shadoweval_processing_seconds"] != 3 {
		t.Errorf("summed %v, want 3 events (two goroutines and the shared tally) and 3 timings", found)
	}
}

func TestBucketOf(t *testing.T) {
	for _, bounds := range [][]float64{nil, {1}, deltaSClassic, lagBounds, processingBounds} {
		for _, v := range append([]float64{math.Inf(-1), -1, 0, 1e-7, 0.45, 0.451, 1, 2, 1e9, math.Inf(1), math.NaN()}, bounds...) {
			if got, want := bucketOf(bounds, v), sort.SearchFloat64s(bounds, v); got != want {
				t.Errorf("bucketOf(%v, %v) = %d, want %d", bounds, v, got, want)
			}
		}
	}
}

// deltaSTestValues are the values where the ΔS buckets can go wrong: each
// bound and its neighbours, the cell edges of the lookup tables, powers
// of two, and random ones.
func deltaSTestValues() []float64 {
	vs := []float64{math.NaN(), math.Inf(-1), -1, -0.0, 0, deltaSZeroLimit, math.Nextafter(deltaSZeroLimit, 1), 1, 2, 3, math.Inf(1)}
	edge := func(x float64) { vs = append(vs, math.Nextafter(x, -1), x, math.Nextafter(x, 2)) }
	for _, b := range deltaSClassic {
		edge(b)
	}
	for j := 0; j <= 20; j++ {
		edge(float64(j) / 20)
	}
	for e := -20; e <= 1; e++ {
		for _, b := range deltaSBounds {
			edge(math.Ldexp(b, e))
		}
		for m := 0; m < 64; m++ {
			edge(math.Ldexp(0.5+float64(m)/128, e))
		}
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 100_000 {
		vs = append(vs, r.Float64(), math.Round(r.Float64()*1000)/1000, math.Ldexp(r.Float64(), -r.IntN(21)))
	}
	return vs
}

func TestDeltaSBuckets(t *testing.T) {
	for _, v := range deltaSTestValues() {
		if got, want := deltaSClassicBucket(v), sort.SearchFloat64s(deltaSClassic, v); got != want {
			t.Errorf("deltaSClassicBucket(%v) = %d, want %d", v, got, want)
		}
		if !(v > deltaSZeroLimit && v <= 2) {
			continue
		}
		frac, exp := math.Frexp(v)
		want := sort.SearchFloat64s(deltaSBounds[:], frac) + (exp-1)*len(deltaSBounds)
		if got := deltaSKey(v); got != want {
			t.Errorf("deltaSKey(%v) = %d, want %d", v, got, want)
		}
	}
}
