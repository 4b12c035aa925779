package statuspage

import (
	"context"
	"math"
	"sync"
	"time"
)

// DefaultPoints is the history length NewHistory uses for points < 1: 180
// points are 30 min of the 5m window at its 10 s resolution and 3 h of the
// 1h window at 1 min.
const DefaultPoints = 180

// Bounds on what a History holds, whatever its callers record: arms and
// windows come from the window package, which folds arms beyond its own
// limit into one, so these only guard against a misbehaving source. Series
// and metrics past them are not recorded.
const (
	MaxSeries  = 1024 // (arm, window) pairs
	MaxMetrics = 256  // metrics per (arm, window)
)

// Value is one metric of one window: Valid=false is the "—" of SPEC §4
// (no value). Samples is the metric's sample count.
type Value struct {
	Value   float64
	Valid   bool
	Samples int64
}

// Point is one recorded value of one metric.
type Point struct {
	T       time.Time
	Value   float64
	Valid   bool
	Samples int64
}

// History keeps the last points values of every (arm, window, metric) in
// fixed rings, so its memory is bounded by points × arms × windows ×
// metrics (16 bytes a value). It is safe for concurrent use.
type History struct {
	points int

	mu     sync.RWMutex
	series map[seriesKey]*series
	res    map[string]time.Duration
}

type seriesKey struct{ arm, window string }

// series is one (arm, window): a ring of record times and, per metric, a
// ring of values aligned with it (NaN: no value).
type series struct {
	t    []int64 // unix ns; ring of up to points
	next int     // where the next record goes
	n    int     // records held
	col  map[string]int
	val  [][]float64
	smp  [][]int64
}

// NewHistory returns a History of points values per series (DefaultPoints
// when points < 1).
func NewHistory(points int) *History {
	if points < 1 {
		points = DefaultPoints
	}
	return &History{points: points, series: map[seriesKey]*series{}, res: map[string]time.Duration{}}
}

// Points is the number of values kept per series.
func (h *History) Points() int { return h.points }

// SetResolution makes Record keep at most one point per d for window (its
// bucket resolution), so that a single ticker at the finest resolution can
// record every window: with 180 points the 5m window (10 s) keeps 30 min of
// history and the 1h window (1 min) 3 h. A record less than 90 % of d after
// the last one of the same series is skipped (the 10 % absorbs ticker
// jitter). d <= 0 removes the limit.
func (h *History) SetResolution(window string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d <= 0 {
		delete(h.res, window)
		return
	}
	h.res[window] = d
}

// Record appends the values of one window snapshot of arm taken at now.
// Metrics of the series missing from values are recorded as "no value". A
// record at or before the series' last one is ignored (the clock went back
// or the same snapshot came twice), as is one within the window's
// resolution (see SetResolution).
func (h *History) Record(now time.Time, arm, window string, values map[string]Value) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := seriesKey{arm, window}
	s := h.series[key]
	if s == nil {
		if len(h.series) >= MaxSeries {
			return
		}
		s = &series{t: make([]int64, h.points), col: map[string]int{}}
		h.series[key] = s
	}
	ts := now.UnixNano()
	if s.n > 0 {
		last := s.t[(s.next+h.points-1)%h.points]
		if ts <= last {
			return
		}
		if res := h.res[window]; res > 0 && time.Duration(ts-last) < res-res/10 {
			return
		}
	}
	for name := range values {
		if _, ok := s.col[name]; !ok && len(s.col) < MaxMetrics {
			s.col[name] = len(s.val)
			v := make([]float64, h.points)
			for i := range v {
				v[i] = math.NaN()
			}
			s.val = append(s.val, v)
			s.smp = append(s.smp, make([]int64, h.points))
		}
	}
	i := s.next
	s.t[i] = ts
	for name, c := range s.col {
		v, ok := values[name]
		if ok && v.Valid && !math.IsNaN(v.Value) && !math.IsInf(v.Value, 0) {
			s.val[c][i] = v.Value
		} else {
			s.val[c][i] = math.NaN()
		}
		s.smp[c][i] = v.Samples // 0 when missing
	}
	s.next = (i + 1) % h.points
	if s.n < h.points {
		s.n++
	}
}

// Collect records every window of every arm of src at now: the call for a
// ticker at the finest window resolution (with SetResolution for each
// window).
func (h *History) Collect(now time.Time, src Source) {
	for _, arm := range src.Arms() {
		for _, w := range src.Windows() {
			if m, _, ok := src.Report(arm, w); ok {
				h.Record(now, arm, w, m)
			}
		}
	}
}

// Run collects src at once, then every `every` (the finest window
// resolution), until ctx ends: the sidecar's history ticker. now nil is
// time.Now.
func (h *History) Run(ctx context.Context, every time.Duration, src Source, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	t := time.NewTicker(every)
	defer t.Stop()
	h.Collect(now(), src)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.Collect(now(), src)
		}
	}
}

// Series returns the recorded points of metric in arm and window, oldest
// first (nil when there are none). Points without a value have Valid=false.
func (h *History) Series(arm, window, metric string) []Point {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s := h.series[seriesKey{arm, window}]
	if s == nil {
		return nil
	}
	c, ok := s.col[metric]
	if !ok {
		return nil
	}
	out := make([]Point, 0, s.n)
	start := (s.next - s.n + h.points) % h.points
	for k := 0; k < s.n; k++ {
		i := (start + k) % h.points
		v := s.val[c][i]
		p := Point{T: time.Unix(0, s.t[i]), Samples: s.smp[c][i]}
		if !math.IsNaN(v) {
			p.Value, p.Valid = v, true
		}
		out = append(out, p)
	}
	return out
}

// Len reports the number of series and values held (for tests and
// self-monitoring).
func (h *History) Len() (series, values int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, s := range h.series {
		series++
		values += len(s.val) * h.points
	}
	return series, values
}
