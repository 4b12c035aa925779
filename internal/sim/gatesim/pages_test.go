package gatesim

import (
	"os"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
)

// The on-call targets: a healthy arm at 16 events/s raises at most one
// page per 30 days; a 10-point precision drop fires within 10 minutes
// (median).
const (
	maxPagesPer30Days = 1
	maxTimeToFire     = 10 * time.Minute
)

// quietScenario is DefaultPageScenario at 1 event/s per arm: a night, or a
// small canary, where noise decides point-value gates.
func quietScenario() PageScenario {
	sc := DefaultPageScenario()
	for i := range sc.Arms {
		sc.Arms[i].Rate = 1
	}
	return sc
}

// TestOnCall measures the shipped gates against the gates before the
// retune over 30 simulated days (about 4 minutes of CPU):
//
//	SHADOWEVAL_SIM=1 go test -run 'TestOnCall$' -v -timeout 30m ./internal/sim/gatesim
//
// "point values" are the shipped gates without confidence, as the
// Prometheus rules of `shadoweval rules` judge them.
func TestOnCall(t *testing.T) {
	if os.Getenv("SHADOWEVAL_SIM") == "" {
		t.Skip("SHADOWEVAL_SIM=1 runs 30 simulated days; TestOnCallQuick runs one")
	}
	variants := append(PageVariants(), Variant{
		Name: "shipped, point values", Gates: WithConfidence(config.DefaultGates(), 0),
	})
	const days = 30
	for _, c := range []struct {
		name string
		sc   PageScenario
		seed uint64
	}{{"16 events/s", DefaultPageScenario(), 1}, {"1 event/s", quietScenario(), 2}} {
		start := time.Now()
		ps, err := RunFalsePages(days*24*time.Hour, c.seed, c.sc, Healthy, variants)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("healthy arms at %s, %d days, gates every %s (%s):\n%s", c.name, days, c.sc.EvalEvery, time.Since(start).Round(time.Second), FormatPages(ps))
		if c.name == "16 events/s" {
			for _, p := range ps[1:2] {
				for _, arm := range p.Arms {
					if n := p.PageFirings(arm); n > maxPagesPer30Days {
						t.Errorf("%s, %s: %d pages in %d days, want ≤ %d", p.Variant, arm, n, days, maxPagesPer30Days)
					}
				}
			}
		}
	}

	start := time.Now()
	sc := DefaultPageScenario()
	sc.Arms = sc.Arms[:1]
	worse := WorsePrecision(Healthy, 0.10)
	ts, err := RunTimeToPage(100, 3, sc, Healthy, worse, 10*time.Minute, 30*time.Minute, variants)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("live at 16 events/s, chr·containment %.3f → %.3f (window precision 10 points lower, all else equal) from a time uniform in a 10 s evaluation period, 100 runs, horizon 30m (%s):\n%s",
		Healthy.CHR*Healthy.Contained, worse.CHR*worse.Contained, time.Since(start).Round(time.Second), FormatTimeToPage(ts))
	for _, x := range ts[1:] {
		if m := Quantile(x.Precision, 0.5); m > maxTimeToFire.Seconds() {
			t.Errorf("%s: median time to fire a precision gate %.0f s, want ≤ %s", x.Variant, m, maxTimeToFire)
		}
	}
	if m := Quantile(ts[1].Page, 0.5); m > maxTimeToFire.Seconds() {
		t.Errorf("%s: median time to page %.0f s, want ≤ %s", ts[1].Variant, m, maxTimeToFire)
	}
}

// TestOnCallQuick is TestOnCall on one simulated day with the shipped gates
// only.
func TestOnCallQuick(t *testing.T) {
	d, runs := 24*time.Hour, 10
	if raceEnabled || testing.Short() {
		d, runs = 3*time.Hour, 3
	}
	shipped := []Variant{{Name: "shipped", Gates: config.DefaultGates()}}

	// 16 events/s: no page on either arm, nothing at all on live.
	ps, err := RunFalsePages(d, 1, DefaultPageScenario(), Healthy, shipped)
	if err != nil {
		t.Fatal(err)
	}
	p := &ps[0]
	for _, arm := range p.Arms {
		if n := p.PageFirings(arm); n != 0 {
			t.Errorf("16 events/s, %s: %d pages in %s, want 0\n%s", arm, n, d, FormatPages(ps))
		}
	}
	if n := p.AllFirings("live"); n != 0 {
		t.Errorf("16 events/s, live: %d firings in %s, want 0\n%s", n, d, FormatPages(ps))
	}

	// 1 event/s: no page either (the gates before the retune paged about
	// seven times a day here, on λ flip-rate noise).
	ps, err = RunFalsePages(d, 2, quietScenario(), Healthy, shipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range ps[0].Arms {
		if n := ps[0].PageFirings(arm); n != 0 {
			t.Errorf("1 event/s, %s: %d pages in %s, want 0\n%s", arm, n, d, FormatPages(ps))
		}
	}

	// A 10-point precision drop on live pages (ship_precision) within the
	// bound in every run.
	sc := DefaultPageScenario()
	sc.Arms = sc.Arms[:1]
	ts, err := RunTimeToPage(runs, 3, sc, Healthy, WorsePrecision(Healthy, 0.10), 10*time.Minute, maxTimeToFire+time.Minute, shipped)
	if err != nil {
		t.Fatal(err)
	}
	x := ts[0]
	if x.False != 0 {
		t.Errorf("%d runs fired before the drop", x.False)
	}
	for r, s := range x.Page {
		if s > maxTimeToFire.Seconds() {
			t.Errorf("run %d: paged %v s after a 10-point drop, want ≤ %s", r, s, maxTimeToFire)
		}
	}
	t.Logf("10-point precision drop, %d runs:\n%s", runs, FormatTimeToPage(ts))
}

func TestPreviousDefaultGates(t *testing.T) {
	prev, cur := PreviousDefaultGates(), config.DefaultGates()
	if len(prev) != len(cur) {
		t.Fatalf("%d previous gates, %d shipped", len(prev), len(cur))
	}
	// The retune keeps every gate's name, metric, op, threshold and arms,
	// and every severity but ship_precision's, which now pages.
	for i := range prev {
		a, b := prev[i], cur[i]
		sev := a.Severity
		if a.Name == "ship_precision" {
			sev = PageSeverity
		}
		if a.Name != b.Name || a.Metric != b.Metric || a.Op != b.Op || a.Threshold != b.Threshold ||
			a.CompareTo != b.CompareTo || sev != b.Severity || len(a.Arms) != len(b.Arms) {
			t.Errorf("gate %d: previous %+v, shipped %+v", i, a, b)
		}
	}
}

func TestTimeToPageCountsFromTheDrop(t *testing.T) {
	// A drop to precision 0: ship_precision fires at the first evaluation
	// with min_samples of the worse traffic, well under a minute.
	sc := DefaultPageScenario()
	sc.Arms = sc.Arms[:1]
	worse := Healthy
	worse.Contained = 0
	ts, err := RunTimeToPage(2, 1, sc, Healthy, worse, 10*time.Minute, 5*time.Minute, PageVariants())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		for r, s := range x.Precision {
			if !(s > 0 && s < 60) {
				t.Errorf("%s run %d: precision gate fired %v s after the drop", x.Variant, r, s)
			}
		}
	}
}
