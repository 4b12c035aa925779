package config

import (
	"math"
	"strings"
	"testing"
	"time"
)

// gateYAML is a config with one gate made of the given extra lines after
// name (line 2) and metric (line 3).
func gateYAML(metric string, lines ...string) string {
	return "gates:\n  - name: g\n    metric: " + metric + "\n" + indentLines(lines)
}

func indentLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// TestValidateRules checks each rule of Validate on a config that breaks
// only it, with the exact message.
func TestValidateRules(t *testing.T) {
	ge := `op: ">="`
	checkParseErrors(t, []parseErrorCase{
		// Gates.
		{"unknown metric", gateYAML("precison", ge, "threshold: 0.8"),
			`config.yaml:3: gates[0] "g": unknown metric "precison"; did you mean "precision"?`},
		{"per-k metric with k not configured", gateYAML("mean_recall_at_7", ge, "threshold: 0.8"),
			`config.yaml:3: gates[0] "g": unknown metric "mean_recall_at_7": 7 is not in k [1, 3, 5, 10]`},
		{"triage label unknown", gateYAML("triage_maybe", ge, "threshold: 0.8"),
			`config.yaml:3: gates[0] "g": unknown metric "triage_maybe"`},
		{"bad op", gateYAML("chr", `op: "=="`, "threshold: 0.8"),
			`config.yaml:4: gates[0] "g": op "==" is not one of >=, >, <=, <`},
		{"missing op", gateYAML("chr", "threshold: 0.8"),
			`config.yaml:2: gates[0] "g": op "" is not one of >=, >, <=, <`},
		{"window not configured", gateYAML("chr", ge, "threshold: 0.8", "window: 10m"),
			`config.yaml:6: gates[0] "g": window 10m is not a configured window (windows: 5m, 1h)`},
		{"window not a duration", gateYAML("chr", ge, "threshold: 0.8", "window: five"),
			`config.yaml:6: gates[0] "g": window "five" is not a duration`},
		{"proportion threshold above 1", gateYAML("precision", ge, "threshold: 1.01"),
			`config.yaml:5: gates[0] "g": threshold 1.01 is out of range [0, 1] for proportion metric "precision"`},
		{"proportion threshold below 0", gateYAML("precision", ge, "threshold: -0.1"),
			`config.yaml:5: gates[0] "g": threshold -0.1 is out of range [0, 1] for proportion metric "precision"`},
		{"mean threshold", gateYAML("mean_precision_at_5", ge, "threshold: 3"),
			`config.yaml:5: gates[0] "g": threshold 3 is out of range [0, 1] for mean metric "mean_precision_at_5"`},
		{"quantile threshold", gateYAML("delta_s_p90", `op: "<="`, "threshold: 1.2"),
			`config.yaml:5: gates[0] "g": threshold 1.2 is out of range [0, 1] for quantile metric "delta_s_p90"`},
		{"difference threshold", gateYAML("recall_at_5", ge, "threshold: -1.1", "compare_to: live"),
			`config.yaml:5: gates[0] "g": threshold -1.1 is out of range [-1, 1] for a difference of proportion metric "recall_at_5"`},
		{"distance threshold negative", gateYAML("anchor_proximity", `op: "<="`, "threshold: -1"),
			`config.yaml:5: gates[0] "g": threshold -1 is negative; a distance metric is >= 0`},
		{"kappa threshold", gateYAML("kappa", ge, "threshold: 1.5"),
			`config.yaml:5: gates[0] "g": threshold 1.5 is out of range [-1, 1] for kappa metric "kappa"`},
		{"confidence 1", gateYAML("chr", ge, "threshold: 0.8", "confidence: 1"),
			`config.yaml:6: gates[0] "g": confidence 1 is not in (0, 1); leave it out (or 0) to judge the point value`},
		{"confidence negative", gateYAML("chr", ge, "threshold: 0.8", "confidence: -0.5"),
			`config.yaml:6: gates[0] "g": confidence -0.5 is not in (0, 1); leave it out (or 0) to judge the point value`},
		{"confidence on a mean", gateYAML("mean_recall_at_5", ge, "threshold: 0.8", "confidence: 0.95"),
			`config.yaml:6: gates[0] "g": confidence applies to proportion metrics only; "mean_recall_at_5" is a mean`},
		{"confidence on a quantile", gateYAML("delta_s_median", `op: "<="`, "threshold: 0.4", "confidence: 0.95"),
			`config.yaml:6: gates[0] "g": confidence applies to proportion metrics only; "delta_s_median" is a quantile`},
		{"compare_to on kappa", gateYAML("kappa", ge, "threshold: 0", "compare_to: live"),
			`config.yaml:6: gates[0] "g": compare_to is not supported on kappa metric "kappa"`},
		{"compare_to on distance", gateYAML("anchor_proximity", `op: "<="`, "threshold: 0.5", "compare_to: live"),
			`config.yaml:6: gates[0] "g": compare_to is not supported on distance metric "anchor_proximity"`},
		{"compare_to own arm", gateYAML("chr", ge, "threshold: 0", "arms: [canary, live]", "compare_to: live"),
			`config.yaml:7: gates[0] "g": compare_to "live" is one of the gate's own arms`},
		{"compare_to bad arm", gateYAML("chr", ge, "threshold: 0", "compare_to: a.b"),
			`config.yaml:6: gates[0] "g": compare_to "a.b" is not a valid arm name (a NATS subject token: no white space, '.', '*' or '>')`},
		{"min_samples negative", gateYAML("chr", ge, "threshold: 0.5", "min_samples: -3"),
			`config.yaml:6: gates[0] "g": min_samples must be >= 0, got -3`},
		{"for negative", gateYAML("chr", ge, "threshold: 0.5", "for: -1m30s"),
			`config.yaml:6: gates[0] "g": for must be >= 0, got -1m30s`},
		{"arm with a dot", gateYAML("chr", ge, "threshold: 0.5", "arms: [live, x.y]"),
			`config.yaml:6: gates[0] "g": arms[1] "x.y" is not a valid arm name (a NATS subject token: no white space, '.', '*' or '>')`},
		{"arm with a wildcard", gateYAML("chr", ge, "threshold: 0.5", "arms: ['*']"),
			`config.yaml:6: gates[0] "g": arms[0] "*" is not a valid arm name (a NATS subject token: no white space, '.', '*' or '>')`},
		{"arm empty", gateYAML("chr", ge, "threshold: 0.5", `arms: [""]`),
			`config.yaml:6: gates[0] "g": arms[0] is empty`},
		{"arm twice", gateYAML("chr", ge, "threshold: 0.5", "arms: [a, b, a]"),
			`config.yaml:6: gates[0] "g": arm "a" is listed twice (arms[0] and arms[2])`},
		{"more arms than limits.max_arms", "limits: {max_arms: 2}\n" + gateYAML("chr", ge, "threshold: 0.5", "arms: [a, b, c]"),
			`config.yaml:7: gates[0] "g": 3 arms is more than limits.max_arms (2)`},
		{"severity empty", gateYAML("chr", ge, "threshold: 0.5", `severity: ""`),
			`config.yaml:6: gates[0] "g": severity is empty`},
		{"severity with space", gateYAML("chr", ge, "threshold: 0.5", `severity: "a b"`),
			`config.yaml:6: gates[0] "g": severity "a b" may only hold letters, digits, '_', '-' and '.'`},
		{"name empty", "gates:\n  - metric: chr\n    op: \">=\"\n    threshold: 0.5\n",
			`config.yaml:2: gates[0]: name is empty`},
		{"name with space", "gates:\n  - name: a b\n    metric: chr\n    op: \">=\"\n    threshold: 0.5\n",
			`config.yaml:2: gates[0] "a b": name "a b" may only hold letters, digits, '_', '-', '.' and ':'`},
		{"metric empty", "gates:\n  - name: g\n    op: \">=\"\n    threshold: 0.5\n",
			`config.yaml:2: gates[0] "g": metric is empty`},
		{"duplicate names", gateYAML("chr", ge, "threshold: 0.5") + "  - {name: g, metric: chr, op: '>=', threshold: 0.6}\n",
			`config.yaml:6: gates[1] "g": duplicate name (also gates[0] at line 2)`},

		// Windows.
		{"no windows", "windows: []\ngates: [{name: g, metric: chr, op: '>=', threshold: 0.5, window: 5m}]\n",
			`config.yaml:1: windows: at least one window is needed`},
		{"resolution zero", "windows: [{length: 5m, resolution: 0s}]\n",
			`config.yaml:1: windows[0].resolution: must be > 0, got 0s`},
		{"length negative", "windows: [{length: -5m, resolution: 10s}, {length: 5m, resolution: 10s}]\n",
			`config.yaml:1: windows[0].length: must be > 0, got -5m`},
		{"length missing", "windows:\n  - {resolution: 10s}\n  - {length: 5m, resolution: 10s}\n",
			`config.yaml:2: windows[0].length: must be > 0, got 0s`},
		{"length not a multiple", "windows: [{length: 5m, resolution: 11s}]\n",
			`config.yaml:1: windows[0]: length 5m is not a whole multiple of resolution 11s`},
		{"same length twice", "windows:\n  - {length: 5m, resolution: 10s}\n  - {length: 300s, resolution: 1m}\n",
			`config.yaml:3: windows[1].length: 5m is listed twice (also windows[0])`},
		{"too many buckets", "windows: [{length: 5m, resolution: 1ms}]\n",
			`config.yaml:1: windows[0]: length 5m at resolution 1ms makes 300000 buckets; at most 100000`},
		{"negative lateness", "window: {max_lateness: -1s}\n",
			`config.yaml:1: window.max_lateness: must be >= 0, got -1s`},

		// k.
		{"no k", "k: []\ngates: [{name: g, metric: chr, op: '>=', threshold: 0.5}]\n",
			`config.yaml:1: k: at least one k is needed`},
		{"k zero", "k: [0, 5]\n",
			`config.yaml:1: k[0]: must be > 0, got 0`},
		{"k twice", "k: [5, 1, 5]\n",
			`config.yaml:1: k[2]: 5 is listed twice (also k[0])`},
		{"k over max_topk", "k: [5, 20]\nlimits: {max_topk: 10}\n",
			`config.yaml:1: k[1]: 20 is more than limits.max_topk (10)`},

		// Scalars.
		{"join ttl zero", "join: {ttl: 0s}\n", `config.yaml:1: join.ttl: must be > 0, got 0s`},
		{"join max_pending zero", "join:\n  max_pending: 0\n", `config.yaml:2: join.max_pending: must be > 0, got 0`},
		{"min_runs zero", "lambda: {min_runs: 0}\n", `config.yaml:1: lambda.min_runs: must be between 1 and 255, got 0`},
		{"min_runs too many", "lambda: {min_runs: 256}\n", `config.yaml:1: lambda.min_runs: must be between 1 and 255, got 256`},
		{"tolerance negative", "citation_offset_tolerance: -5\n", `config.yaml:1: citation_offset_tolerance: must be >= 0, got -5`},
		{"log level", "log: {level: trace}\n", `config.yaml:1: log.level: "trace" is not one of debug, info, warn, error`},
		{"max_message_bytes", "limits: {max_message_bytes: 0}\n", `config.yaml:1: limits.max_message_bytes: must be > 0, got 0`},
		{"max_topk", "limits: {max_topk: 0}\n", `config.yaml:1: limits.max_topk: must be > 0, got 0`},
		{"max_arms", "limits: {max_arms: -1}\n", `config.yaml:1: limits.max_arms: must be > 0, got -1`},
		{"max_content_types", "limits: {max_content_types: 0}\n", `config.yaml:1: limits.max_content_types: must be > 0, got 0`},
		{"sample ratio above 1", "tracing: {sample_ratio: 2}\n", `config.yaml:1: tracing.sample_ratio: must be in [0, 1], got 2`},
		{"sample ratio negative", "tracing: {sample_ratio: -0.1}\n", `config.yaml:1: tracing.sample_ratio: must be in [0, 1], got -0.1`},
		{"tracing endpoint", "tracing: {endpoint: 'collector'}\n", `config.yaml:1: tracing.endpoint: want an http(s) URL or host:port`},
		{"tracing endpoint scheme", "tracing: {endpoint: 'udp://collector:4317'}\n", `config.yaml:1: tracing.endpoint: want an http:// or https:// URL`},

		// Alerting.
		{"alertmanager scheme", "alerting: {alertmanager_url: 'am:9093'}\n", `config.yaml:1: alerting.alertmanager_url: want an http:// or https:// URL`},
		{"webhook unparsable", "alerting:\n  webhook_url: 'http://a b:%zz'\n", `config.yaml:2: alerting.webhook_url: not a valid URL`},
		{"webhook no host", "alerting:\n  webhook_url: 'https:///hook'\n", `config.yaml:2: alerting.webhook_url: the URL has no host`},
		{"resend zero", "alerting: {resend: 0s}\n", `config.yaml:1: alerting.resend: must be > 0, got 0s`},

		// HTTP.
		{"listen without port", "http: {listen: 'localhost'}\n", `config.yaml:1: http.listen: "localhost" is not a host:port address: want host:port, like :9464 or 127.0.0.1:9464`},
		{"listen port out of range", "http: {listen: ':70000'}\n", `config.yaml:1: http.listen: ":70000" is not a host:port address: the port must be a number from 0 to 65535`},
		{"listen named port", "http: {listen: ':http'}\n", `config.yaml:1: http.listen: ":http" is not a host:port address: the port must be a number from 0 to 65535`},

		// NATS.
		{"tls cert without key", "nats:\n  tls: {cert_file: c.pem}\n", `config.yaml:2: nats.tls.cert_file: is set without nats.tls.key_file; a client certificate needs both`},
		{"tls key without cert", "nats:\n  tls: {key_file: k.pem}\n", `config.yaml:2: nats.tls.key_file: is set without nats.tls.cert_file; a client certificate needs both`},
		{"nats url scheme", "nats: {url: 'http://nats:4222'}\n", `config.yaml:1: nats.url: scheme "http" is not nats, tls, ws or wss`},
		{"nats url no host", "nats: {url: 'nats://'}\n", `config.yaml:1: nats.url: has no host`},
		{"nats url list", "nats: {url: 'nats://a:4222,'}\n", `config.yaml:1: nats.url: server 2: is empty`},
		{"jetstream without stream", "nats: {jetstream: true, stream: ''}\n", `config.yaml:1: nats.stream: is empty; JetStream mode needs a stream`},
		{"jetstream without durable", "nats: {jetstream: true, durable: ''}\n", `config.yaml:1: nats.durable: is empty; JetStream mode needs a durable consumer name`},
		{"stream name with wildcard", "nats: {stream: 'RAG*'}\n", `config.yaml:1: nats.stream: "RAG*" is not a valid JetStream name (no white space, '.', '*', '>', '/' or '\')`},
		{"durable name with slash", "nats: {durable: 'a/b'}\n", `config.yaml:1: nats.durable: "a/b" is not a valid JetStream name (no white space, '.', '*', '>', '/' or '\')`},
		{"password without user", "nats:\n  password: pw\n", `config.yaml:2: nats.password: is set without nats.user`},
		{"user and token", "nats:\n  user: u\n  token: t\n", `config.yaml:3: nats.token: set one way to authenticate, not several (user, token)`},
		{"replicas zero", "nats: {url: 'nats://a:4222', replicas: 0}\n", `config.yaml:1: nats.replicas: must be between 1 and 5 (JetStream's limit), got 0`},
		{"replicas above 5", "nats: {url: 'nats://a:4222', replicas: 7}\n", `config.yaml:1: nats.replicas: must be between 1 and 5 (JetStream's limit), got 7`},
		{"replicas on the embedded server", "nats:\n  replicas: 3\n", `config.yaml:2: nats.replicas: is 3, but nats.url is empty: the embedded NATS server is a single server and keeps one copy; set nats.url to a NATS cluster`},
		{"replicas not an integer", "nats: {url: 'nats://a:4222', replicas: three}\n", `config.yaml:1: nats.replicas: want an integer, got "three"`},
		{"ack wait below a second", "nats: {ack_wait: 200ms}\n", `config.yaml:1: nats.ack_wait: must be at least 1s, got 200ms`},
		{"heartbeat too short", "nats: {heartbeat: 100ms}\n", `config.yaml:1: nats.heartbeat: must be between 500ms and 30s (nats.go's range), got 100ms`},
		{"heartbeat too long", "nats: {heartbeat: 1m}\n", `config.yaml:1: nats.heartbeat: must be between 500ms and 30s (nats.go's range), got 1m`},
		{"creds and nkey", "nats:\n  creds_file: a.creds\n  nkey_seed_file: s.nk\n", `config.yaml:3: nats.nkey_seed_file: set one way to authenticate, not several (creds_file, nkey_seed_file)`},

		// Subjects.
		{"subject empty", "subjects: {answer: ''}\n", `config.yaml:1: subjects.answer: is empty`},
		{"subject trailing dot", "subjects: {trace: 'rag.trace.'}\n", `config.yaml:1: subjects.trace: "rag.trace." is not a valid NATS subject: it has an empty token (a leading, trailing or double dot)`},
		{"subject > not last", "subjects: {retrieval: 'rag.>.x'}\n", `config.yaml:1: subjects.retrieval: "rag.>.x" is not a valid NATS subject: '>' may only be the last token`},
		{"subject partial wildcard", "subjects: {judgement: 'rag.judge*'}\n", `config.yaml:1: subjects.judgement: "rag.judge*" is not a valid NATS subject: '*' and '>' must be whole tokens`},
		{"subject with space", "subjects: {trace: 'rag trace'}\n", `config.yaml:1: subjects.trace: "rag trace" is not a valid NATS subject: it contains white space or control characters`},
		{"output with wildcard", "subjects: {deadletter: 'dead.>'}\n", `config.yaml:1: subjects.deadletter: "dead.>" is not a valid subject to publish on: it has a wildcard`},
		{"output empty", "subjects: {alerts: ''}\n", `config.yaml:1: subjects.alerts: is empty`},
		{"input reads output", "subjects: {answer: 'shadoweval.verdicts.*'}\n", `config.yaml:1: subjects.answer: "shadoweval.verdicts.*" also matches the output subject "shadoweval.verdicts.<arm>": the sidecar would read its own output`},

		// Gold.
		{"no gold source", "gold: {file: ''}\n", `config.yaml:1: gold: no gold source: set gold.file or gold.kv_bucket`},
		{"gold bucket name", "gold: {kv_bucket: 'a b'}\n", `config.yaml:1: gold.kv_bucket: "a b" is not a valid KV bucket name (letters, digits, '_' and '-')`},
	})
}

// TestValidateInCode checks Validate on configurations built in code:
// without a file, messages name no file or line.
func TestValidateInCode(t *testing.T) {
	checkInCode(t, []inCodeCase{
		{"NaN threshold", func(c *Config) { c.Gates[0].Threshold = math.NaN() },
			`gates[0] "ship_precision": threshold must be a finite number`},
		{"infinite threshold", func(c *Config) { c.Gates[3].Threshold = math.Inf(1) },
			`gates[3] "ship_over_refusal": threshold must be a finite number`},
		{"empty window", func(c *Config) { c.Gates[1].Window = "" },
			`gates[1] "ship_chr": window is empty`},
		{"NaN sample ratio", func(c *Config) { c.Tracing.SampleRatio = math.NaN() },
			`tracing.sample_ratio: must be in [0, 1], got NaN`},
		{"no windows", func(c *Config) { c.Windows = nil },
			`windows: at least one window is needed`},
		{"bad resolution", func(c *Config) { c.Windows[1].Resolution = Duration(7 * time.Second) },
			`windows[1]: length 1h is not a whole multiple of resolution 7s`},
	})
	c := Default()
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
	c.Gates = nil
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() with no gates = %v, want nil", err)
	}
}

// TestValidateReportsAll checks that every problem is reported, sorted by
// line, one per line.
func TestValidateReportsAll(t *testing.T) {
	in := `join: {ttl: 0s}
gates:
  - {name: b, metric: nope, op: ">=", threshold: 0.5}
k: [0]
http: {listen: "x"}
`
	_, err := Parse([]byte(in), "c.yaml")
	want := `c.yaml:1: join.ttl: must be > 0, got 0s
c.yaml:3: gates[0] "b": unknown metric "nope"
c.yaml:4: k[0]: must be > 0, got 0
c.yaml:4: analysis.checks.canary[4] "recall_at_5": unknown metric "recall_at_5": 5 is not in k [0] (a shipped check set: give your own analysis.checks.canary to replace it)
c.yaml:4: analysis.checks.eligibility[5] "recall_at_5": unknown metric "recall_at_5": 5 is not in k [0] (a shipped check set: give your own analysis.checks.eligibility to replace it)
c.yaml:5: http.listen: "x" is not a host:port address: want host:port, like :9464 or 127.0.0.1:9464`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
