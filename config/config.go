// Package config reads, checks and prints the shadoweval configuration file
// (SPEC §8): one strict YAML file where an unknown key is an error and every
// key has a default, so an empty file (or none) is a working configuration.
//
// Reading is Load or Parse: start from Default, overlay the file, fill in the
// per-gate defaults, then Validate. Every problem found is reported at once,
// each on one line naming the file and line:
//
//	config.yaml:7: unknown field "jetstrem" in nats
//	config.yaml:23: gates[2] "precision_floor": unknown metric "precison"
//
// Conventions where the SPEC is silent:
//   - A key given as null (or with no value) keeps its default; a list given
//     as [] is an empty list (an error for windows and k), except gates: []
//     which, like an absent or null gates key, means the shipped defaults.
//   - Lists replace the default list as a whole; mappings are merged key by
//     key into the defaults.
//   - analysis.checks is merged set by set: a set given replaces the shipped
//     set of that name as a whole, the other shipped sets stay, and a set
//     given as null keeps its default.
//   - Gate and check indexes in messages are 0-based, as in gates[0] and
//     analysis.checks.canary[0].
//   - YAML anchors, aliases and merge keys (<<) are honoured.
package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the whole configuration file. The yaml tags are the SPEC §8 key
// names. Secrets (nats.password, nats.token, URL credentials) are hidden by
// String, GoString and MarshalYAML; use Redacted for a copy safe to log.
type Config struct {
	NATS                    NATSConfig     `yaml:"nats"`
	Subjects                SubjectsConfig `yaml:"subjects"`
	Gold                    GoldConfig     `yaml:"gold"`
	HTTP                    HTTPConfig     `yaml:"http"`
	Windows                 []WindowSpec   `yaml:"windows"`
	Window                  WindowConfig   `yaml:"window"`
	Join                    JoinConfig     `yaml:"join"`
	Lambda                  LambdaConfig   `yaml:"lambda"`
	K                       []int          `yaml:"k"`
	CitationOffsetTolerance int            `yaml:"citation_offset_tolerance"`
	Alerting                AlertingConfig `yaml:"alerting"`
	Gates                   []Gate         `yaml:"gates"`
	Analysis                AnalysisConfig `yaml:"analysis"`
	Log                     LogConfig      `yaml:"log"`
	Limits                  LimitsConfig   `yaml:"limits"`
	Tracing                 TracingConfig  `yaml:"tracing"`
	Cluster                 ClusterConfig  `yaml:"cluster"`

	src *source // where the config was read from; nil when built in code
}

// source remembers where each key came from, for error messages.
type source struct {
	file         string
	lines        map[string]int // key path ("nats.url", "gates[2].metric") → line
	defaultGates bool           // the gates are the shipped defaults
}

// NATSConfig is the nats section: the connection and its credentials.
type NATSConfig struct {
	// URL of the NATS server(s), comma-separated; empty starts an embedded
	// server with JetStream on.
	URL string `yaml:"url"`
	// JetStream consumes through a durable JetStream consumer with explicit
	// acks instead of core NATS subscriptions.
	JetStream bool   `yaml:"jetstream"`
	Stream    string `yaml:"stream"`  // JetStream stream, created if missing
	Durable   string `yaml:"durable"` // durable consumer name
	// Workers is how many goroutines handle each subject in core NATS
	// mode (a queue group of this process's own); 0 means one per CPU
	// (GOMAXPROCS). JetStream mode uses one, so that a replay applies
	// the stream in its order.
	Workers int `yaml:"workers"`
	// Replicas is the number of copies of every JetStream stream and KV
	// bucket the sidecar creates (the input stream, analysis.kv_bucket,
	// cluster.kv_bucket): 3 on a NATS cluster keeps them through the loss
	// of a server. An existing one with fewer is reported at start.
	Replicas int `yaml:"replicas"`
	// AckWait is how long the server waits for the ack of a message it
	// delivered before it delivers it again; in cluster mode also how
	// long a silent pinned instance keeps its member's partitions.
	AckWait Duration `yaml:"ack_wait"`
	// Heartbeat is the idle heartbeat of the consumer's pull requests: two
	// missed (a server or a consumer leader lost) make it pull again.
	Heartbeat Duration `yaml:"heartbeat"`
	// StoreDir is the embedded server's JetStream data directory; empty
	// means a temporary directory removed on exit.
	StoreDir     string    `yaml:"store_dir"`
	CredsFile    string    `yaml:"creds_file"`
	User         string    `yaml:"user"`
	Password     string    `yaml:"password"` // secret
	Token        string    `yaml:"token"`    // secret
	NKeySeedFile string    `yaml:"nkey_seed_file"`
	TLS          TLSConfig `yaml:"tls"`
}

// TLSConfig is nats.tls: a CA to trust and an optional client certificate.
type TLSConfig struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// SubjectsConfig is the subjects section. The four inputs are subscription
// patterns (wildcards allowed); alerts and verdicts are prefixes to which
// ".<arm>" is appended; deadletter is one literal subject.
type SubjectsConfig struct {
	Trace      string `yaml:"trace"`
	Retrieval  string `yaml:"retrieval"`
	Answer     string `yaml:"answer"`
	Judgement  string `yaml:"judgement"`
	Alerts     string `yaml:"alerts"`
	Verdicts   string `yaml:"verdicts"`
	Deadletter string `yaml:"deadletter"`
}

// GoldConfig is the gold section: a JSONL file and/or a NATS KV bucket.
type GoldConfig struct {
	File     string `yaml:"file"`
	KVBucket string `yaml:"kv_bucket"`
}

// HTTPConfig is the http section.
type HTTPConfig struct {
	Listen string `yaml:"listen"` // host:port
	// AdminTokenFile holds the bearer token required by the POST endpoints
	// that change state (/-/reload); empty leaves them open.
	AdminTokenFile string `yaml:"admin_token_file"`
}

// WindowSpec is one item of windows: a sliding window of Length made of
// buckets of Resolution.
type WindowSpec struct {
	Length     Duration `yaml:"length"`
	Resolution Duration `yaml:"resolution"`
}

// Name is the window's name as gates and the HTTP API spell it: "5m".
func (w WindowSpec) Name() string { return FormatDuration(time.Duration(w.Length)) }

// WindowConfig is the window section.
type WindowConfig struct {
	// MaxLateness bounds how late an event may arrive (SPEC §4); later
	// ones are dropped and counted as late.
	MaxLateness Duration `yaml:"max_lateness"`
}

// JoinConfig is the join section (split retrieval/answer events).
type JoinConfig struct {
	TTL        Duration `yaml:"ttl"`
	MaxPending int      `yaml:"max_pending"`
}

// LambdaConfig is the lambda section.
type LambdaConfig struct {
	MinRuns int `yaml:"min_runs"` // runs for a λ group to be complete
}

// AlertingConfig is the alerting section.
type AlertingConfig struct {
	AlertmanagerURL string   `yaml:"alertmanager_url"` // base URL; /api/v2/alerts is appended
	WebhookURL      string   `yaml:"webhook_url"`
	Resend          Duration `yaml:"resend"` // re-send interval while firing
}

// LogConfig is the log section.
type LogConfig struct {
	Level    string `yaml:"level"`    // debug, info, warn, error
	Payloads bool   `yaml:"payloads"` // log claims and query text
}

// LimitsConfig caps hostile input; a message over a cap is rejected and
// dead-lettered.
type LimitsConfig struct {
	MaxMessageBytes int `yaml:"max_message_bytes"`
	MaxTopK         int `yaml:"max_topk"`          // top-k items per event
	MaxArms         int `yaml:"max_arms"`          // distinct arms tracked
	MaxContentTypes int `yaml:"max_content_types"` // distinct content types tracked
}

// TracingConfig is the tracing section (OpenTelemetry).
type TracingConfig struct {
	// Endpoint of the OTLP exporter; empty falls back to
	// OTEL_EXPORTER_OTLP_ENDPOINT, and with neither tracing is off.
	Endpoint    string  `yaml:"endpoint"`
	SampleRatio float64 `yaml:"sample_ratio"`
}

// ClusterConfig is the cluster section (SPEC §10): several replicas share
// the input through a JetStream partitioned consumer group.
type ClusterConfig struct {
	// Partitions splits the input by the subject's key token; 0 runs one
	// replica without partitions.
	Partitions int `yaml:"partitions"`
	// Members of the consumer group; 0 means one per partition. The
	// partitions are shared among the members evenly.
	Members int `yaml:"members"`
	// Member is this replica's member, an integer in [0, members); empty
	// takes the ordinal at the end of the host name (a StatefulSet pod's
	// name) modulo members. Replicas with the same member are one pinned
	// instance and its hot standbys.
	Member string `yaml:"member"`
	// KVBucket holds each member's windows and analysis accumulators,
	// which every replica merges to answer for the cluster; empty means
	// "shadoweval_cluster".
	KVBucket string `yaml:"kv_bucket"`
	// PublishInterval is how often a member writes its part.
	PublishInterval Duration `yaml:"publish_interval"`
	// StaleAfter is how old a member's part may be before the cluster's
	// verdicts turn inconclusive.
	StaleAfter Duration `yaml:"stale_after"`
	// Gold is "partitions" (load only the gold items of this member's
	// partitions) or "all".
	Gold string `yaml:"gold"`
}

// Default is the configuration with every default of SPEC §8, the shipped
// gates of §5.1 and check sets of §5.2 included.
func Default() Config {
	return Config{
		NATS: NATSConfig{
			Stream:    "RAG",
			Durable:   "shadoweval",
			Replicas:  1,
			AckWait:   Duration(5 * time.Second),
			Heartbeat: Duration(time.Second),
		},
		Subjects: SubjectsConfig{
			Trace:      "rag.trace.>",
			Retrieval:  "rag.retrieval.>",
			Answer:     "rag.answer.>",
			Judgement:  "rag.judgement.>",
			Alerts:     "shadoweval.alerts",
			Verdicts:   "shadoweval.verdicts",
			Deadletter: "shadoweval.deadletter",
		},
		Gold: GoldConfig{File: "gold.jsonl"},
		HTTP: HTTPConfig{Listen: ":9464"},
		Windows: []WindowSpec{
			{Length: Duration(5 * time.Minute), Resolution: Duration(10 * time.Second)},
			{Length: Duration(time.Hour), Resolution: Duration(time.Minute)},
		},
		Window:                  WindowConfig{MaxLateness: Duration(time.Minute)},
		Join:                    JoinConfig{TTL: Duration(30 * time.Second), MaxPending: 100000},
		Lambda:                  LambdaConfig{MinRuns: 3},
		K:                       []int{1, 3, 5, 10},
		CitationOffsetTolerance: 30,
		Alerting:                AlertingConfig{Resend: Duration(time.Minute)},
		Gates:                   DefaultGates(),
		Analysis:                defaultAnalysis(),
		Log:                     LogConfig{Level: "info"},
		Limits: LimitsConfig{
			MaxMessageBytes: 1 << 20,
			MaxTopK:         1000,
			MaxArms:         32,
			MaxContentTypes: 16,
		},
		Tracing: TracingConfig{SampleRatio: 0.01},
		Cluster: ClusterConfig{
			PublishInterval: Duration(5 * time.Second),
			StaleAfter:      Duration(30 * time.Second),
			Gold:            "partitions",
		},
	}
}

// Load reads and checks the configuration file at path. Messages name the
// file as path was given.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse reads and checks a configuration; name is the file name used in
// messages. It returns every problem found, joined, one per line in file
// order: the YAML problems (syntax, unknown keys, wrong types) and the
// Validate problems of what could be read, so that one run shows them
// all. A syntax error stops the reading, and then is the only problem.
// Left-out gate and check keys get their defaults first.
func Parse(data []byte, name string) (*Config, error) {
	c := Default()
	c.Gates = nil
	d := newDecoder(name)
	d.document(data, &c)
	if len(d.errs) > 0 && !d.decoded {
		return nil, d.err()
	}
	if len(d.errs) > 0 {
		c = Default()
		c.Gates = nil
		d.decodeRest(&c)
	}
	d.noteLines(&c)
	c.src = &source{file: name, lines: d.lines}
	c.fillGateDefaults()
	c.fillAnalysisDefaults()
	verr := c.Validate()
	if len(d.errs) == 0 {
		if verr != nil {
			return nil, verr
		}
		return &c, nil
	}
	// A value the reading refused already has its problem: what Validate
	// says of the default left in its place would only repeat it.
	errs := make([]*Error, 0, len(d.errs))
	bad := map[int]bool{}
	for _, p := range d.errs {
		errs = append(errs, p.err)
		if !p.key {
			bad[p.err.Line] = true
		}
	}
	for _, e := range problemsOf(verr) {
		if e.Line == 0 || !bad[e.Line] {
			errs = append(errs, e)
		}
	}
	return nil, joinErrors(errs)
}

// problemsOf unpacks the problems of a Validate error.
func problemsOf(err error) []*Error {
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]*Error, 0, len(list))
	for _, e := range list {
		var pe *Error
		if !errors.As(e, &pe) {
			pe = &Error{Msg: e.Error()}
		}
		out = append(out, pe)
	}
	return out
}

// fillGateDefaults puts in the shipped gates when none are given, and the
// default window, min_samples and severity of each gate that leaves them
// out. Gate windows are written the canonical way ("300s" becomes "5m").
func (c *Config) fillGateDefaults() {
	firstWindow := ""
	if len(c.Windows) > 0 {
		firstWindow = c.Windows[0].Name()
	}
	if len(c.Gates) == 0 {
		c.Gates = DefaultGates()
		c.src.defaultGates = true
		// The shipped gates judge the 5m window; when it is not configured
		// they judge the first configured window instead.
		if _, _, ok := c.WindowNamed(defaultGateWindow); !ok && firstWindow != "" {
			for i := range c.Gates {
				c.Gates[i].Window = firstWindow
			}
		}
		return
	}
	for i := range c.Gates {
		g := &c.Gates[i]
		given := func(key string) bool {
			_, ok := c.src.lines[fmt.Sprintf("gates[%d].%s", i, key)]
			return ok
		}
		if !given("window") {
			g.Window = firstWindow
		} else if d, err := time.ParseDuration(g.Window); err == nil {
			g.Window = FormatDuration(d)
		}
		if !given("min_samples") {
			g.MinSamples = DefaultMinSamples(g.Metric)
		}
		if !given("severity") {
			g.Severity = DefaultSeverity
		}
		if len(g.Arms) == 0 {
			g.Arms = nil
		}
	}
}

// WindowNamed finds the configured window called name ("5m"; any spelling
// of the same duration, such as "300s", finds it too).
func (c *Config) WindowNamed(name string) (length, resolution time.Duration, ok bool) {
	d, err := time.ParseDuration(name)
	if err != nil {
		return 0, 0, false
	}
	for _, w := range c.Windows {
		if time.Duration(w.Length) == d {
			return d, time.Duration(w.Resolution), true
		}
	}
	return 0, 0, false
}

// LongestWindow is the length of the longest configured window: how far
// back events are kept, deduplicated and replayed.
func (c *Config) LongestWindow() time.Duration {
	var longest time.Duration
	for _, w := range c.Windows {
		longest = max(longest, time.Duration(w.Length))
	}
	return longest
}

// Duration is a time.Duration read from and written as a Go duration string
// such as "10s", "5m", "1h", "1m30s".
type Duration time.Duration

// String is the duration as FormatDuration writes it.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// MarshalYAML writes the duration as a string, "5m".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration string. Its problems are a
// *yaml.TypeError, with which yaml.v3 goes on decoding the rest.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a duration, got %s", n.Line, describe(n))}}
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = Duration(v)
	return nil
}

// MarshalText and UnmarshalText make Duration a string in JSON and flags.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number and a unit, like 10s, 5m, 1h or 1m30s", s)
	}
	return v, nil
}

// FormatDuration writes d the way people write durations in the config:
// "5m", "1h", "10s", "1m30s", "1h30m", "500ms"; zero units are left out
// (time.Duration.String would write "5m0s" and "1h0m0s"). The result reads
// back with time.ParseDuration.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < 0:
		if d == -d { // math.MinInt64 has no positive counterpart
			return d.String()
		}
		return "-" + FormatDuration(-d)
	}
	var b strings.Builder
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if rest := d % time.Minute; rest > 0 {
		b.WriteString(rest.String())
	}
	return b.String()
}

// Error is one problem of a configuration, at a line of a file when known.
// Parse and Validate return them joined with errors.Join; errors.As finds
// the first.
type Error struct {
	File string
	Line int    // 0 when unknown
	Msg  string // names the key path or the gate
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	}
	return e.Msg
}

// joinErrors sorts problems by line (those without a line last, in the
// order found) and joins them.
func joinErrors(errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}
