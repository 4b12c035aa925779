package sidecar

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// BenchmarkApplyAnalyses is BenchmarkApply on compact events of the live
// and canary arms with 0 and 8 canary analyses running, every one of which
// reads both arms: the extra cost of accumulating each event into 8
// analyses, in the same run. cpu-ns/op is the process' CPU per event.
// The events are 1 ms apart in event time (1,000 a second, the load
// tool's rate) whatever the benchmark's own speed: the analyses narrow
// their bounds every 10 s of event time, so that cost per event is the
// one at that rate, and a run counts the same instructions however slowly
// it runs.
func BenchmarkApplyAnalyses(b *testing.B) {
	for _, active := range []int{0, 1, 8} {
		b.Run("analyses="+strconv.Itoa(active), func(b *testing.B) {
			a, msgs := benchApp(b, "compact")
			start := time.Now()
			for i := range active {
				if _, _, err := a.analyses.m.Start(analysis.StartRequest{ID: "bench" + strconv.Itoa(i)}, start.Add(-time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			n, cpu := applyEach(b, a, msgs, func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) })
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

// BenchmarkScrape times GET /metrics of a sidecar with 0, 8 and 64
// canary analyses running, each judged by an evaluation tick after 60,000
// events (1 minute at 1,000 events/s), as Prometheus scrapes between
// ticks. ns/op is one scrape; a scrape of N analyses less one of none is
// what their series cost.
func BenchmarkScrape(b *testing.B) {
	for _, active := range []int{0, 8, 64} {
		b.Run("analyses="+strconv.Itoa(active), func(b *testing.B) {
			a, msgs := benchApp(b, "compact")
			start := time.Now()
			for i := range active {
				if _, _, err := a.analyses.m.Start(analysis.StartRequest{ID: "bench" + strconv.Itoa(i)}, start.Add(-time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			for n := range 60000 {
				m := &msgs[n%len(msgs)]
				now := start.Add(time.Duration(n) * time.Millisecond)
				copy(m.data[7:], now.UTC().Format(gen.TSLayout))
				a.ingest.handle(&stream.Message{Kind: wire.KindTrace, Subject: m.subject, Data: m.data, Received: now})
			}
			a.analyses.m.Tick(start.Add(time.Minute))
			h := a.routes()
			req := httptest.NewRequest("GET", "/metrics", nil)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET /metrics: %d", rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// TestAnalysisGaugesWhileTicking: scrapes running alongside the events
// and the evaluation ticks each give one tick's judgement whole: a
// check's estimate and bounds always those of one recorded judgement.
func TestAnalysisGaugesWhileTicking(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	m := analysis.NewManager(analysis.Options{Config: config.Default().Analysis, Ks: []int{1, 3, 5, 10}, MinRuns: 3})
	if _, _, err := m.Start(analysis.StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	reg := prometheus.NewRegistry()
	reg.MustRegister(newAnalysisCollector(m))
	precisionOf := func(r *analysis.Result) [3]float64 {
		for _, c := range r.Checks {
			if c.Name == "precision" && c.Estimate != nil {
				return [3]float64{*c.Estimate, c.Interval[0], c.Interval[1]}
			}
		}
		return [3]float64{}
	}
	var recorded [][3]float64
	at := t0
	tick := func(batch int) {
		for i := range 200 {
			for _, arm := range []string{"live", "canary"} {
				right := (i+batch)%10 < 8
				if arm == "canary" {
					right = (i+2*batch)%10 < 7
				}
				q := (batch*200 + i) % 300
				o := window.Observation{Arm: arm, QID: "q" + strconv.Itoa(q), QIDKey: uint32(q + 1), Time: at,
					HasAnswer: true, Answerable: true, Shipped: true, Hit: right, Contained: right, Triage: -1}
				if err := m.Observe(&o, o.Time); err != nil {
					t.Error(err)
					return
				}
				at = at.Add(50 * time.Millisecond)
			}
		}
		m.Tick(at)
		recorded = append(recorded, precisionOf(an.Recorded()))
	}
	tick(0)

	const scrapers = 4
	seen := make([][][3]float64, scrapers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				fams, err := reg.Gather()
				if err != nil {
					t.Error(err)
					return
				}
				var got [3]float64
				for _, f := range fams {
					i := slices.Index([]string{"shadoweval_analysis_check_estimate", "shadoweval_analysis_check_lower", "shadoweval_analysis_check_upper"}, f.GetName())
					if i < 0 {
						continue
					}
					for _, s := range f.GetMetric() {
						for _, l := range s.GetLabel() {
							if l.GetName() == "check" && l.GetValue() == "precision" {
								got[i] = s.GetGauge().GetValue()
							}
						}
					}
				}
				seen[w] = append(seen[w], got)
			}
		}()
	}
	for batch := 1; batch <= 30; batch++ {
		tick(batch)
	}
	close(stop)
	wg.Wait()

	distinct := map[[3]float64]bool{}
	for _, r := range recorded {
		distinct[r] = true
	}
	if len(distinct) < 10 {
		t.Fatalf("the ticks recorded %d distinct precision judgements; the test needs them to move", len(distinct))
	}
	scrapes := 0
	for w := range seen {
		for _, got := range seen[w] {
			scrapes++
			if !slices.Contains(recorded, got) {
				t.Fatalf("a scrape gave precision (estimate, lower, upper) %v, which no tick judged", got)
			}
		}
	}
	if scrapes == 0 {
		t.Fatal("no scrape ran")
	}
}

// TestAnalysisGauges: an analysis' gauges are judged at the scrape until
// the first evaluation tick, then are the latest tick's judgement: events
// since move the verdict read, not the gauges, until the next tick.
func TestAnalysisGauges(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	m := analysis.NewManager(analysis.Options{Config: config.Default().Analysis, Ks: []int{1, 3, 5, 10}, MinRuns: 3})
	if _, _, err := m.Start(analysis.StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	reg := prometheus.NewRegistry()
	col := newAnalysisCollector(m)
	reg.MustRegister(col)

	// send brings n runs of each arm from at on, the canary's answers
	// right in canaryRight of every 10 and live's in 8.
	sent := 0
	send := func(n, canaryRight int, at time.Time) {
		t.Helper()
		for i := range n {
			for _, arm := range []string{"live", "canary"} {
				right := i%10 < 8
				if arm == "canary" {
					right = i%10 < canaryRight
				}
				q := (sent + i) % 300
				o := window.Observation{Arm: arm, QID: "q" + strconv.Itoa(q), QIDKey: uint32(q + 1), Time: at.Add(time.Duration(i) * 100 * time.Millisecond),
					HasAnswer: true, Answerable: true, Shipped: true, Hit: right, Contained: right, Triage: -1}
				if err := m.Observe(&o, o.Time); err != nil {
					t.Fatal(err)
				}
			}
		}
		sent += n
	}
	// precision is the precision check's (estimate, lower, upper) on
	// /metrics.
	precision := func() [3]float64 {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got [3]float64
		for i, name := range []string{"shadoweval_analysis_check_estimate", "shadoweval_analysis_check_lower", "shadoweval_analysis_check_upper"} {
			found := false
			for _, f := range fams {
				if f.GetName() != name {
					continue
				}
				for _, s := range f.GetMetric() {
					labels := map[string]string{}
					for _, l := range s.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					if labels["analysis"] == "a" && labels["check"] == "precision" {
						got[i], found = s.GetGauge().GetValue(), true
					}
				}
			}
			if !found {
				t.Fatalf("/metrics: no %s for the precision check of a", name)
			}
		}
		return got
	}
	judged := func() [3]float64 {
		t.Helper()
		for _, c := range an.Result().Checks {
			if c.Name == "precision" && c.Estimate != nil {
				return [3]float64{*c.Estimate, c.Interval[0], c.Interval[1]}
			}
		}
		t.Fatal("the precision check of a has no estimate")
		return [3]float64{}
	}

	send(600, 8, t0.Add(time.Second))
	if got, want := precision(), judged(); got != want {
		t.Fatalf("before any tick: gauges %v, want the judgement at the scrape %v", got, want)
	}
	m.Tick(t0.Add(2 * time.Minute))
	ticked := judged()
	if got := precision(); got != ticked {
		t.Fatalf("after a tick: gauges %v, want its judgement %v", got, ticked)
	}
	send(600, 5, t0.Add(2*time.Minute))
	now := judged()
	if now == ticked {
		t.Fatalf("600 more runs of a worse canary did not move precision: %v", now)
	}
	if got := precision(); got != ticked {
		t.Errorf("events after the tick: gauges %v, want the tick's %v (the verdict read says %v)", got, ticked, now)
	}
	m.Tick(t0.Add(4 * time.Minute))
	if got, want := precision(), judged(); got != want {
		t.Errorf("after the next tick: gauges %v, want its judgement %v", got, want)
	}

	// An ended analysis leaves /metrics, and the collector keeps nothing
	// of it.
	m.End("a", t0.Add(5*time.Minute))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "shadoweval_analysis_") {
			t.Errorf("an ended analysis still has %s on /metrics", f.GetName())
		}
	}
	if n := len(col.built); n != 0 {
		t.Errorf("the collector keeps the series of %d analyses after the only one ended", n)
	}
}
