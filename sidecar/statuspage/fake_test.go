package statuspage

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// fakeSource is a Source with two windows and whatever arms it is given;
// every metric of window.MetricNames([5]) is reported, recall_at_5 without
// a value. calls counts Report calls, so tests can tell a refresh happened.
type fakeSource struct {
	mu     sync.Mutex
	arms   []string
	values map[string]map[string]Value // arm → metric → value
	events map[string]map[string]int64
	calls  atomic.Int64
}

func newFakeSource() *fakeSource {
	f := &fakeSource{
		arms:   []string{"canary", "live"}, // not in page order on purpose
		values: map[string]map[string]Value{},
		events: map[string]map[string]int64{},
	}
	for _, arm := range f.arms {
		prec := 0.91
		if arm == "canary" {
			prec = 0.71 // its gate fires
		}
		m := map[string]Value{
			"precision":           {Value: prec, Valid: true, Samples: 812},
			"chr":                 {Value: 0.88, Valid: true, Samples: 812},
			"under_refusal":       {Value: 0.01, Valid: true, Samples: 90},
			"over_refusal":        {Value: 0.04, Valid: true, Samples: 700},
			"recall_at_5":         {Valid: false, Samples: 0},
			"mean_precision_at_5": {Value: 0.5, Valid: true, Samples: 700},
			"mean_recall_at_5":    {Value: 0.75, Valid: true, Samples: 700},
			"delta_s_median":      {Value: 0.31, Valid: true, Samples: 650},
			"anchor_proximity":    {Value: 1234.5, Valid: true, Samples: 20},
		}
		f.values[arm] = m
		f.events[arm] = map[string]int64{"scored": 812, "unlabeled": 3, "rejected": 2, "duplicate": 1, "late": 0, "join_timeout": 4}
	}
	return f
}

func (f *fakeSource) Arms() []string    { return f.arms }
func (f *fakeSource) Windows() []string { return []string{"5m", "1h"} }

func (f *fakeSource) Report(arm, window string) (map[string]Value, map[string]int64, bool) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.values[arm]
	if !ok {
		return nil, nil, false
	}
	out := make(map[string]Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	ev := make(map[string]int64, len(f.events[arm]))
	for k, v := range f.events[arm] {
		ev[k] = v
	}
	return out, ev, true
}

// SetScored changes the scored count of arm (to see a refresh land).
func (f *fakeSource) SetScored(arm string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[arm]["scored"] = n
}

type fakeGates map[string][]gates.Result

func (g fakeGates) GateStates(arm string) []gates.Result { return g[arm] }

func ptr(x float64) *float64 { return &x }

func newFakeGates() fakeGates {
	return fakeGates{
		"canary": {
			{Gate: "precision_floor", Metric: "precision", Op: ">=", Threshold: 0.8, Window: "5m", Severity: "page", State: gates.Firing, Value: ptr(0.71), Samples: 812, Reason: "precision 0.71 < 0.8 for 5m"},
			{Gate: "chr_floor", Metric: "chr", Op: ">=", Threshold: 0.75, Window: "5m", Severity: "ticket", State: gates.OK, Value: ptr(0.88), Samples: 812},
			{Gate: "recall5_vs_live", Metric: "recall_at_5", CompareTo: "live", Op: ">=", Threshold: -0.02, Window: "5m", State: gates.Inconclusive, Samples: 0},
			{Gate: "delta_s_p90", Metric: "delta_s_p90", Op: "<=", Threshold: 0.55, Window: "1h", State: gates.Pending, Value: ptr(0.6), Samples: 650},
		},
		"live": {
			{Gate: "precision_floor", Metric: "precision", Op: ">=", Threshold: 0.8, Window: "5m", Severity: "page", State: gates.Resolved, Value: ptr(0.91), Samples: 812},
		},
	}
}

// fillHistory records 30 points of every metric of src, 10 s apart, ending
// at end, with a wave so the charts have a shape.
func fillHistory(h *History, src *fakeSource, end time.Time) {
	for i := 29; i >= 0; i-- {
		t := end.Add(-time.Duration(i) * 10 * time.Second)
		for _, arm := range src.Arms() {
			m, _, _ := src.Report(arm, "5m")
			for name, v := range m {
				if v.Valid {
					v.Value += 0.05 * float64((i*7)%5-2) / 2
					if i == 12 {
						v.Valid = false // a gap
					}
				}
				m[name] = v
			}
			h.Record(t, arm, "5m", m)
		}
	}
}
