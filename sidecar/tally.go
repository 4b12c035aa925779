package sidecar

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// A tally accumulates the per-event Prometheus series of one ingest
// goroutine: events by kind, arm and outcome, the numerators and
// denominators, the ΔS histograms, lag and processing time. Every event
// touched about twenty client_golang instruments, each an atomic add on a
// cache line the other ingest goroutines write too; a tally is plain
// counters behind a mutex only its own goroutine takes (and a scrape), and
// tallyCollector sums the tallies at scrape time.
type tally struct {
	mu         sync.Mutex
	ks         []int
	arms       map[string]*armTally
	processing [wire.NumKinds]classicHist
	lag        classicHist
}

type armTally struct {
	created  time.Time // the series' creation time, as client_golang stamps it
	events   [wire.NumKinds][vocab.NumOutcomes]uint64
	observed bool                // a scored observation was counted: num, den and ΔS are exported
	counts   *window.EventCounts // the numerators and denominators
	dsCited  deltaSHist
	dsRetr   deltaSHist
}

func newTally(ks []int) *tally { return &tally{ks: ks, arms: map[string]*armTally{}} }

// arm is the arm's tally, made on first use; t.mu is held.
func (t *tally) arm(arm string) *armTally {
	at := t.arms[arm]
	if at == nil {
		at = &armTally{created: time.Now(), counts: window.NewEventCounts(t.ks)}
		t.arms[arm] = at
	}
	return at
}

// classicHist is a histogram with fixed buckets: counts[i] values ≤
// bounds[i] and > bounds[i-1]; the last count is above every bound.
type classicHist struct {
	counts  []uint64
	count   uint64
	sum     float64
	created time.Time // of the first observation
}

func (h *classicHist) observe(bounds []float64, v float64) {
	h.observeIn(bounds, bucketOf(bounds, v), v)
}

// observeIn counts v, whose bucket is i.
func (h *classicHist) observeIn(bounds []float64, i int, v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(bounds)+1)
		h.created = time.Now()
	}
	h.counts[i]++
	h.count++
	h.sum += v
}

func (h *classicHist) merge(o *classicHist) {
	if o.counts == nil {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, len(o.counts))
	}
	h.created = earliest(h.created, o.created)
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.count += o.count
	h.sum += o.sum
}

// bucketOf is sort.SearchFloat64s(bounds, v) (the first bound ≥ v)
// without its closure calls: it runs several times per event.
func bucketOf(bounds []float64, v float64) int {
	lo, hi := 0, len(bounds)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !(bounds[mid] >= v) { // NaN goes past the end, as in SearchFloat64s
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// earliest is the earlier of two times, zero meaning unset.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// cumulative is the bucket map of prometheus.NewConstHistogram.
func (h *classicHist) cumulative(bounds []float64) map[float64]uint64 {
	m := make(map[float64]uint64, len(bounds))
	var c uint64
	for i, b := range bounds {
		if h.counts != nil {
			c += h.counts[i]
		}
		m[b] = c
	}
	return m
}

// The ΔS histogram is native, schema 3 (bucket factor 2^(1/8) ≈ 1.09, what
// client_golang picks for NativeHistogramBucketFactor 1.1), with classic
// buckets too for scrapers that do not negotiate native histograms. ΔS
// lies in [0, 2] (a cosine distance; given values are checked in [0, 1]),
// so with a zero bucket of width 2^-20 the positive buckets are keys
// −159…8: a fixed array, where client_golang keeps a map and may halve
// the resolution. Values outside the range (never produced) are clamped
// into the end buckets, so the count and sum stay exact.
const (
	deltaSSchema    = 3
	deltaSMinKey    = -159 // (2^-20, 2^(-159/8)]
	deltaSMaxKey    = 8    // (2^(7/8), 2]
	deltaSKeyCount  = deltaSMaxKey - deltaSMinKey + 1
	deltaSZeroLimit = 1.0 / (1 << 20) // 2^-20
)

// deltaSBounds are client_golang's schema 3 bounds of a mantissa in
// [0.5, 1): bucket key = index + 8 × (exponent − 1).
var deltaSBounds = [8]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// deltaSClassic are the classic buckets of shadoweval_delta_s.
var deltaSClassic = []float64{0.1, 0.2, 0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.85, 1}

type deltaSHist struct {
	classic classicHist
	zero    uint64
	keys    [deltaSKeyCount]uint64 // keys[k-deltaSMinKey]
}

// deltaSClassicFrom[j] is bucketOf(deltaSClassic, j/20): a value of
// [j/20, (j+1)/20) has its bucket there or a little after.
var deltaSClassicFrom = func() (t [21]uint8) {
	for j := range t {
		t[j] = uint8(bucketOf(deltaSClassic, float64(j)/20))
	}
	return t
}()

// deltaSClassicBucket is bucketOf(deltaSClassic, v), with a table instead
// of a binary search for v in [0, 1] (ΔS is counted for every retrieved
// item, so this is per-event work).
func deltaSClassicBucket(v float64) int {
	if !(v >= 0 && v <= 1) {
		return bucketOf(deltaSClassic, v)
	}
	// One cell lower: v*20 may round up past v's cell.
	i := int(deltaSClassicFrom[max(int(v*20)-1, 0)])
	for i < len(deltaSClassic) && deltaSClassic[i] < v {
		i++
	}
	return i
}

// deltaSKeyFrom[m] is the first index of deltaSBounds not below the
// smallest mantissa whose top six bits are m, 0.5 + m/128.
var deltaSKeyFrom = func() (t [64]uint8) {
	for m := range t {
		lo := 0.5 + float64(m)/128
		for t[m] < uint8(len(deltaSBounds)) && deltaSBounds[t[m]] < lo {
			t[m]++
		}
	}
	return t
}()

// deltaSKey is the native bucket key of v > deltaSZeroLimit, as
// client_golang's histogramCounts.observe computes it (math.Frexp, then
// the first bound not below the mantissa), read from v's bits: v is a
// normal number, so its Frexp exponent is the biased one − 1022 and its
// mantissa the same bits with that exponent.
func deltaSKey(v float64) int {
	b := math.Float64bits(v)
	exp := int(b>>52&0x7ff) - 1022
	frac := math.Float64frombits(b&^(0x7ff<<52) | 1022<<52)
	i := int(deltaSKeyFrom[b>>46&0x3f])
	for i < len(deltaSBounds) && deltaSBounds[i] < frac {
		i++
	}
	return i + (exp-1)*len(deltaSBounds)
}

func (h *deltaSHist) observe(v float64) {
	h.classic.observeIn(deltaSClassic, deltaSClassicBucket(v), v)
	if v <= deltaSZeroLimit {
		h.zero++
		return
	}
	k := deltaSMaxKey
	if v <= 2 {
		k = max(deltaSKey(v), deltaSMinKey)
	}
	h.keys[k-deltaSMinKey]++
}

func (h *deltaSHist) merge(o *deltaSHist) {
	h.classic.merge(&o.classic)
	h.zero += o.zero
	for i, c := range o.keys {
		h.keys[i] += c
	}
}

// metric is h as one series: native buckets (through
// prometheus.NewConstNativeHistogram) and the classic ones.
func (h *deltaSHist) metric(desc *prometheus.Desc, created time.Time, labels ...string) (prometheus.Metric, error) {
	pos := map[int]int64{}
	for i, c := range h.keys {
		if c > 0 {
			pos[i+deltaSMinKey] = int64(c)
		}
	}
	native, err := prometheus.NewConstNativeHistogram(desc, h.classic.count, h.classic.sum, pos, nil,
		h.zero, deltaSSchema, deltaSZeroLimit, created, labels...)
	if err != nil {
		return nil, err
	}
	return withClassic{native, h.classic.cumulative(deltaSClassic)}, nil
}

// withClassic adds classic buckets to a const native histogram, as a
// client_golang histogram with both kinds of buckets writes them.
type withClassic struct {
	prometheus.Metric
	buckets map[float64]uint64
}

func (m withClassic) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	bounds := make([]float64, 0, len(m.buckets))
	for b := range m.buckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	for _, b := range bounds {
		out.Histogram.Bucket = append(out.Histogram.Bucket, &dto.Bucket{
			UpperBound: ptr(b), CumulativeCount: ptr(m.buckets[b]),
		})
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
