package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shadoweval/shadoweval/window"
)

// maxBuckets bounds length/resolution of a window: memory grows with
// buckets × distinct qids.
const maxBuckets = 100000

var (
	gateNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)
	severityRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	bucketRE   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	logLevels  = []string{"debug", "info", "warn", "error"}
	gateOps    = []string{">=", ">", "<=", "<"}
)

// Validate checks the configuration and returns every problem found, joined
// with errors.Join, one line each, in file order: "FILE:LINE: key: reason",
// for gates "FILE:LINE: gates[2] "name": reason" and for analysis checks
// "FILE:LINE: analysis.checks.canary[2] "name": reason". Secrets are never
// quoted. Validate does not change c.
func (c *Config) Validate() error {
	k := &checker{c: c}
	if c.src != nil {
		k.file, k.lines = c.src.file, c.src.lines
	}
	k.nats()
	k.subjects()
	k.gold()
	k.http()
	k.windows()
	k.scalars()
	k.alerting()
	k.tracing()
	k.cluster()
	for i := range c.Gates {
		k.gate(i)
	}
	k.analysis()
	if len(k.errs) == 0 {
		return nil
	}
	return joinErrors(k.errs)
}

type checker struct {
	c     *Config
	file  string
	lines map[string]int
	errs  []*Error
}

// lineOf is the line of the key at path, or of its nearest given parent.
func (k *checker) lineOf(path string) int {
	for path != "" {
		if l, ok := k.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// errf reports a problem of the key at path.
func (k *checker) errf(path, format string, args ...any) {
	k.errs = append(k.errs, &Error{File: k.file, Line: k.lineOf(path), Msg: path + ": " + fmt.Sprintf(format, args...)})
}

// gatef reports a problem of gate i, at the line of its key field.
func (k *checker) gatef(i int, field, format string, args ...any) {
	g := &k.c.Gates[i]
	line := k.lines[fmt.Sprintf("gates[%d].%s", i, field)]
	if line == 0 {
		line = g.Line
	}
	if line == 0 {
		line = k.lines["gates"]
	}
	prefix := fmt.Sprintf("gates[%d]", i)
	if g.Name != "" {
		prefix += fmt.Sprintf(" %q", g.Name)
	}
	msg := prefix + ": " + fmt.Sprintf(format, args...)
	if k.c.src != nil && k.c.src.defaultGates {
		msg += " (a shipped default gate: list your own gates to replace the defaults)"
	}
	k.errs = append(k.errs, &Error{File: k.file, Line: line, Msg: msg})
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtDur(d Duration) string { return FormatDuration(time.Duration(d)) }

func (k *checker) positive(path string, v int) {
	if v <= 0 {
		k.errf(path, "must be > 0, got %d", v)
	}
}

func (k *checker) positiveDuration(path string, d Duration) {
	if d <= 0 {
		k.errf(path, "must be > 0, got %s", fmtDur(d))
	}
}

// maxWorkers bounds nats.workers: more goroutines than that only contend.
const maxWorkers = 256

// Bounds of the nats keys: JetStream keeps at most 5 replicas; nats.go
// takes idle heartbeats of 500 ms to 30 s; pcgroups pins an instance for
// at least a second.
const (
	maxReplicas  = 5
	minAckWait   = time.Second
	minHeartbeat = 500 * time.Millisecond
	maxHeartbeat = 30 * time.Second
)

func (k *checker) nats() {
	n := &k.c.NATS
	if n.Workers < 0 || n.Workers > maxWorkers {
		k.errf("nats.workers", "must be between 0 (one per CPU) and %d, got %d", maxWorkers, n.Workers)
	}
	if n.URL != "" {
		k.natsURL(n.URL)
	}
	switch {
	case n.Replicas < 1 || n.Replicas > maxReplicas:
		k.errf("nats.replicas", "must be between 1 and %d (JetStream's limit), got %d", maxReplicas, n.Replicas)
	case n.Replicas > 1 && n.URL == "":
		k.errf("nats.replicas", "is %d, but nats.url is empty: the embedded NATS server is a single server and keeps one copy; set nats.url to a NATS cluster", n.Replicas)
	}
	if n.AckWait < Duration(minAckWait) {
		k.errf("nats.ack_wait", "must be at least %s, got %s", fmtDur(Duration(minAckWait)), fmtDur(n.AckWait))
	}
	if n.Heartbeat < Duration(minHeartbeat) || n.Heartbeat > Duration(maxHeartbeat) {
		k.errf("nats.heartbeat", "must be between %s and %s (nats.go's range), got %s", fmtDur(Duration(minHeartbeat)), fmtDur(Duration(maxHeartbeat)), fmtDur(n.Heartbeat))
	}
	if n.JetStream {
		if n.Stream == "" {
			k.errf("nats.stream", "is empty; JetStream mode needs a stream")
		}
		if n.Durable == "" {
			k.errf("nats.durable", "is empty; JetStream mode needs a durable consumer name")
		}
	}
	for _, f := range []struct{ path, v string }{{"nats.stream", n.Stream}, {"nats.durable", n.Durable}} {
		if f.v != "" && strings.ContainsFunc(f.v, func(r rune) bool {
			return unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune(".*>/\\", r)
		}) {
			k.errf(f.path, "%q is not a valid JetStream name (no white space, '.', '*', '>', '/' or '\\')", f.v)
		}
	}
	if n.Password != "" && n.User == "" {
		k.errf("nats.password", "is set without nats.user")
	}
	var ways []string
	for _, w := range []struct{ key, v string }{
		{"user", n.User}, {"token", n.Token}, {"creds_file", n.CredsFile}, {"nkey_seed_file", n.NKeySeedFile},
	} {
		if w.v != "" {
			ways = append(ways, w.key)
		}
	}
	if len(ways) > 1 {
		k.errf("nats."+ways[1], "set one way to authenticate, not several (%s)", strings.Join(ways, ", "))
	}
	switch {
	case n.TLS.CertFile != "" && n.TLS.KeyFile == "":
		k.errf("nats.tls.cert_file", "is set without nats.tls.key_file; a client certificate needs both")
	case n.TLS.KeyFile != "" && n.TLS.CertFile == "":
		k.errf("nats.tls.key_file", "is set without nats.tls.cert_file; a client certificate needs both")
	}
}

// natsURL checks a comma-separated list of server URLs without quoting
// them: they may hold credentials.
func (k *checker) natsURL(list string) {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		which := ""
		if len(parts) > 1 {
			which = fmt.Sprintf("server %d: ", i+1)
		}
		p = strings.TrimSpace(p)
		if p == "" {
			k.errf("nats.url", "%sis empty", which)
			continue
		}
		if !strings.Contains(p, "://") {
			p = "nats://" + p
		}
		u, err := url.Parse(p)
		switch {
		case err != nil:
			k.errf("nats.url", "%snot a valid URL", which)
		case !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme):
			k.errf("nats.url", "%sscheme %q is not nats, tls, ws or wss", which, u.Scheme)
		case u.Host == "":
			k.errf("nats.url", "%shas no host", which)
		}
	}
}

func (k *checker) subjects() {
	s := &k.c.Subjects
	inputs := []struct{ path, v string }{
		{"subjects.trace", s.Trace}, {"subjects.retrieval", s.Retrieval},
		{"subjects.answer", s.Answer}, {"subjects.judgement", s.Judgement},
	}
	outputs := []struct{ path, v, sample string }{
		{"subjects.alerts", s.Alerts, s.Alerts + ".<arm>"},
		{"subjects.verdicts", s.Verdicts, s.Verdicts + ".<arm>"},
		{"subjects.deadletter", s.Deadletter, s.Deadletter},
	}
	for _, in := range inputs {
		if why := subjectProblem(in.v, true); why != "" {
			k.errf(in.path, "%s", why)
			continue
		}
		for _, out := range outputs {
			if out.v != "" && subjectProblem(out.v, false) == "" && subjectMatches(in.v, out.sample) {
				k.errf(in.path, "%q also matches the output subject %q: the sidecar would read its own output", in.v, out.sample)
			}
		}
	}
	for _, out := range outputs {
		if why := subjectProblem(out.v, false); why != "" {
			k.errf(out.path, "%s", why)
		}
	}
}

// subjectProblem says what is wrong with NATS subject s, "" if nothing.
func subjectProblem(s string, wildcards bool) string {
	if s == "" {
		return "is empty"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return fmt.Sprintf("%q is not a valid NATS subject: it contains white space or control characters", s)
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return fmt.Sprintf("%q is not a valid NATS subject: it has an empty token (a leading, trailing or double dot)", s)
		case (t == "*" || t == ">") && !wildcards:
			return fmt.Sprintf("%q is not a valid subject to publish on: it has a wildcard", s)
		case t == ">" && i != len(tokens)-1:
			return fmt.Sprintf("%q is not a valid NATS subject: '>' may only be the last token", s)
		case t != "*" && t != ">" && strings.ContainsAny(t, "*>"):
			return fmt.Sprintf("%q is not a valid NATS subject: '*' and '>' must be whole tokens", s)
		}
	}
	return ""
}

// subjectMatches tells whether the subscription pattern matches subject.
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, t := range p {
		switch {
		case t == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case t != "*" && t != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

func (k *checker) gold() {
	g := &k.c.Gold
	if g.File == "" && g.KVBucket == "" {
		k.errf("gold", "no gold source: set gold.file or gold.kv_bucket")
	}
	k.bucket("gold.kv_bucket", g.KVBucket)
}

func (k *checker) bucket(path, name string) {
	if name != "" && !bucketRE.MatchString(name) {
		k.errf(path, "%q is not a valid KV bucket name (letters, digits, '_' and '-')", name)
	}
}

func (k *checker) http() {
	if why := hostPortProblem(k.c.HTTP.Listen); why != "" {
		k.errf("http.listen", "%q is not a host:port address: %s", k.c.HTTP.Listen, why)
	}
}

func hostPortProblem(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return "want host:port, like :9464 or 127.0.0.1:9464"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "the port must be a number from 0 to 65535"
	}
	return ""
}

func (k *checker) windows() {
	ws := k.c.Windows
	if len(ws) == 0 {
		k.errf("windows", "at least one window is needed")
	}
	first := map[Duration]int{}
	for i, w := range ws {
		p := fmt.Sprintf("windows[%d]", i)
		if w.Length <= 0 {
			k.errf(p+".length", "must be > 0, got %s", fmtDur(w.Length))
		}
		if w.Resolution <= 0 {
			k.errf(p+".resolution", "must be > 0, got %s", fmtDur(w.Resolution))
		}
		if w.Length <= 0 || w.Resolution <= 0 {
			continue
		}
		if w.Length%w.Resolution != 0 {
			k.errf(p, "length %s is not a whole multiple of resolution %s", fmtDur(w.Length), fmtDur(w.Resolution))
		} else if n := w.Length / w.Resolution; n > maxBuckets {
			k.errf(p, "length %s at resolution %s makes %d buckets; at most %d", fmtDur(w.Length), fmtDur(w.Resolution), n, maxBuckets)
		}
		if j, dup := first[w.Length]; dup {
			k.errf(p+".length", "%s is listed twice (also windows[%d])", fmtDur(w.Length), j)
		} else {
			first[w.Length] = i
		}
	}
	if k.c.Window.MaxLateness < 0 {
		k.errf("window.max_lateness", "must be >= 0, got %s", fmtDur(k.c.Window.MaxLateness))
	}
}

func (k *checker) scalars() {
	c := k.c
	k.positiveDuration("join.ttl", c.Join.TTL)
	k.positive("join.max_pending", c.Join.MaxPending)
	if c.Lambda.MinRuns < 1 || c.Lambda.MinRuns > window.MaxLambdaMinRuns {
		k.errf("lambda.min_runs", "must be between 1 and %d, got %d", window.MaxLambdaMinRuns, c.Lambda.MinRuns)
	}
	if len(c.K) == 0 {
		k.errf("k", "at least one k is needed")
	}
	seen := map[int]int{}
	for i, v := range c.K {
		p := fmt.Sprintf("k[%d]", i)
		switch j, dup := seen[v]; {
		case v <= 0:
			k.errf(p, "must be > 0, got %d", v)
		case dup:
			k.errf(p, "%d is listed twice (also k[%d])", v, j)
		case c.Limits.MaxTopK > 0 && v > c.Limits.MaxTopK:
			k.errf(p, "%d is more than limits.max_topk (%d)", v, c.Limits.MaxTopK)
		}
		if _, dup := seen[v]; !dup {
			seen[v] = i
		}
	}
	if c.CitationOffsetTolerance < 0 {
		k.errf("citation_offset_tolerance", "must be >= 0, got %d", c.CitationOffsetTolerance)
	}
	if !slices.Contains(logLevels, c.Log.Level) {
		k.errf("log.level", "%q is not one of %s", c.Log.Level, strings.Join(logLevels, ", "))
	}
	k.positive("limits.max_message_bytes", c.Limits.MaxMessageBytes)
	k.positive("limits.max_topk", c.Limits.MaxTopK)
	k.positive("limits.max_arms", c.Limits.MaxArms)
	k.positive("limits.max_content_types", c.Limits.MaxContentTypes)
}

func (k *checker) alerting() {
	a := &k.c.Alerting
	k.httpURL("alerting.alertmanager_url", a.AlertmanagerURL)
	k.httpURL("alerting.webhook_url", a.WebhookURL)
	k.positiveDuration("alerting.resend", a.Resend)
}

// httpURL checks an optional http(s) URL without quoting it: it may hold
// credentials.
func (k *checker) httpURL(path, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		k.errf(path, "not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		k.errf(path, "want an http:// or https:// URL")
	case u.Host == "":
		k.errf(path, "the URL has no host")
	}
}

func (k *checker) tracing() {
	t := &k.c.Tracing
	if !(t.SampleRatio >= 0 && t.SampleRatio <= 1) {
		k.errf("tracing.sample_ratio", "must be in [0, 1], got %s", fmtFloat(t.SampleRatio))
	}
	if t.Endpoint == "" {
		return
	}
	if strings.Contains(t.Endpoint, "://") {
		k.httpURL("tracing.endpoint", t.Endpoint)
	} else if hostPortProblem(t.Endpoint) != "" {
		k.errf("tracing.endpoint", "want an http(s) URL or host:port")
	}
}

func kindName(kind window.Kind) string {
	switch kind {
	case window.Proportion:
		return "proportion"
	case window.Mean:
		return "mean"
	case window.Distance:
		return "distance"
	case window.Quantile:
		return "quantile"
	case window.Kappa:
		return "kappa"
	}
	return "unknown"
}

// armProblem says what is wrong with an arm name, "" if nothing: arms are
// the last token of a NATS subject.
func armProblem(arm string) string {
	if arm == "" {
		return "is empty"
	}
	if strings.ContainsFunc(arm, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune(".*>", r)
	}) {
		return fmt.Sprintf("%q is not a valid arm name (a NATS subject token: no white space, '.', '*' or '>')", arm)
	}
	return ""
}

func (k *checker) gate(i int) {
	c := k.c
	g := &c.Gates[i]

	switch {
	case g.Name == "":
		k.gatef(i, "name", "name is empty")
	case !gateNameRE.MatchString(g.Name):
		k.gatef(i, "name", "name %q may only hold letters, digits, '_', '-', '.' and ':'", g.Name)
	default:
		for j := range i {
			if c.Gates[j].Name == g.Name {
				at := ""
				if c.Gates[j].Line > 0 {
					at = fmt.Sprintf(" at line %d", c.Gates[j].Line)
				}
				k.gatef(i, "name", "duplicate name (also gates[%d]%s)", j, at)
				break
			}
		}
	}

	kind, known := window.Kind(0), false
	if g.Metric == "" {
		k.gatef(i, "metric", "metric is empty")
	} else if kind, known = window.MetricKind(g.Metric, c.K); !known {
		k.gatef(i, "metric", "unknown metric %q%s", g.Metric, k.metricHint(g.Metric))
	}

	if !slices.Contains(gateOps, g.Op) {
		k.gatef(i, "op", "op %q is not one of %s", g.Op, strings.Join(gateOps, ", "))
	}

	if math.IsNaN(g.Threshold) || math.IsInf(g.Threshold, 0) {
		k.gatef(i, "threshold", "threshold must be a finite number")
	} else if known {
		k.threshold(i, kind)
	}

	switch length, err := time.ParseDuration(g.Window); {
	case g.Window == "":
		k.gatef(i, "window", "window is empty")
	case err != nil:
		k.gatef(i, "window", "window %q is not a duration", g.Window)
	case len(c.Windows) == 0:
		// reported once, at windows
	default:
		if _, _, ok := c.WindowNamed(g.Window); !ok {
			var names []string
			for _, w := range c.Windows {
				if n := w.Name(); w.Length > 0 && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			k.gatef(i, "window", "window %s is not a configured window (windows: %s)", FormatDuration(length), strings.Join(names, ", "))
		}
	}

	if g.MinSamples < 0 {
		k.gatef(i, "min_samples", "min_samples must be >= 0, got %d", g.MinSamples)
	}
	if g.For < 0 {
		k.gatef(i, "for", "for must be >= 0, got %s", fmtDur(g.For))
	}

	seen := map[string]int{}
	for j, arm := range g.Arms {
		field := fmt.Sprintf("arms[%d]", j)
		if why := armProblem(arm); why != "" {
			k.gatef(i, field, "arms[%d] %s", j, why)
		} else if first, dup := seen[arm]; dup {
			k.gatef(i, field, "arm %q is listed twice (arms[%d] and arms[%d])", arm, first, j)
		} else {
			seen[arm] = j
		}
	}
	if c.Limits.MaxArms > 0 && len(g.Arms) > c.Limits.MaxArms {
		k.gatef(i, "arms", "%d arms is more than limits.max_arms (%d)", len(g.Arms), c.Limits.MaxArms)
	}

	switch {
	case g.Severity == "":
		k.gatef(i, "severity", "severity is empty")
	case !severityRE.MatchString(g.Severity):
		k.gatef(i, "severity", "severity %q may only hold letters, digits, '_', '-' and '.'", g.Severity)
	}

	if g.Confidence != 0 {
		switch {
		case !(g.Confidence > 0 && g.Confidence < 1):
			k.gatef(i, "confidence", "confidence %s is not in (0, 1); leave it out (or 0) to judge the point value", fmtFloat(g.Confidence))
		case known && kind != window.Proportion:
			k.gatef(i, "confidence", "confidence applies to proportion metrics only; %q is a %s", g.Metric, kindName(kind))
		}
	}

	if check := gateKinds[g.Kind()].check; check != nil {
		check(k, i, kind, known)
	}
}

// threshold checks the threshold of gate i against the range of its metric,
// or of a difference of it for a relative kind of gate.
func (k *checker) threshold(i int, kind window.Kind) {
	g := &k.c.Gates[i]
	if why := thresholdProblem(g.Metric, kind, gateKinds[g.Kind()].relative, g.Threshold); why != "" {
		k.gatef(i, "threshold", "%s", why)
	}
}

// thresholdProblem says what is wrong with threshold t on metric of kind,
// "" if nothing; compared: t bounds a difference of two arms. Gates and
// absolute analysis checks share it.
func thresholdProblem(metric string, kind window.Kind, compared bool, t float64) string {
	lo, hi, what := 0.0, 1.0, kindName(kind)+" metric"
	switch {
	case compared && (kind == window.Kappa || kind == window.Distance):
		return "" // reported as unsupported
	case compared:
		lo, what = -1, "a difference of "+what
	case kind == window.Distance:
		if t < 0 {
			return fmt.Sprintf("threshold %s is negative; a distance metric is >= 0", fmtFloat(t))
		}
		return ""
	case kind == window.Kappa:
		lo = -1
	}
	if t < lo || t > hi {
		return fmt.Sprintf("threshold %s is out of range [%s, %s] for %s %q", fmtFloat(t), fmtFloat(lo), fmtFloat(hi), what, metric)
	}
	return ""
}

// metricHint explains an unknown metric: a per-k metric whose k is not
// configured, or the metric its name is a misspelling of.
func (k *checker) metricHint(metric string) string {
	if h := k.kHint(metric); h != "" {
		return h
	}
	return didYouMean(metric, window.MetricNames(k.c.K))
}

// kHint explains an unknown per-k metric whose k is not configured.
func (k *checker) kHint(metric string) string {
	for _, m := range window.Registry() {
		rest, ok := strings.CutPrefix(metric, m.Name)
		if !ok || m.Over != window.PerK {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && strconv.Itoa(n) == rest {
			ks := make([]string, len(k.c.K))
			for j, v := range k.c.K {
				ks[j] = strconv.Itoa(v)
			}
			return fmt.Sprintf(": %d is not in k [%s]", n, strings.Join(ks, ", "))
		}
	}
	return ""
}
