package eval

import (
	"encoding/json"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/window"
)

func TestExactQuantile(t *testing.T) {
	cases := []struct {
		name string
		vals []float64
		q    float64
		want float64
	}{
		{"one value", []float64{0.4}, 0.9, 0.4},
		{"median of two", []float64{0.2, 0.4}, 0.5, 0.30000000000000004},
		{"median of three", []float64{0.9, 0.1, 0.5}, 0.5, 0.5},
		{"p90 of ten", []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 0.9, 0.81},
		{"all equal", slices.Repeat([]float64{0.25}, 1000), 0.9, 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := exactQuantile(slices.Clone(c.vals), c.q); math.Abs(got-c.want) > 1e-15 {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	// Against sorting, on sizes around the selection's cut-over and on
	// inputs with many ties (ΔS values are often repeated).
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 31, 32, 33, 100, 1000, 10007} {
		for _, ties := range []bool{false, true} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = r.Float64()
				if ties {
					vals[i] = float64(r.IntN(7)) / 7
				}
			}
			for _, q := range []float64{0, 0.1, 0.5, 0.9, 1} {
				want := testenv.Percentile(vals, q) // the definition exactQuantile implements
				if got := exactQuantile(slices.Clone(vals), q); got != want {
					t.Errorf("n=%d ties=%v q=%v: %v, want %v", n, ties, q, got, want)
				}
			}
		}
	}
}

// Every quantile metric of the registry is one exactQuantile can compute:
// a new one (a p99, say) is computed exactly as soon as it is added.
func TestQuantileOfRegistry(t *testing.T) {
	n := 0
	for _, s := range window.Expand(window.DefaultKs) {
		if s.Kind != window.Quantile {
			continue
		}
		n++
		if _, ok := quantileOf(s.Name); !ok {
			t.Errorf("quantile metric %s: probability unknown", s.Name)
		}
	}
	if n == 0 {
		t.Fatal("no quantile metric in the registry")
	}
	for name, want := range map[string]float64{"delta_s_median": 0.5, "delta_s_p90": 0.9, "x_p99": 0.99} {
		if got, ok := quantileOf(name); !ok || got != want {
			t.Errorf("quantileOf(%s) = %v, %v; want %v", name, got, ok, want)
		}
	}
}

// The JSON report carries every metric of the windows (window.MetricNames,
// not a list of its own), overall and per type, and the seed 001 compact
// keys.
func TestJSONKeys(t *testing.T) {
	rep, err := Run(seedOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"P@5", "R@5", "coverage", "citation_accuracy", "ΔS_med", "ΔS_p90", "bad_qids", "by_type",
		"metrics", "types", "quantiles", "baseline", "delta", "delta_by_type", "analysis", "verdict"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
	var parts struct {
		Metrics map[string]struct {
			Value   *float64 `json:"value"`
			Samples int64    `json:"samples"`
		} `json:"metrics"`
		Types map[string]struct {
			Metrics map[string]json.RawMessage `json:"metrics"`
		} `json:"types"`
		Delta     map[string]*float64 `json:"delta"`
		Quantiles string              `json:"quantiles"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		t.Fatal(err)
	}
	names := window.MetricNames(rep.Ks)
	if len(parts.Metrics) != len(names) || len(parts.Delta) != len(names) {
		t.Errorf("%d metrics and %d deltas, want %d", len(parts.Metrics), len(parts.Delta), len(names))
	}
	for _, name := range names {
		if _, ok := parts.Metrics[name]; !ok {
			t.Errorf("metrics: no %s", name)
		}
		for typ, s := range parts.Types {
			if _, ok := s.Metrics[name]; !ok {
				t.Errorf("types.%s.metrics: no %s", typ, name)
			}
		}
	}
	if len(parts.Types) != 4 {
		t.Errorf("types %v, want the fixture's four", parts.Types)
	}
	if parts.Quantiles != QuantilesExact {
		t.Errorf("quantiles %q, want %q", parts.Quantiles, QuantilesExact)
	}
	// Compact keys are the same numbers as their metrics.
	var p5 float64
	json.Unmarshal(doc["P@5"], &p5)
	if m := parts.Metrics["mean_precision_at_5"]; m.Value == nil || *m.Value != p5 {
		t.Errorf("P@5 %v, mean_precision_at_5 %v", p5, m.Value)
	}
}

// Sketch quantiles are what the windows estimate: within 1 % of the exact
// ones; everything else is identical.
func TestQuantileMethods(t *testing.T) {
	exact, err := Run(seedOptions(false))
	if err != nil {
		t.Fatal(err)
	}
	opt := seedOptions(false)
	opt.Quantiles = QuantilesSketch
	sketch, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	if sketch.Quantiles != QuantilesSketch {
		t.Errorf("Quantiles %q", sketch.Quantiles)
	}
	for i, e := range exact.Candidate.Overall.Metrics {
		s := sketch.Candidate.Overall.Metrics[i]
		if window.KindOf(e.Name) == window.Quantile {
			if e.Valid != s.Valid || e.Samples != s.Samples || math.Abs(e.Value-s.Value) > 0.01*e.Value {
				t.Errorf("%s: exact %+v, sketch %+v", e.Name, e, s)
			}
		} else if e != s {
			t.Errorf("%s: exact %+v, sketch %+v", e.Name, e, s)
		}
	}
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := testenv.WriteFile(t, dir, name, []byte(data))
	return p
}

// Bad input names the file, the line and the field.
func TestBadInput(t *testing.T) {
	const gold = `{"qid":"q1","answerable":true,"gold_citations":["a"]}` + "\n"
	const good = `{"qid":"q1","retrieved_ids":["a"],"answer_json":{"claim":"x","citations":["a"]}}` + "\n"
	cases := []struct {
		name, gold, trace, baseline string
		opt                         func(*Options)
		want                        []string // substrings of the error
	}{
		{name: "trace: not JSON", gold: gold, trace: good + good + "{nope\n",
			want: []string{"trace.jsonl:3:", "invalid JSON"}},
		{name: "trace: qid missing", gold: gold, trace: good + `{"retrieved_ids":["a"]}` + "\n",
			want: []string{"trace.jsonl:2:", "field qid"}},
		{name: "trace: wrong type", gold: gold, trace: `{"qid":"q1","delta_s_cited":"high"}` + "\n",
			want: []string{"trace.jsonl:1:", "field delta_s_cited"}},
		{name: "trace: ΔS out of range", gold: gold, trace: good + `{"qid":"q1","delta_s":[0.2,1.5]}` + "\n",
			want: []string{"trace.jsonl:2:", "field delta_s.1"}},
		{name: "trace: bad ts", gold: gold, trace: `{"qid":"q1","ts":"yesterday"}` + "\n",
			want: []string{"trace.jsonl:1:", "field ts"}},
		{name: "trace: unknown λ state", gold: gold, trace: good + `{"qid":"q1","lambda_state":"sideways"}` + "\n",
			want: []string{"trace.jsonl:2:", "lambda_state"}},
		{name: "trace: too many items", gold: gold, trace: `{"qid":"q1","retrieved_ids":["a","b","c"]}` + "\n",
			opt:  func(o *Options) { o.Config.Limits.MaxTopK = 2 },
			want: []string{"trace.jsonl:1:", "field retrieved_ids", "limits.max_topk"}},
		{name: "baseline: bad line", gold: gold, trace: good, baseline: good + good + good + `{"qid":"q1","answer_json":{"citations":[1]}}` + "\n",
			want: []string{"baseline.jsonl:4:", "field answer_json.citations.0"}},
		{name: "gold: answerable missing", gold: gold + `{"qid":"q2"}` + "\n", trace: good,
			want: []string{"gold.jsonl refused", "gold.jsonl:2:", "field answerable"}},
		{name: "gold: bad offsets", gold: `{"qid":"q2","answerable":true,"relevant_offsets":{"a":[5,1]}}` + "\n", trace: good,
			want: []string{"gold.jsonl:1:", "field relevant_offsets.a"}},
		{name: "trace: missing file", gold: gold, trace: "",
			want: []string{"trace.jsonl", "no such file"}},
		{name: "bad --quantiles", gold: gold, trace: good, opt: func(o *Options) { o.Quantiles = "approximate" },
			want: []string{"--quantiles"}},
		{name: "bad --k", gold: gold, trace: good, opt: func(o *Options) { o.Ks = []int{5, 5} },
			want: []string{"--k", "k=5 given twice"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opt := Options{Gold: writeFile(t, dir, "gold.jsonl", c.gold), Trace: filepath.Join(dir, "trace.jsonl")}
			if c.trace != "" {
				writeFile(t, dir, "trace.jsonl", c.trace)
			}
			if c.baseline != "" {
				opt.Baseline = writeFile(t, dir, "baseline.jsonl", c.baseline)
			}
			if c.opt != nil {
				cfg := config.Default()
				opt.Config = &cfg
				c.opt(&opt)
			}
			rep, err := Run(opt)
			if err == nil {
				t.Fatalf("no error; report %+v", rep.Candidate.Events)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// An unlabeled qid, a repeated event_id and a line without an answer are
// not errors: they are counted as the sidecar counts them.
func TestCountsLikeTheSidecar(t *testing.T) {
	dir := t.TempDir()
	gold := writeFile(t, dir, "gold.jsonl", `{"qid":"q1","answerable":true,"gold_citations":["a"]}`+"\n")
	trace := writeFile(t, dir, "trace.jsonl", strings.Join([]string{
		`{"qid":"q1","event_id":"e1","retrieved_ids":["a"],"answer_json":{"claim":"x","citations":["a"]}}`,
		`{"qid":"q1","event_id":"e1","retrieved_ids":["b"]}`,
		`{"qid":"nobody","event_id":"e2"}`,
		``,
		`{"qid":"q1","retrieved_ids":["b"]}`,
	}, "\n"))
	rep, err := Run(Options{Gold: gold, Trace: trace})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Candidate.Events, (Events{Lines: 4, Scored: 2, Unlabeled: 1, Duplicate: 1}); got != want {
		t.Errorf("events %+v, want %+v", got, want)
	}
	// The second e1 is dropped, not the first: recall_at_1 counts a and b.
	if m, _ := rep.Candidate.Overall.Metric("recall_at_1"); m.Value != 0.5 || m.Samples != 2 {
		t.Errorf("recall_at_1 %+v, want 0.5 of 2", m)
	}
	if rep.Verdict() != "" || rep.Analysis != nil {
		t.Errorf("no baseline, yet verdict %q", rep.Verdict())
	}
}

// The files are compared over the questions both answered; the others
// are counted apart and change no check.
func TestPairedQuestions(t *testing.T) {
	dir := t.TempDir()
	gold := writeFile(t, dir, "gold.jsonl", `{"qid":"q1","answerable":true,"gold_citations":["a"]}
{"qid":"q2","answerable":true,"gold_citations":["a"]}
{"qid":"q3","answerable":true,"gold_citations":["a"]}
{"qid":"q4","answerable":true,"gold_citations":["a"]}
`)
	cand := writeFile(t, dir, "cand.jsonl", `{"qid":"q1","retrieved_ids":["a"]}
{"qid":"q2","retrieved_ids":["a"]}
{"qid":"q2","retrieved_ids":["b"]}
{"qid":"q4","retrieved_ids":["a"]}
`)
	base := writeFile(t, dir, "base.jsonl", `{"qid":"q2","retrieved_ids":["a"]}
{"qid":"q3","retrieved_ids":["b"]}
{"qid":"q4","retrieved_ids":["a"]}
`)
	rep, err := Run(Options{Gold: gold, Trace: cand, Baseline: base})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Questions{Paired: 2, CandidateOnly: 1, BaselineOnly: 1}); rep.Analysis.Questions != want {
		t.Errorf("questions %+v, want %+v", rep.Analysis.Questions, want)
	}
	if rep.Analysis.Events != (analysis.Samples{Arm: 4, Baseline: 3}) {
		t.Errorf("events %+v, want 4 and 3", rep.Analysis.Events)
	}
	for _, c := range rep.Analysis.Checks {
		if c.Metric != "recall_at_5" {
			continue
		}
		// Over q2 and q4: the candidate's recall is 2/3, the baseline's 1.
		if c.Estimate == nil || math.Abs(*c.Estimate+1.0/3) > 1e-15 || c.Pairs != 2 || c.Pairing != analysis.PairedByQID {
			t.Errorf("recall_at_5: %+v", c)
		}
	}
}
