package sidecar_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// TestEveryMetricEverywhere: every metric of the registry, at the
// configured k, is in /metrics (its window series, and the numerator and
// denominator of a per-event proportion), in /api/v1/windows and on the
// status page; a gate may judge it; the README glossary has its row.
func TestEveryMetricEverywhere(t *testing.T) {
	t.Parallel()
	const items = 60
	ds := writeDataSet(t, 21, items, 0.8)
	h := startApp(t, appOptions{goldFile: ds.gold})
	h.replay(ds.trace, "rag.trace.live")
	rep := h.waitEvents("live", map[string]int64{"scored": items})
	series := window.Expand(config.Default().K)

	fams := h.Scrape()
	code, page := h.Get("/?window=5m")
	if code != http.StatusOK {
		t.Fatalf("GET /?window=5m: status %d", code)
	}
	glossary := glossaryNames(t)
	for _, s := range series {
		if _, ok := fams.Series("shadoweval_window_samples", map[string]string{"arm": "live", "window": "5m", "metric": s.Name}); !ok {
			t.Errorf("%s: no shadoweval_window_samples series", s.Name)
		}
		if s.Row.PerEvent() {
			for _, family := range []string{"shadoweval_metric_numerator_total", "shadoweval_metric_denominator_total"} {
				if _, ok := fams.Series(family, map[string]string{"arm": "live", "metric": s.Name}); !ok {
					t.Errorf("%s: no %s series", s.Name, family)
				}
			}
		}
		if _, ok := rep.Metrics[s.Name]; !ok {
			t.Errorf("%s: not in /api/v1/windows", s.Name)
		}
		if !strings.Contains(string(page), `<th scope="row">`+s.Name+`</th>`) {
			t.Errorf("%s: no row on the status page", s.Name)
		}
		cfg := config.Default()
		cfg.Gates = []config.Gate{{Name: "on_" + s.Name, Metric: s.Name, Op: ">=", Threshold: 0, Window: "5m", Severity: "warning"}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: a gate on it does not validate: %v", s.Name, err)
		}
		if !glossary[s.Name] {
			t.Errorf("%s: no row in the README metric glossary", s.Name)
		}
	}
	if len(rep.Metrics) != len(series) {
		t.Errorf("/api/v1/windows has %d metrics, the registry %d", len(rep.Metrics), len(series))
	}
}

// glossaryNames are the metrics of the README's "Metric glossary" table.
func glossaryNames(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Metric glossary\n")
	if !ok {
		t.Fatal("README.md has no metric glossary")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	names := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || cells[0] != "" {
			continue
		}
		if name := strings.TrimSpace(cells[1]); name != "metric" && !strings.HasPrefix(name, "-") {
			names[name] = true
		}
	}
	return names
}
