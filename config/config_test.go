package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shadoweval/shadoweval/window"
)

// plain is c without what only records where it was read from (the source
// lines, Gate.Line, AnalysisCheck.Line), for comparing configurations.
func plain(c *Config) Config {
	r := *c
	r.src = nil
	r.Gates = slices.Clone(c.Gates)
	for i := range r.Gates {
		r.Gates[i].Line = 0
	}
	r.Analysis = c.Analysis.clone()
	for _, set := range r.Analysis.Checks {
		for i := range set {
			set[i].Line = 0
		}
	}
	return r
}

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	c, err := Parse([]byte(in), "config.yaml")
	if err != nil {
		t.Fatalf("Parse: %v\ninput:\n%s", err, in)
	}
	return c
}

func TestDefaultsMatchSpec(t *testing.T) {
	c := Default()
	d := func(s string) Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return Duration(v)
	}
	checks := []struct {
		key       string
		got, want any
	}{
		{"nats.url", c.NATS.URL, ""},
		{"nats.jetstream", c.NATS.JetStream, false},
		{"nats.stream", c.NATS.Stream, "RAG"},
		{"nats.durable", c.NATS.Durable, "shadoweval"},
		{"nats.store_dir", c.NATS.StoreDir, ""},
		{"nats.replicas", c.NATS.Replicas, 1},
		{"nats.ack_wait", c.NATS.AckWait, d("5s")},
		{"nats.heartbeat", c.NATS.Heartbeat, d("1s")},
		{"subjects.trace", c.Subjects.Trace, "rag.trace.>"},
		{"subjects.retrieval", c.Subjects.Retrieval, "rag.retrieval.>"},
		{"subjects.answer", c.Subjects.Answer, "rag.answer.>"},
		{"subjects.judgement", c.Subjects.Judgement, "rag.judgement.>"},
		{"subjects.alerts", c.Subjects.Alerts, "shadoweval.alerts"},
		{"subjects.verdicts", c.Subjects.Verdicts, "shadoweval.verdicts"},
		{"subjects.deadletter", c.Subjects.Deadletter, "shadoweval.deadletter"},
		{"gold.file", c.Gold.File, "gold.jsonl"},
		{"http.listen", c.HTTP.Listen, ":9464"},
		{"windows", c.Windows, []WindowSpec{{d("5m"), d("10s")}, {d("1h"), d("1m")}}},
		{"window.max_lateness", c.Window.MaxLateness, d("1m")},
		{"join.ttl", c.Join.TTL, d("30s")},
		{"join.max_pending", c.Join.MaxPending, 100000},
		{"lambda.min_runs", c.Lambda.MinRuns, 3},
		{"k", c.K, []int{1, 3, 5, 10}},
		{"citation_offset_tolerance", c.CitationOffsetTolerance, 30},
		{"alerting.resend", c.Alerting.Resend, d("1m")},
		{"log.level", c.Log.Level, "info"},
		{"log.payloads", c.Log.Payloads, false},
		{"limits.max_message_bytes", c.Limits.MaxMessageBytes, 1048576},
		{"limits.max_topk", c.Limits.MaxTopK, 1000},
		{"limits.max_arms", c.Limits.MaxArms, 32},
		{"limits.max_content_types", c.Limits.MaxContentTypes, 16},
		{"tracing.endpoint", c.Tracing.Endpoint, ""},
		{"tracing.sample_ratio", c.Tracing.SampleRatio, 0.01},
		{"gates", c.Gates, DefaultGates()},
		{"analysis.alpha", c.Analysis.Alpha, 0.01},
		{"analysis.checks", c.Analysis.Checks, DefaultCheckSets()},
		{"analysis.max_active", c.Analysis.MaxActive, 64},
		{"analysis.max_duration", c.Analysis.MaxDuration, d("24h")},
		{"analysis.retention", c.Analysis.Retention, d("24h")},
		{"analysis.kv_bucket", c.Analysis.KVBucket, "shadoweval_analyses"},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.key, ch.got, ch.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate(): %v", err)
	}
}

// The SPEC §8 block, copied verbatim, is the default configuration.
func TestSpecSection8IsDefault(t *testing.T) {
	for _, f := range []string{"spec_section8.yaml", "empty.yaml", "comments_only.yaml", "nulls.yaml", "analysis_spec.yaml"} {
		c, err := Load(filepath.Join("testdata", "good", f))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := plain(c), Default(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n%s\nwant the defaults:\n%s", f, got, want)
		}
	}
}

func TestDefaultGatesTable(t *testing.T) {
	type row struct {
		name, metric, op string
		threshold        float64
		window           string
		minSamples       int
		forDur           time.Duration
		arms             []string
		severity         string
		compareTo        string
		confidence       float64
	}
	canary := []string{"shadow", "canary"}
	want := []row{
		{"ship_precision", "precision", ">=", 0.80, "5m", 100, 0, nil, "page", "", 0.95},
		{"ship_chr", "chr", ">=", 0.75, "5m", 100, 0, nil, "warning", "", 0.95},
		{"ship_under_refusal", "under_refusal", "<=", 0.05, "5m", 100, 0, nil, "warning", "", 0.95},
		{"ship_over_refusal", "over_refusal", "<=", 0.10, "5m", 100, 0, nil, "warning", "", 0.95},
		{"canary_coverage", "coverage", ">=", 0.70, "5m", 100, 0, canary, "warning", "", 0.95},
		{"canary_citation_accuracy", "citation_accuracy", ">=", 0.95, "5m", 100, 0, canary, "warning", "", 0.95},
		{"canary_delta_s_median", "delta_s_median", "<=", 0.40, "5m", 100, 0, canary, "warning", "", 0},
		{"canary_delta_s_p90", "delta_s_p90", "<=", 0.55, "5m", 100, 0, canary, "warning", "", 0},
		{"canary_recall_at_5_vs_live", "recall_at_5", ">=", -0.02, "5m", 100, 0, canary, "warning", "live", 0.95},
		{"canary_lambda_convergence", "lambda_convergence", ">=", 0.95, "5m", 20, 0, canary, "warning", "", 0.95},
		{"oncall_delta_s_p90", "delta_s_p90", "<", 0.60, "5m", 100, 3 * time.Minute, nil, "page", "", 0},
		{"oncall_delta_s_median", "delta_s_median", "<", 0.45, "5m", 100, 3 * time.Minute, nil, "page", "", 0},
		{"oncall_lambda_flip_rate", "lambda_flip_rate", "<", 0.10, "5m", 20, 3 * time.Minute, nil, "page", "", 0.95},
		{"oncall_chr", "chr", ">=", 0.60, "5m", 100, 10 * time.Minute, nil, "page", "", 0.95},
		{"oncall_coverage", "coverage", ">=", 0.70, "5m", 100, 5 * time.Minute, nil, "page", "", 0.95},
		{"agents_agreement", "agreement", ">=", 0.90, "5m", 50, 0, nil, "warning", "", 0.95},
		{"agents_kappa", "kappa", ">=", 0.75, "5m", 50, 5 * time.Minute, nil, "warning", "", 0},
		{"agents_abstain_rate", "abstain_rate", "<=", 0.02, "5m", 50, 0, nil, "warning", "", 0.95},
	}
	gates := DefaultGates()
	if len(gates) != len(want) {
		t.Fatalf("%d default gates, want %d", len(gates), len(want))
	}
	for i, g := range gates {
		got := row{g.Name, g.Metric, g.Op, g.Threshold, g.Window, g.MinSamples, time.Duration(g.For), g.Arms, g.Severity, g.CompareTo, g.Confidence}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("gate %d = %+v\nwant %+v", i, got, want[i])
		}
		if g.Line != 0 {
			t.Errorf("gate %s: line %d, want 0", g.Name, g.Line)
		}
		// Each default gate is valid alone with the default config.
		c := Default()
		c.Gates = []Gate{g}
		if err := c.Validate(); err != nil {
			t.Errorf("gate %s does not validate: %v", g.Name, err)
		}
		if _, ok := window.MetricKind(g.Metric, c.K); !ok {
			t.Errorf("gate %s: metric %q unknown", g.Name, g.Metric)
		}
	}
	// DefaultGates returns fresh slices.
	gates[4].Arms[0] = "changed"
	if DefaultGates()[4].Arms[0] != "shadow" {
		t.Error("DefaultGates shares its arms between calls")
	}
}

func TestEmptyGatesMeanDefaults(t *testing.T) {
	for _, in := range []string{"", "gates: []\n", "gates:\n", "gates: null\n", "gates: ~\n", "k: [1, 5]\n"} {
		c := mustParse(t, in)
		if got := plain(c).Gates; !reflect.DeepEqual(got, DefaultGates()) {
			t.Errorf("%q: gates = %+v, want the defaults", in, got)
		}
	}
	// Any gate replaces all the defaults.
	c := mustParse(t, "gates: [{name: only, metric: chr, op: '>=', threshold: 0.5}]\n")
	if len(c.Gates) != 1 || c.Gates[0].Name != "only" {
		t.Errorf("gates = %+v, want only the one given", c.Gates)
	}
}

func TestDefaultGatesFollowFirstWindow(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good", "no_5m_window.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range c.Gates {
		if g.Window != "10m" {
			t.Errorf("gate %s window %q, want 10m", g.Name, g.Window)
		}
	}
	// With 5m configured, but not first, the defaults keep 5m.
	c = mustParse(t, "windows: [{length: 1h, resolution: 1m}, {length: 5m, resolution: 10s}]\n")
	for _, g := range c.Gates {
		if g.Window != "5m" {
			t.Errorf("gate %s window %q, want 5m", g.Name, g.Window)
		}
	}
}

func TestGateDefaults(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good", "minimal_gates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Gate{
		{Name: "precision_floor", Metric: "precision", Op: ">=", Threshold: 0.8, Window: "10m",
			MinSamples: 100, Severity: "warning", Line: 6},
		{Name: "flips", Metric: "lambda_flip_rate", Op: "<", Threshold: 0.1, Window: "5m",
			MinSamples: 20, Severity: "warning", Line: 10},
	}
	if !reflect.DeepEqual(c.Gates, want) {
		t.Errorf("gates:\n%+v\nwant:\n%+v", c.Gates, want)
	}
	// min_samples: 0 and for: 0s given are kept.
	c = mustParse(t, "gates: [{name: g, metric: kappa, op: '>=', threshold: 0.5, min_samples: 0, arms: []}]\n")
	if g := c.Gates[0]; g.MinSamples != 0 || g.Arms != nil || g.Window != "5m" {
		t.Errorf("gate = %+v, want min_samples 0, nil arms, window 5m", g)
	}
}

func TestGateLines(t *testing.T) {
	in := `# comment
gates:
  - name: a
    metric: chr
    op: ">="
    threshold: 0.5

  - {name: b, metric: chr, op: ">=", threshold: 0.6}
  - &c
    name: c
    metric: chr
    op: ">="
    threshold: 0.7
`
	c := mustParse(t, in)
	var lines []int
	for _, g := range c.Gates {
		lines = append(lines, g.Line)
	}
	if want := []int{3, 8, 9}; !slices.Equal(lines, want) {
		t.Errorf("gate lines %v, want %v", lines, want)
	}
}

func TestFullConfig(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "good", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.Password != "hunter2" || !c.NATS.JetStream || c.NATS.StoreDir != "/var/lib/shadoweval" ||
		c.NATS.Replicas != 3 || c.NATS.AckWait != Duration(10*time.Second) || c.NATS.Heartbeat != Duration(2*time.Second) {
		t.Errorf("nats = %#v", c.NATS)
	}
	if got, want := c.K, []int{1, 5, 20}; !slices.Equal(got, want) {
		t.Errorf("k = %v, want %v", got, want)
	}
	if got := time.Duration(c.Join.TTL); got != 90*time.Second {
		t.Errorf("join.ttl = %v", got)
	}
	// The merge key copies the first gate, and the gate's own keys win.
	chr := c.Gates[1]
	want := Gate{Name: "chr_floor", Metric: "chr", Op: ">=", Threshold: 0.75, Window: "15m", MinSamples: 200,
		For: Duration(5 * time.Minute), Arms: []string{"shadow", "canary"}, Severity: "page", Confidence: 0.95, Line: 74}
	if !reflect.DeepEqual(chr, want) {
		t.Errorf("merged gate:\n%+v\nwant:\n%+v", chr, want)
	}
	// Omitted windows are the first window; "120s" is written "2m".
	if c.Gates[2].Window != "2m" || c.Gates[4].Window != "2m" {
		t.Errorf("windows %q %q, want 2m", c.Gates[2].Window, c.Gates[4].Window)
	}
	if l, r, ok := c.WindowNamed("24h"); !ok || l != 24*time.Hour || r != 5*time.Minute {
		t.Errorf("WindowNamed(24h) = %v %v %v", l, r, ok)
	}
	if got := c.LongestWindow(); got != 24*time.Hour {
		t.Errorf("LongestWindow = %v", got)
	}
}

// Parse(DefaultYAML()) is Default(), and MarshalYAML output reads back to
// the same configuration.
func TestDefaultsRoundTrip(t *testing.T) {
	c, err := Parse(DefaultYAML(), "defaults.yaml")
	if err != nil {
		t.Fatalf("Parse(DefaultYAML()): %v\n%s", err, DefaultYAML())
	}
	if got, want := plain(c), Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(DefaultYAML()):\n%#v\nwant:\n%#v", got, want)
	}
	// The gates are written out, not left to "gates: []".
	if c.src.defaultGates {
		t.Error("DefaultYAML does not list the gates")
	}

	for _, f := range []string{"full.yaml", "minimal_gates.yaml", "no_5m_window.yaml", "analysis_sets.yaml"} {
		orig, err := Load(filepath.Join("testdata", "good", f))
		if err != nil {
			t.Fatal(err)
		}
		orig.NATS.Password = "" // redacted on output
		out, err := yaml.Marshal(orig)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out, f+" (marshalled)")
		if err != nil {
			t.Fatalf("%s: reading back MarshalYAML: %v\n%s", f, err, out)
		}
		if got, want := plain(back), plain(orig); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip:\n%s\nwant:\n%s", f, got, want)
		}
	}
}

// DefaultYAML holds every key of SPEC §8 and every key of Config.
func TestDefaultYAMLHasEveryKey(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(DefaultYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	has := func(path string) bool {
		var v any = doc
		for _, key := range strings.Split(path, ".") {
			if l, ok := v.([]any); ok {
				if len(l) == 0 {
					return false
				}
				v = l[0]
			}
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			if v, ok = m[key]; !ok {
				return false
			}
		}
		return true
	}
	spec := []string{
		"nats.url", "nats.jetstream", "nats.stream", "nats.durable", "nats.creds_file",
		"nats.user", "nats.password", "nats.token", "nats.nkey_seed_file",
		"nats.tls.ca_file", "nats.tls.cert_file", "nats.tls.key_file",
		"subjects.trace", "subjects.retrieval", "subjects.answer", "subjects.judgement",
		"subjects.alerts", "subjects.verdicts", "subjects.deadletter",
		"gold.file", "gold.kv_bucket", "http.listen", "http.admin_token_file",
		"windows.length", "windows.resolution", "window.max_lateness",
		"join.ttl", "join.max_pending", "lambda.min_runs", "k", "citation_offset_tolerance",
		"alerting.alertmanager_url", "alerting.webhook_url", "alerting.resend", "gates",
		// §5 gate keys.
		"gates.name", "gates.metric", "gates.op", "gates.threshold", "gates.window",
		"gates.min_samples", "gates.for", "gates.arms", "gates.severity", "gates.confidence", "gates.compare_to",
		// §5.2 analysis keys, and a check's keys in each shipped set.
		"analysis.alpha", "analysis.checks", "analysis.max_active", "analysis.max_duration",
		"analysis.retention", "analysis.kv_bucket",
		"analysis.checks.canary.name", "analysis.checks.canary.metric", "analysis.checks.canary.tolerance",
		"analysis.checks.canary.op", "analysis.checks.canary.threshold", "analysis.checks.canary.min_samples",
		"analysis.checks.eligibility.name", "analysis.checks.eligibility.op", "analysis.checks.eligibility.threshold",
	}
	for _, p := range spec {
		if !has(p) {
			t.Errorf("DefaultYAML has no %s", p)
		}
	}
	// Every field of the Config type, by reflection.
	var walk func(t reflect.Type, prefix string)
	n := 0
	walk = func(rt reflect.Type, prefix string) {
		fields, keys := fieldsByKey(rt)
		for _, key := range keys {
			p := joinPath(prefix, key)
			if !has(p) {
				t.Errorf("DefaultYAML has no %s", p)
			}
			n++
			ft := rt.Field(fields[key]).Type
			if ft.Kind() == reflect.Map {
				// Check sets: walk the set every config has.
				p, ft = joinPath(p, CanaryCheckSet), ft.Elem()
			}
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, p)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	if n < 60 {
		t.Errorf("walked only %d keys", n)
	}
	for _, key := range []string{"log", "limits", "tracing", "nats.store_dir"} {
		if !has(key) {
			t.Errorf("DefaultYAML has no %s", key)
		}
	}
	if !strings.Contains(string(DefaultYAML()), "# reference ship gates (seed 002)") {
		t.Error("DefaultYAML lacks the gate group comments")
	}
}

func TestDecodeErrors(t *testing.T) {
	checkParseErrors(t, []parseErrorCase{
		{"unknown top-level key", "nats: {}\nnatz: {}\n", `config.yaml:2: unknown field "natz" at the top level; did you mean "nats"?`},
		{"unknown nested key", "nats:\n  url: \"\"\n  jetstrem: true\n", `config.yaml:3: unknown field "jetstrem" in nats; did you mean "jetstream"?`},
		{"unknown deep key", "nats:\n  tls:\n    ca: x\n", `config.yaml:3: unknown field "ca" in nats.tls`},
		{"unknown window key", "windows:\n  - {length: 5m, resolution: 10s, size: 3}\n", `config.yaml:2: unknown field "size" in windows[0]`},
		// The rest of the gate is checked in the same run.
		{"unknown gate key", "gates:\n  - name: g\n    metrc: chr\n", `config.yaml:2: gates[0] "g": metric is empty
config.yaml:2: gates[0] "g": op "" is not one of >=, >, <=, <
config.yaml:3: unknown field "metrc" in gates[0]; did you mean "metric"?`},
		{"Go field name is not a key", "nats: {JetStream: true}\n", `config.yaml:1: unknown field "JetStream" in nats; did you mean "jetstream"?`},
		{"string for mapping", "join: 30s\n", `config.yaml:1: join: want a mapping, got a string`},
		{"list for string", "gold: {file: [a, b]}\n", `config.yaml:1: gold.file: want a string, got a list`},
		{"string for bool", "nats:\n  jetstream: \"true\"\n", `config.yaml:2: nats.jetstream: want true or false, got "true"`},
		{"yes is not a bool", "log: {payloads: yes}\n", `config.yaml:1: log.payloads: want true or false, got "yes"`},
		{"float for int", "join: {max_pending: 10.5}\n", `config.yaml:1: join.max_pending: want an integer, got "10.5"`},
		{"string for int", "citation_offset_tolerance: thirty\n", `config.yaml:1: citation_offset_tolerance: want an integer, got "thirty"`},
		{"int overflow", "lambda: {min_runs: 9223372036854775808}\n", `config.yaml:1: lambda.min_runs: want an integer, got "9223372036854775808"`},
		{"string for float", "tracing: {sample_ratio: half}\n", `config.yaml:1: tracing.sample_ratio: want a number, got "half"`},
		{"infinite float", "tracing: {sample_ratio: .inf}\n", `config.yaml:1: tracing.sample_ratio: want a finite number, got ".inf"`},
		{"mapping for list", "k: {a: 1}\n", `config.yaml:1: k: want a list, got a mapping`},
		{"scalar for list", "k: 5\n", `config.yaml:1: k: want a list, got an integer`},
		{"null list item", "windows:\n  -\n", `config.yaml:2: windows[0]: want a mapping, got null`},
		{"duration without unit", "join: {ttl: 30}\n", `config.yaml:1: join.ttl: invalid duration "30": want a number and a unit, like 10s, 5m, 1h or 1m30s`},
		{"duration with a day unit", "window:\n  max_lateness: 1d\n", `config.yaml:2: window.max_lateness: invalid duration "1d": want a number and a unit, like 10s, 5m, 1h or 1m30s`},
		{"duration as mapping", "alerting: {resend: {m: 1}}\n", `config.yaml:1: alerting.resend: want a duration, got a mapping`},
		{"gate duration", "gates:\n  - name: g\n    for: soon\n", `config.yaml:2: gates[0] "g": metric is empty
config.yaml:2: gates[0] "g": op "" is not one of >=, >, <=, <
config.yaml:3: gates[0].for: invalid duration "soon": want a number and a unit, like 10s, 5m, 1h or 1m30s`},
		{"custom tag", "nats:\n  url: !env NATS_URL\n", `config.yaml:2: nats.url: unsupported YAML tag "!env"`},
		{"non-string key", "nats:\n  [a]: 1\n", `config.yaml:2: nats: a key must be a string, got a list`},
		{"duplicate key", "http:\n  listen: \":1\"\n  listen: \":2\"\n", `config.yaml:3: duplicate key "listen" in http (first at line 2)`},
		{"syntax error", "nats:\n  url: \"\"\n bad: 1\n", `config.yaml:3: did not find expected key`},
		{"syntax error on line 1", "a: b: c\n", `config.yaml:1: mapping values are not allowed in this context`},
		{"tab indent", "nats:\n\turl: x\n", `config.yaml:2: found character that cannot start any token`},
		{"unclosed flow", "k: [1, 2\nlog: {}\n", `config.yaml:2: did not find expected ',' or ']'`},
		// A problem of reading and a problem of validation, in one run.
		{"unknown key and unknown metric", "natz: 1\ngates:\n  - {name: g, metric: precison, op: \">=\", treshold: 0.8}\n",
			"config.yaml:1: unknown field \"natz\" at the top level; did you mean \"nats\"?\n" +
				"config.yaml:3: unknown field \"treshold\" in gates[0]; did you mean \"threshold\"?\n" +
				"config.yaml:3: gates[0] \"g\": unknown metric \"precison\"; did you mean \"precision\"?"},
		{"two documents", "k: [1]\n---\nk: [2]\n", `config.yaml:2: more than one YAML document; the configuration is one document`},
		{"top-level scalar", "hello\n", `config.yaml:1: the configuration must be a mapping of keys, got a string`},
		{"several problems", "natz: 1\njoin: {ttl: x}\nk: [a]\n",
			"config.yaml:1: unknown field \"natz\" at the top level; did you mean \"nats\"?\n" +
				"config.yaml:2: join.ttl: invalid duration \"x\": want a number and a unit, like 10s, 5m, 1h or 1m30s\n" +
				"config.yaml:3: k[0]: want an integer, got \"a\""},
	})
}

func TestAliasesAndMerge(t *testing.T) {
	c := mustParse(t, `windows:
  - &five {length: 5m, resolution: 10s}
  - {<<: *five, length: 10m}
k: &ks [1, 5]
gates:
  - &base {name: a, metric: chr, op: ">=", threshold: 0.5, arms: [canary]}
  - {<<: [*base], name: b}
`)
	if len(c.Windows) != 2 || c.Windows[1].Name() != "10m" || time.Duration(c.Windows[1].Resolution) != 10*time.Second {
		t.Errorf("windows = %+v", c.Windows)
	}
	if g := c.Gates[1]; g.Name != "b" || g.Metric != "chr" || !slices.Equal(g.Arms, []string{"canary"}) {
		t.Errorf("merged gate = %+v", g)
	}
}

// A billion-laughs document stops at the node budget instead of expanding.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("gates: [*a8]\n")
	start := time.Now()
	_, err := Parse([]byte(b.String()), "bomb.yaml")
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Parse took %v", d)
	}
}

func TestFormatDuration(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{5 * time.Minute, "5m"},
		{time.Hour, "1h"},
		{10 * time.Second, "10s"},
		{90 * time.Second, "1m30s"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 30*time.Second, "1h30s"},
		{24 * time.Hour, "24h"},
		{1500 * time.Millisecond, "1.5s"},
		{500 * time.Millisecond, "500ms"},
		{time.Minute + 500*time.Millisecond, "1m500ms"},
		{-5 * time.Minute, "-5m"},
		{time.Duration(-1 << 63), "-2562047h47m16.854775808s"},
	}
	for _, tc := range cases {
		got := FormatDuration(tc.d)
		if got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tc.d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, tc.d)
		}
	}
}

func TestDurationCodecs(t *testing.T) {
	var v struct {
		D Duration `yaml:"d" json:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\n"), &v); err != nil || time.Duration(v.D) != 90*time.Second {
		t.Errorf("yaml.Unmarshal = %v, %v", v.D, err)
	}
	if err := yaml.Unmarshal([]byte("d: 90\n"), &v); err == nil {
		t.Error("yaml.Unmarshal of 90 succeeded")
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Errorf("yaml.Marshal = %q, %v", out, err)
	}
	j, err := json.Marshal(v)
	if err != nil || string(j) != `{"d":"1m30s"}` {
		t.Errorf("json.Marshal = %s, %v", j, err)
	}
	if err := json.Unmarshal([]byte(`{"d":"2h"}`), &v); err != nil || time.Duration(v.D) != 2*time.Hour {
		t.Errorf("json.Unmarshal = %v, %v", v.D, err)
	}
	if s := Duration(time.Hour).String(); s != "1h" {
		t.Errorf("String = %q", s)
	}
}

func TestWindowNamed(t *testing.T) {
	c := Default()
	cases := []struct {
		name    string
		l, r    time.Duration
		matches bool
	}{
		{"5m", 5 * time.Minute, 10 * time.Second, true},
		{"300s", 5 * time.Minute, 10 * time.Second, true},
		{"1h", time.Hour, time.Minute, true},
		{"60m", time.Hour, time.Minute, true},
		{"10m", 0, 0, false},
		{"", 0, 0, false},
		{"soon", 0, 0, false},
	}
	for _, tc := range cases {
		l, r, ok := c.WindowNamed(tc.name)
		if l != tc.l || r != tc.r || ok != tc.matches {
			t.Errorf("WindowNamed(%q) = %v %v %v, want %v %v %v", tc.name, l, r, ok, tc.l, tc.r, tc.matches)
		}
	}
	if got := c.LongestWindow(); got != time.Hour {
		t.Errorf("LongestWindow = %v", got)
	}
}

// Secrets never show in printed configurations or in errors.
func TestSecretsHidden(t *testing.T) {
	secrets := []string{"hunter2", "s3cr3t-t0ken", "pw", "abc", "urltok"}
	c, err := Load(filepath.Join("testdata", "good", "auth_token.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.NATS.Password = "hunter2"
	c.NATS.User = ""
	c.NATS.URL = "nats://urltok@nats.example:4222,tls://u:hunter2@b:4222"
	if c.NATS.Token != "s3cr3t-t0ken" {
		t.Fatalf("token = %q", c.NATS.Token)
	}
	m, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := yaml.Marshal(*c)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Redacted()
	outputs := map[string]string{
		"String":           c.String(),
		"%v":               fmt.Sprintf("%v", c),
		"%v value":         fmt.Sprintf("%v", *c),
		"%+v value":        fmt.Sprintf("%+v", *c),
		"%#v":              fmt.Sprintf("%#v", *c),
		"nats %v":          fmt.Sprintf("%v", c.NATS),
		"nats %#v":         fmt.Sprintf("%#v", c.NATS),
		"alerting %+v":     fmt.Sprintf("%+v", c.Alerting),
		"yaml.Marshal ptr": string(m),
		"yaml.Marshal val": string(mv),
		"Redacted %+v":     fmt.Sprintf("%+v %+v %+v", r.NATS.URL, r.NATS.Password, r.Alerting.WebhookURL),
	}
	for what, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows secret %q:\n%s", what, s, out)
			}
		}
		if !strings.Contains(out, "xxxxx") && !strings.Contains(out, redacted) {
			t.Errorf("%s shows no redaction mark:\n%s", what, out)
		}
	}
	if r.NATS.Password != redacted || r.NATS.Token != redacted {
		t.Errorf("Redacted nats = %q %q", r.NATS.Password, r.NATS.Token)
	}
	if want := "nats://xxxxx@nats.example:4222,tls://u:xxxxx@b:4222"; r.NATS.URL != want {
		t.Errorf("Redacted nats.url = %q, want %q", r.NATS.URL, want)
	}
	if want := "https://user:xxxxx@hooks.example.com/x?token=xxxxx"; r.Alerting.WebhookURL != want {
		t.Errorf("Redacted webhook_url = %q, want %q", r.Alerting.WebhookURL, want)
	}
	// The original is untouched, and the copy is deep.
	if c.NATS.Password != "hunter2" || c.NATS.Token != "s3cr3t-t0ken" {
		t.Error("Redacted changed the original")
	}
	r.Gates[4].Arms[0] = "x"
	r.K[0] = 99
	r.Analysis.Checks[CanaryCheckSet][0].Metric = "x"
	r.Analysis.Checks["new"] = nil
	if c.Gates[4].Arms[0] != "shadow" || c.K[0] != 1 {
		t.Error("Redacted shares slices with the original")
	}
	if _, added := c.Analysis.Checks["new"]; added || c.Analysis.Checks[CanaryCheckSet][0].Metric != "precision" {
		t.Error("Redacted shares the check sets with the original")
	}
	// Defaults have empty secrets, printed as such.
	d := Default()
	if dr := d.Redacted(); dr.NATS.Password != "" || dr.NATS.URL != "" {
		t.Errorf("Redacted defaults = %+v", dr.NATS)
	}

	// Errors from configs holding secrets.
	bad := []string{
		"nats:\n  url: http://u:hunter2@nats:4222\n  password: hunter2\n",
		"nats:\n  url: 'nats://urltok@'\n  token: s3cr3t-t0ken\n  user: u\n",
		"alerting:\n  webhook_url: 'ftp://u:pw@h/x?abc=1'\n",
		"alerting:\n  alertmanager_url: 'http://u:hunter2@[::1'\n",
		"nats:\n  tls: hunter2\n",
		"nats:\n  password: [hunter2]\n",
	}
	for _, in := range bad {
		_, err := Parse([]byte(in), "secret.yaml")
		if err == nil {
			t.Errorf("Parse succeeded on:\n%s", in)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error shows secret %q: %v", s, err)
			}
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !os.IsNotExist(err) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestErrorType(t *testing.T) {
	_, err := Parse([]byte("k: [0]\n"), "c.yaml")
	var e *Error
	if !errors.As(err, &e) || e.File != "c.yaml" || e.Line != 1 || e.Msg != "k[0]: must be > 0, got 0" {
		t.Errorf("error = %#v", e)
	}
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{"f", 3, "m"}, "f:3: m"},
		{Error{"f", 0, "m"}, "f: m"},
		{Error{"", 0, "m"}, "m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// fieldsByKey maps the yaml keys of struct type t to field indexes.
func fieldsByKey(t reflect.Type) (map[string]int, []string) {
	m := map[string]int{}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		m[key] = i
		keys = append(keys, key)
	}
	return m, keys
}
