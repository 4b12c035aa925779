package config

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// redacted replaces secrets in Redacted copies and printed configurations.
const redacted = "<redacted>"

// redactedURLPart replaces URL credentials and query values; it needs no
// escaping in a URL.
const redactedURLPart = "xxxxx"

// plainConfig has Config's fields and none of its methods, so encoding it
// does not call Config.MarshalYAML again.
type plainConfig Config

// Redacted is a deep copy of c safe to log: nats.password and nats.token
// become "<redacted>" when set, and the credentials and query values of
// nats.url, alerting.alertmanager_url, alerting.webhook_url and
// tracing.endpoint become "xxxxx".
func (c *Config) Redacted() *Config {
	r := *c
	r.Windows = slices.Clone(c.Windows)
	r.K = slices.Clone(c.K)
	r.Gates = slices.Clone(c.Gates)
	for i := range r.Gates {
		r.Gates[i].Arms = slices.Clone(r.Gates[i].Arms)
	}
	r.Analysis = c.Analysis.clone()
	r.NATS = c.NATS.redacted()
	r.Alerting = c.Alerting.redacted()
	r.Tracing.Endpoint = redactURL(c.Tracing.Endpoint)
	return &r
}

func (n NATSConfig) redacted() NATSConfig {
	if n.Password != "" {
		n.Password = redacted
	}
	if n.Token != "" {
		n.Token = redacted
	}
	if n.URL != "" {
		parts := strings.Split(n.URL, ",")
		for i, p := range parts {
			parts[i] = redactURL(p)
		}
		n.URL = strings.Join(parts, ",")
	}
	return n
}

func (a AlertingConfig) redacted() AlertingConfig {
	a.AlertmanagerURL = redactURL(a.AlertmanagerURL)
	a.WebhookURL = redactURL(a.WebhookURL)
	return a
}

// redactURL hides the user information (a password, or a lone user name,
// which NATS and webhooks use for tokens) and the query values of a URL. A
// URL without a scheme is read as host:port with an optional user@.
func redactURL(s string) string {
	if s == "" {
		return s
	}
	lead, trail := s[:len(s)-len(strings.TrimLeft(s, " \t"))], s[len(strings.TrimRight(s, " \t")):]
	raw := strings.TrimSpace(s)
	schemeless := !strings.Contains(raw, "://")
	if schemeless {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(s, "@?") {
			return redactedURLPart
		}
		return s
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redactedURLPart)
		} else {
			u.User = url.User(redactedURLPart)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = redactedURLPart
			}
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	out := u.String()
	if schemeless {
		out = strings.TrimPrefix(out, "nats://")
	}
	return lead + out + trail
}

// MarshalYAML writes the configuration with its secrets redacted (see
// Redacted): every key, in the order of SPEC §8.
func (c Config) MarshalYAML() (any, error) {
	return c.Redacted().node(false)
}

// String is the configuration as YAML, secrets redacted.
func (c Config) String() string { return yamlString(c) }

// GoString is String, so that %#v does not print secrets either.
func (c Config) GoString() string { return c.String() }

// String is the nats section as YAML, secrets redacted.
func (n NATSConfig) String() string { return yamlString(n.redacted()) }

// GoString is String, so that %#v does not print secrets either.
func (n NATSConfig) GoString() string { return n.String() }

// String is the alerting section as YAML, URL credentials redacted.
func (a AlertingConfig) String() string { return yamlString(a.redacted()) }

// GoString is String, so that %#v does not print secrets either.
func (a AlertingConfig) GoString() string { return a.String() }

// DefaultYAML is the default configuration, every key and the shipped gates
// written out, with comments: what `shadoweval config defaults` prints.
// Parse reads it back to Default().
func DefaultYAML() []byte {
	c := Default()
	n, err := c.node(true)
	if err == nil {
		var b []byte
		if b, err = encodeYAML(n); err == nil {
			return b
		}
	}
	panic("config: encoding the defaults: " + err.Error())
}

// yamlString is v as YAML for a String method, which has no error to
// return: a failure is printed in its place.
func yamlString(v any) string {
	b, err := encodeYAML(v)
	if err != nil {
		return fmt.Sprintf("config: %v", err)
	}
	return string(b)
}

func encodeYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Comments of DefaultYAML, by key path.
var (
	keyComments = map[string]string{
		"nats.url":                  "empty: start the embedded NATS server (JetStream on)",
		"nats.jetstream":            "true: a durable JetStream consumer with explicit acks",
		"nats.stream":               "JetStream stream (created if missing)",
		"nats.durable":              "durable consumer name",
		"nats.store_dir":            "embedded server's JetStream data; empty: a temp dir",
		"nats.workers":              "goroutines per subject (core NATS); 0: one per CPU",
		"nats.replicas":             "copies of each stream and bucket created; 3 on a cluster",
		"nats.ack_wait":             "an unacked message is delivered again after this",
		"nats.heartbeat":            "a consumer pulls again after two missed heartbeats",
		"nats.password":             "secret",
		"nats.token":                "secret",
		"subjects.alerts":           "+ .<arm>",
		"subjects.verdicts":         "+ .<arm>",
		"subjects.deadletter":       "rejected input, its reason in a header",
		"gold.kv_bucket":            "optional NATS KV gold store, watched",
		"http.admin_token_file":     "bearer token for POST /-/reload; empty: open",
		"window.max_lateness":       "later events are dropped and counted (late)",
		"join.ttl":                  "how long half of a split event waits for the other",
		"join.max_pending":          "pending halves kept; overflow evicts the oldest",
		"lambda.min_runs":           "runs for a λ group to be complete",
		"citation_offset_tolerance": "bytes, at both ends",
		"alerting.alertmanager_url": "base URL; alerts go to /api/v2/alerts",
		"alerting.webhook_url":      "generic JSON webhook",
		"alerting.resend":           "re-send interval while firing",
		"log.level":                 "debug, info, warn or error",
		"log.payloads":              "log claims and query text",
		"limits.max_message_bytes":  "larger messages are rejected",
		"limits.max_topk":           "more top-k items are rejected",
		"limits.max_arms":           "distinct arms tracked",
		"limits.max_content_types":  "distinct content types tracked",
		"tracing.endpoint":          "OTLP; empty: $OTEL_EXPORTER_OTLP_ENDPOINT, else off",
		"tracing.sample_ratio":      "share of scored events traced",
		"analysis.alpha":            "chance of ever failing a healthy candidate",
		"analysis.max_active":       "analyses running at once",
		"analysis.max_duration":     "an analysis ends this long after its start",
		"analysis.retention":        "an ended analysis stays readable this long",
		"analysis.kv_bucket":        "checkpoints, to resume after a restart",
	}
	headComments = map[string]string{
		"windows": "sliding windows by event time: length and bucket resolution",
		"k":       "cut-offs of recall_at_k, mean_precision_at_k, mean_recall_at_k",
		"gates": "The shipped gates (SPEC §5). gates: [] or no gates key means these;\n" +
			"listing any gates replaces them all. Left out in a gate: window = the\n" +
			"first window, min_samples = 100 (20 for λ, 50 for cross-agent metrics),\n" +
			"for = 0s, arms = every arm, severity = warning, confidence = 0 (judge\n" +
			"the point value), compare_to = \"\" (judge the value itself).",
		"analysis": "Canary analyses (SPEC §5.2): candidate vs baseline since a start.",
		"analysis.checks": "Named check sets; a set given replaces the shipped set of that\n" +
			"name, the other shipped sets stay. A check with op \"\" compares\n" +
			"candidate − baseline within tolerance; one with op and threshold\n" +
			"judges the candidate's own value. Left out: name = metric,\n" +
			"min_samples = 100 (20 for λ, 50 for cross-agent metrics).",
		"limits":  "caps on hostile input",
		"tracing": "OpenTelemetry",
	}
	// Head comments of the shipped check sets.
	checkSetComments = map[string]string{
		CanaryCheckSet:      "comparisons with the baseline",
		EligibilityCheckSet: "seed 001: a shadow arm before a canary starts",
	}
	// Head comments of the shipped gates, by index in DefaultGates.
	gateGroupComments = map[int]string{
		0:  "reference ship gates (seed 002)",
		4:  "canary eligibility (seed 001)",
		10: "on-call alerts",
		15: "cross-agent consistency (seed 003)",
	}
)

// node encodes c field by field (no redaction: callers redact), with flow
// style for short lists and, when comments is set, the comments of
// DefaultYAML.
func (c *Config) node(comments bool) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode((*plainConfig)(c)); err != nil {
		return nil, err
	}
	if comments {
		n.HeadComment = "shadoweval configuration: every key with its default\n" +
			"(shadoweval config defaults). A key left out, or null, keeps its default."
	}
	styleNode(&n, "", comments, c.src == nil || c.src.defaultGates)
	return &n, nil
}

// checkSetsPath stands for any set of analysis.checks in styleNode.
const checkSetsPath = "analysis.checks.*"

func styleNode(n *yaml.Node, path string, comments, defaultGates bool) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if path == "analysis.checks" {
				// Set names are the user's: every set shares one path.
				if c, ok := checkSetComments[k.Value]; ok && comments {
					k.HeadComment = c
				}
				p = checkSetsPath
			}
			if comments {
				if c, ok := keyComments[p]; ok {
					v.LineComment = c
				}
				if c, ok := headComments[p]; ok {
					k.HeadComment = c
				}
			}
			if p == "gates.op" || p == checkSetsPath+".op" {
				v.Style = yaml.DoubleQuotedStyle // '>=' and <= alike
			}
			styleNode(v, p, comments, defaultGates)
		}
	case yaml.SequenceNode:
		switch path {
		case "k", "gates.arms":
			n.Style = yaml.FlowStyle
		}
		for i, item := range n.Content {
			switch path {
			case "windows", checkSetsPath:
				item.Style = yaml.FlowStyle
			case "gates":
				if c, ok := gateGroupComments[i]; ok && comments && defaultGates {
					item.HeadComment = c
				}
			}
			// Items share their list's path, so "gates.arms" names every
			// gate's arms.
			styleNode(item, path, comments, defaultGates)
		}
	}
}
