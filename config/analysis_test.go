package config

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/window"
)

func TestDefaultCheckSets(t *testing.T) {
	type row struct {
		metric    string
		tolerance float64
		op        string
		threshold float64
		minS      int
	}
	cmp := func(metric string, minS int) row { return row{metric, 0.02, "", 0, minS} }
	want := map[string][]row{
		"canary": {
			cmp("precision", 100), cmp("chr", 100), cmp("over_refusal", 100), cmp("under_refusal", 100),
			cmp("recall_at_5", 100), cmp("coverage", 100), cmp("citation_accuracy", 100),
			cmp("lambda_convergence", 20), cmp("delta_s_median", 100), cmp("delta_s_p90", 100),
			cmp("agreement", 50), {"kappa", 0.05, "", 0, 50},
		},
		"eligibility": {
			{"coverage", 0, ">=", 0.70, 100},
			{"citation_accuracy", 0, ">=", 0.95, 100},
			{"delta_s_median", 0, "<=", 0.40, 100},
			{"delta_s_p90", 0, "<=", 0.55, 100},
			{"lambda_convergence", 0, ">=", 0.95, 20},
			cmp("recall_at_5", 100),
		},
	}
	sets := DefaultCheckSets()
	if got := slices.Sorted(mapKeys(sets)); !slices.Equal(got, []string{"canary", "eligibility"}) {
		t.Fatalf("sets %v, want canary and eligibility", got)
	}
	for name, rows := range want {
		set := sets[name]
		if len(set) != len(rows) {
			t.Errorf("%s: %d checks, want %d", name, len(set), len(rows))
			continue
		}
		for i, ch := range set {
			got := row{ch.Metric, ch.Tolerance, ch.Op, ch.Threshold, ch.MinSamples}
			if got != rows[i] {
				t.Errorf("%s[%d] = %+v, want %+v", name, i, got, rows[i])
			}
			if ch.Name != ch.Metric || ch.Line != 0 {
				t.Errorf("%s[%d]: name %q line %d, want the metric and 0", name, i, ch.Name, ch.Line)
			}
			if ch.Absolute() != (ch.Op != "") {
				t.Errorf("%s[%d]: Absolute() = %v", name, i, ch.Absolute())
			}
			kind, ok := window.MetricKind(ch.Metric, Default().K)
			if !ok || analysisMetricProblem(ch.Metric, kind, ch.Kind()) != "" {
				t.Errorf("%s[%d]: metric %q is not one an analysis judges", name, i, ch.Metric)
			}
		}
	}
	// Fresh copies each call.
	sets["canary"][0].Metric = "changed"
	delete(sets, "eligibility")
	again := DefaultCheckSets()
	if again["canary"][0].Metric != "precision" || len(again["eligibility"]) != 6 {
		t.Error("DefaultCheckSets shares its sets between calls")
	}
	// Default() carries them, and a config with only them validates.
	if d := Default(); !reflect.DeepEqual(d.Analysis.Checks, DefaultCheckSets()) {
		t.Errorf("Default().Analysis.Checks = %+v", d.Analysis.Checks)
	}
}

// A file's sets merge into the shipped ones by name.
func TestAnalysisSetsMerge(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good", "analysis_sets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Analysis
	if a.Alpha != 0.05 || a.MaxActive != 8 || time.Duration(a.MaxDuration) != 6*time.Hour ||
		time.Duration(a.Retention) != 90*time.Minute || a.KVBucket != "canary_checkpoints" {
		t.Errorf("analysis scalars = %+v", a)
	}
	if got := slices.Sorted(mapKeys(a.Checks)); !slices.Equal(got, []string{"canary", "eligibility", "strict.v2"}) {
		t.Fatalf("sets %v", got)
	}
	want := map[string][]AnalysisCheck{
		"canary": {
			{Name: "precision", Metric: "precision", Tolerance: 0.01, MinSamples: 100, Line: 12},
			{Name: "delta_s_p90", Metric: "delta_s_p90", Tolerance: 0.05, MinSamples: 400, Line: 14},
			{Name: "recall10", Metric: "recall_at_10", Tolerance: 0.03, MinSamples: 100, Line: 17},
			{Name: "kappa", Metric: "kappa", Tolerance: 0.1, MinSamples: 50, Line: 18},
		},
		"strict.v2": {
			{Name: "coverage_floor", Metric: "coverage", Op: ">=", Threshold: 0.8, MinSamples: 100, Line: 20},
			{Name: "coverage_ceiling", Metric: "coverage", Op: "<", Threshold: 1, MinSamples: 100, Line: 25},
			{Name: "p90_cap", Metric: "delta_s_p90", Op: "<=", Threshold: 0.5, MinSamples: 100, Line: 29},
			{Name: "triage_retrieval_drift", Metric: "triage_retrieval_drift", Op: "<", Threshold: 0.1, MinSamples: 100, Line: 30},
			{Name: "kappa", Metric: "kappa", Op: ">", Threshold: -0.5, MinSamples: 50, Line: 31},
		},
		// Given as null: the shipped set.
		"eligibility": DefaultCheckSets()["eligibility"],
	}
	for name, set := range want {
		if !reflect.DeepEqual(a.Checks[name], set) {
			t.Errorf("%s:\n%+v\nwant:\n%+v", name, a.Checks[name], set)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Null, empty and merged forms of the section.
func TestAnalysisForms(t *testing.T) {
	defaults := Default().Analysis
	for _, in := range []string{
		"analysis:\n",
		"analysis: null\n",
		"analysis: {}\n",
		"analysis: {checks: null}\n",
		"analysis: {checks: {}}\n",
		"analysis:\n  checks:\n    canary:\n    eligibility: ~\n",
		"analysis: {alpha: null, max_active: ~, kv_bucket: null}\n",
	} {
		c := mustParse(t, in)
		if got := plain(c).Analysis; !reflect.DeepEqual(got, defaults) {
			t.Errorf("%q: analysis = %+v, want the defaults", in, got)
		}
	}

	// Aliases and merge keys work inside checks, as elsewhere.
	c := mustParse(t, `analysis:
  checks:
    <<: {mine: [{metric: chr, tolerance: 0.1}], canary: [{metric: chr, tolerance: 0.3}]}
    canary: &own [{metric: precision, tolerance: 0.05}]
    other: *own
`)
	sets := plain(c).Analysis.Checks
	if got := slices.Sorted(mapKeys(sets)); !slices.Equal(got, []string{"canary", "eligibility", "mine", "other"}) {
		t.Fatalf("sets %v", got)
	}
	own := []AnalysisCheck{{Name: "precision", Metric: "precision", Tolerance: 0.05, MinSamples: 100}}
	if !reflect.DeepEqual(sets["canary"], own) || !reflect.DeepEqual(sets["other"], own) {
		t.Errorf("canary %+v other %+v, want %+v (own keys win over merged ones)", sets["canary"], sets["other"], own)
	}
	if sets["mine"][0].Metric != "chr" {
		t.Errorf("mine = %+v", sets["mine"])
	}
	// The two sets decoded from one alias share no slice.
	c.Analysis.Checks["other"][0].Tolerance = 0.5
	if c.Analysis.Checks["canary"][0].Tolerance != 0.05 {
		t.Error("an aliased set shares its slice")
	}
}

// The ranking metrics are available by name in any check set: the means
// in comparison checks, hit@k (a proportion) in both kinds; the shipped
// canary set does not name them.
func TestAnalysisRankingChecks(t *testing.T) {
	c, err := Parse([]byte(`analysis:
  checks:
    retrieval:
      - {metric: ndcg_at_10, tolerance: 0.02}
      - {metric: map_at_5, tolerance: 0.02}
      - {metric: mrr, tolerance: 0.03}
      - {metric: r_precision, tolerance: 0.03}
      - {metric: hit_at_10, tolerance: 0.02}
      - {name: hit_floor, metric: hit_at_10, op: '>=', threshold: 0.8}
`), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Analysis.Checks["retrieval"]); n != 6 {
		t.Errorf("%d checks, want 6", n)
	}
	for _, ch := range DefaultCheckSets()[CanaryCheckSet] {
		if s, _ := window.Lookup(ch.Metric); s.Row.RankingMetric() {
			t.Errorf("the canary set names %s", ch.Metric)
		}
	}
}

func TestAnalysisRules(t *testing.T) {
	set := func(lines ...string) string {
		return "analysis:\n  checks:\n    mine:\n" + strings.Join(lines, "\n") + "\n"
	}
	checkParseErrors(t, []parseErrorCase{
		// Scalars.
		{"alpha zero", "analysis: {alpha: 0}\n", `config.yaml:1: analysis.alpha: must be in (0, 0.5), got 0`},
		{"alpha one", "analysis:\n  alpha: 1\n", `config.yaml:2: analysis.alpha: must be in (0, 0.5), got 1`},
		{"max_active negative", "analysis: {max_active: -1}\n", `config.yaml:1: analysis.max_active: must be >= 1, got -1`},
		{"max_duration zero", "analysis: {max_duration: 0s}\n", `config.yaml:1: analysis.max_duration: must be > 0, got 0s`},
		{"retention negative", "analysis: {retention: -5m}\n", `config.yaml:1: analysis.retention: must be > 0, got -5m`},
		{"kv_bucket empty", "analysis:\n  kv_bucket: \"\"\n", `config.yaml:2: analysis.kv_bucket: is empty; analyses keep their checkpoints there`},
		{"kv_bucket invalid", "analysis: {kv_bucket: 'a b'}\n", `config.yaml:1: analysis.kv_bucket: "a b" is not a valid KV bucket name (letters, digits, '_' and '-')`},

		// Decoding.
		{"checks as a list", "analysis:\n  checks: [canary]\n", `config.yaml:2: analysis.checks: want a mapping, got a list`},
		{"set as a mapping", set("      metric: chr"), `config.yaml:3: analysis.checks.mine: want a list, got a mapping`},
		{"set as a string", set("      chr"), `config.yaml:3: analysis.checks.mine: want a list, got a string`},
		{"unknown check key", set("      - {metric: chr, window: 5m}"), `config.yaml:4: unknown field "window" in analysis.checks.mine[0]`},
		{"Line is not a key", set("      - {metric: chr, line: 3}"), `config.yaml:4: unknown field "line" in analysis.checks.mine[0]`},
		{"wrong type", set("      - metric: chr", "        tolerance: small"), `config.yaml:5: analysis.checks.mine[0].tolerance: want a number, got "small"`},
		{"infinite tolerance", set("      - {metric: chr, tolerance: .inf}"), `config.yaml:4: analysis.checks.mine[0].tolerance: want a finite number, got ".inf"`},
		{"duplicate set", "analysis:\n  checks:\n    a: [{metric: chr}]\n    a: [{metric: chr}]\n", `config.yaml:4: duplicate key "a" in analysis.checks (first at line 3)`},
		{"duplicate check key", set("      - metric: chr", "        metric: precision"), `config.yaml:5: duplicate key "metric" in analysis.checks.mine[0] (first at line 4)`},
		{"merge key not a mapping", "analysis:\n  checks:\n    <<: 5\n", `config.yaml:3: analysis.checks: the merge key << wants a mapping or a list of mappings, got an integer`},

		// Checks.
		{"unknown metric", set("      - metric: precison"), `config.yaml:4: analysis.checks.mine[0] "precison": unknown metric "precison"; did you mean "precision"?`},
		{"per-k metric with k not configured", set("      - metric: recall_at_7"),
			`config.yaml:4: analysis.checks.mine[0] "recall_at_7": unknown metric "recall_at_7": 7 is not in k [1, 3, 5, 10]`},
		{"mean metric", set("      - metric: mean_precision_at_3"),
			`config.yaml:4: analysis.checks.mine[0] "mean_precision_at_3": analysis checks judge proportions, kappa, delta_s_median/delta_s_p90 and, in comparisons, the ranking means; "mean_precision_at_3" is a mean`},
		{"ranking mean in an absolute check", set("      - {metric: ndcg_at_10, op: '>=', threshold: 0.5}"),
			`config.yaml:4: analysis.checks.mine[0] "ndcg_at_10": analysis checks judge proportions, kappa, delta_s_median/delta_s_p90 and, in comparisons, the ranking means; "ndcg_at_10" is a mean, judged against a baseline only (a tolerance, no op)`},
		{"ranking mean at a k not configured", set("      - metric: ndcg_at_7"),
			`config.yaml:4: analysis.checks.mine[0] "ndcg_at_7": unknown metric "ndcg_at_7": 7 is not in k [1, 3, 5, 10]`},
		{"ranking mean tolerance 1", set("      - {metric: mrr, tolerance: 1}"),
			`config.yaml:4: analysis.checks.mine[0] "mrr": tolerance 1 is out of range [0, 1) for mean metric "mrr"`},
		{"retrieved quantile", set("      - {metric: delta_s_retrieved_median, op: '<=', threshold: 0.5}"),
			`config.yaml:4: analysis.checks.mine[0] "delta_s_retrieved_median": analysis checks judge proportions, kappa, delta_s_median/delta_s_p90 and, in comparisons, the ranking means; "delta_s_retrieved_median" is a quantile of the retrieved ΔS, not of the cited ΔS`},
		{"threshold on a comparison", set("      - metric: chr", "        threshold: 0.5"),
			`config.yaml:5: analysis.checks.mine[0] "chr": threshold goes with op (an absolute check); a comparison check takes tolerance`},
		{"tolerance on an absolute check", set("      - metric: chr", "        op: '>='", "        threshold: 0.5", "        tolerance: 0.01"),
			`config.yaml:7: analysis.checks.mine[0] "chr": tolerance goes with a comparison check; an absolute check (op set) takes threshold`},
		{"tolerance 1", set("      - {metric: delta_s_median, tolerance: 1}"),
			`config.yaml:4: analysis.checks.mine[0] "delta_s_median": tolerance 1 is out of range [0, 1) for quantile metric "delta_s_median"`},
		{"kappa tolerance 2", set("      - {metric: kappa, tolerance: 2}"),
			`config.yaml:4: analysis.checks.mine[0] "kappa": tolerance 2 is out of range [0, 2) for kappa metric "kappa"`},
		{"bad op", set("      - {metric: chr, op: '==', threshold: 0.5}"),
			`config.yaml:4: analysis.checks.mine[0] "chr": op "==" is not one of >=, >, <=, <`},
		{"threshold above 1", set("      - {metric: chr, op: '>=', threshold: 1.01}"),
			`config.yaml:4: analysis.checks.mine[0] "chr": threshold 1.01 is out of range [0, 1] for proportion metric "chr"`},
		{"kappa threshold", set("      - {metric: kappa, op: '>=', threshold: -2}"),
			`config.yaml:4: analysis.checks.mine[0] "kappa": threshold -2 is out of range [-1, 1] for kappa metric "kappa"`},
		{"min_samples negative", set("      - metric: chr", "        min_samples: -1"),
			`config.yaml:5: analysis.checks.mine[0] "chr": min_samples must be >= 0, got -1`},
		{"two checks of one metric", set("      - {metric: chr, tolerance: 0.01}", "      - {metric: chr, op: '>=', threshold: 0.5}"),
			`config.yaml:5: analysis.checks.mine[1] "chr": duplicate name (also analysis.checks.mine[0] at line 4); checks of one metric need names of their own`},
		{"named twice", set("      - {name: a, metric: chr}", "      - {name: a, metric: precision}"),
			`config.yaml:5: analysis.checks.mine[1] "a": duplicate name (also analysis.checks.mine[0] at line 4)`},
		{"name clashes with a metric-named check", set("      - {metric: chr}", "      - {name: chr, metric: precision}"),
			`config.yaml:5: analysis.checks.mine[1] "chr": duplicate name (also analysis.checks.mine[0] at line 4)`},
		{"check name", set("      - {name: 'a/b', metric: chr}"),
			`config.yaml:4: analysis.checks.mine[0] "a/b": name "a/b" may only hold letters, digits, '_', '-', '.' and ':'`},
		{"metric empty", set("      - {name: x}"), `config.yaml:4: analysis.checks.mine[0] "x": metric is empty`},

		// Sets.
		{"empty set", "analysis:\n  checks:\n    mine: []\n", `config.yaml:3: analysis.checks.mine: a set must have at least one check`},
		{"null set without a default", "analysis:\n  checks:\n    mine:\n", `config.yaml:3: analysis.checks.mine: a set must have at least one check`},
		{"canary emptied", "analysis:\n  checks: {canary: []}\n", `config.yaml:2: analysis.checks.canary: a set must have at least one check`},
		{"set name", "analysis:\n  checks:\n    'a/b': [{metric: chr}]\n",
			`config.yaml:3: analysis.checks: set name "a/b" may only hold letters, digits, '_', '-' and '.' (at most 64)`},
		{"check of a badly named set", "analysis:\n  checks:\n    'a b':\n      - {metric: nope}\n",
			"config.yaml:3: analysis.checks: set name \"a b\" may only hold letters, digits, '_', '-' and '.' (at most 64)\n" +
				`config.yaml:4: analysis.checks["a b"][0] "nope": unknown metric "nope"`},

		// The shipped sets break only through k, and say how to fix it.
		{"shipped set without k 5", "k:\n  - 1\n  - 10\n" + "gates: [{name: g, metric: chr, op: '>=', threshold: 0.5}]\n" + "analysis:\n  checks:\n    canary: [{metric: chr}]\n",
			`config.yaml:1: analysis.checks.eligibility[5] "recall_at_5": unknown metric "recall_at_5": 5 is not in k [1, 10] (a shipped check set: give your own analysis.checks.eligibility to replace it)`},
	})
}

// TestAnalysisInCode: Validate on check sets built in code, where messages
// have no file or line and left-out names and min_samples are allowed.
func TestAnalysisInCode(t *testing.T) {
	checkInCode(t, []inCodeCase{
		{"NaN alpha", func(c *Config) { c.Analysis.Alpha = math.NaN() }, `analysis.alpha: must be in (0, 0.5), got NaN`},
		{"NaN tolerance", func(c *Config) { c.Analysis.Checks["canary"][1].Tolerance = math.NaN() },
			`analysis.checks.canary[1] "chr": tolerance must be a finite number`},
		{"infinite threshold", func(c *Config) { c.Analysis.Checks["eligibility"][0].Threshold = math.Inf(-1) },
			`analysis.checks.eligibility[0] "coverage": threshold must be a finite number`},
		{"no canary set", func(c *Config) { delete(c.Analysis.Checks, "canary") },
			`analysis.checks: the shipped "canary" set is missing; the verdict endpoints use it`},
		{"no sets", func(c *Config) { c.Analysis.Checks = nil },
			"analysis.checks: the shipped \"canary\" set is missing; the verdict endpoints use it\n" +
				`analysis.checks: the shipped "eligibility" set is missing; the verdict endpoints use it`},
		{"names left out clash", func(c *Config) {
			c.Analysis.Checks["x"] = []AnalysisCheck{{Metric: "chr"}, {Metric: "chr", Op: "<", Threshold: 0.9}}
		}, `analysis.checks.x[1]: duplicate name (also analysis.checks.x[0]); checks of one metric need names of their own`},
		{"empty set name", func(c *Config) { c.Analysis.Checks[""] = []AnalysisCheck{{Metric: "chr"}} },
			`analysis.checks: a set name is empty`},
	})
	// Left out in code: name = metric, min_samples = the default.
	c := Default()
	c.Analysis.Checks["x"] = []AnalysisCheck{{Metric: "chr"}, {Metric: "kappa", Op: ">=", Threshold: 0.5}}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

// The printed section: every key of every check, sets by name, and it
// reads back.
func TestAnalysisMarshal(t *testing.T) {
	c := mustParse(t, `analysis:
  checks:
    zeta: [{metric: chr, tolerance: 0.1}]
    alpha.1: [{name: floor, metric: coverage, op: ">", threshold: 0.5, min_samples: 7}]
`)
	s := c.String()
	out := []byte(s)
	var order []int
	for _, set := range []string{"alpha.1:", "canary:", "eligibility:", "zeta:"} {
		order = append(order, strings.Index(s, "\n    "+set+"\n"))
	}
	if order[0] < 0 || !slices.IsSorted(order) {
		t.Errorf("sets not printed in name order (%v):\n%s", order, s)
	}
	for _, line := range []string{
		`      - {name: floor, metric: coverage, tolerance: 0, op: ">", threshold: 0.5, min_samples: 7}`,
		`      - {name: chr, metric: chr, tolerance: 0.1, op: "", threshold: 0, min_samples: 100}`,
	} {
		if !strings.Contains(s, "\n"+line+"\n") {
			t.Errorf("output lacks %s:\n%s", line, s)
		}
	}
	back, err := Parse(out, "marshalled.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(plain(back), plain(c)) {
		t.Errorf("round trip:\n%s\nwant:\n%s", back, c)
	}
	// The defaults print the shipped sets with their comments.
	d := string(DefaultYAML())
	for _, want := range []string{
		"    # comparisons with the baseline\n    canary:\n      - {name: precision, metric: precision, tolerance: 0.02,",
		"    eligibility:\n      - {name: coverage, metric: coverage, tolerance: 0, op: \">=\", threshold: 0.7, min_samples: 100}",
		"  kv_bucket: shadoweval_analyses # ",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("DefaultYAML lacks %q:\n%s", want, d)
		}
	}
}
