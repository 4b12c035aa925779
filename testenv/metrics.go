package testenv

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are metric families by name.
type Families map[string]*dto.MetricFamily

// ParseMetrics parses a /metrics body in the Prometheus text format.
func ParseMetrics(t testing.TB, body []byte) Families {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return fams
}

// Gather gathers g.
func Gather(t testing.TB, g prometheus.Gatherer) Families {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	fams := make(Families, len(mfs))
	for _, f := range mfs {
		fams[f.GetName()] = f
	}
	return fams
}

// Series is the first sample of family name whose labels include want.
func (fams Families) Series(name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
samples:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if lv, ok := have[k]; !ok || lv != v {
				continue samples
			}
		}
		return m, true
	}
	return nil, false
}

// Value is the value of the first sample of family name whose labels
// include want (SampleValue); ok is false when there is none.
func (fams Families) Value(name string, want map[string]string) (v float64, ok bool) {
	m, ok := fams.Series(name, want)
	if !ok {
		return 0, false
	}
	return SampleValue(m), true
}

// SampleValue is the value of a counter, gauge or untyped sample, or the
// sample count of a histogram.
func SampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// LabelNames lists the label names of a family's first sample, sorted and
// joined with commas.
func LabelNames(f *dto.MetricFamily) string {
	if len(f.GetMetric()) == 0 {
		return ""
	}
	var names []string
	for _, lp := range f.GetMetric()[0].GetLabel() {
		names = append(names, lp.GetName())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
