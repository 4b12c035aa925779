package eval

import (
	"bytes"
	"encoding/json"
	"github.com/shadoweval/shadoweval/config"
	"slices"
	"strconv"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/window"
)

// Report is the result of an evaluation.
type Report struct {
	Gold      string
	GoldItems int
	Ks        []int
	Quantiles string // QuantilesExact or QuantilesSketch
	Candidate FileReport
	Baseline  *FileReport     // nil without a baseline
	Analysis  *AnalysisReport // nil without a baseline
	// PerQuestion are the questions' ranking metrics per file
	// (Options.PerQuestion, or a baseline), in the order of perQuestion.
	PerQuestion []QuestionLine
}

// FileReport is what one trace file gave.
type FileReport struct {
	File    string
	Events  Events
	Overall Section
	Types   []Section // by type name
	// QIDs is the number of gold qids with at least one scored event.
	QIDs int
}

// Events counts the lines of a file by what became of them, as the
// windows API counts outcomes: duplicates (a repeated event_id) and
// unlabeled events (a qid not in the gold file) are not scored.
type Events struct {
	Lines     int64 `json:"lines"`
	Scored    int64 `json:"scored"`
	Unlabeled int64 `json:"unlabeled"`
	Duplicate int64 `json:"duplicate"`
	// WithTS counts the lines that carried a ts.
	WithTS int64 `json:"with_ts"`
}

// Section is every metric over all of a file's events (Type "") or over
// those of one content type.
type Section struct {
	Type    string
	Scored  int64
	Metrics []Metric // in the order of window.MetricNames
	// BadQIDs are the qids with coverage 0 (eligible runs, none covered)
	// or a cited ΔS above BadDeltaS, sorted.
	BadQIDs []string
}

// Metric is one metric of a section; Valid false: no value ("—").
type Metric struct {
	Name    string
	Value   float64
	Valid   bool
	Samples int64
}

// Metric finds a metric by name.
func (s *Section) Metric(name string) (Metric, bool) {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// TypeSection finds the section of a content type.
func (f *FileReport) TypeSection(typ string) (*Section, bool) {
	for i := range f.Types {
		if f.Types[i].Type == typ {
			return &f.Types[i], true
		}
	}
	return nil, false
}

// AnalysisReport is the canary analysis of the candidate against the
// baseline.
type AnalysisReport struct {
	Verdict  analysis.Verdict `json:"verdict"`
	Reason   string           `json:"reason,omitempty"`
	CheckSet string           `json:"check_set"`
	Alpha    float64          `json:"alpha"`
	// Events are the scored events each arm gave the analysis.
	Events analysis.Samples `json:"events"`
	// Questions counts the gold questions by the files that scored them:
	// the checks compare the files over those both scored.
	Questions Questions              `json:"questions"`
	Checks    []analysis.CheckResult `json:"checks"`
}

// Verdict is the analysis verdict, "" without a baseline.
func (r *Report) Verdict() analysis.Verdict {
	if r.Analysis == nil {
		return ""
	}
	return r.Analysis.Verdict
}

// report builds the Report once every file has been read.
func (r *runner) report() *Report {
	rep := &Report{Gold: r.opt.Gold, GoldItems: len(r.gold.items), Ks: slices.Clone(r.ks), Quantiles: QuantilesSketch}
	if r.exact {
		rep.Quantiles = QuantilesExact
	}
	series := window.Expand(r.ks)
	var scratch []float64
	for i, f := range r.files {
		fr := FileReport{File: f.path, Events: Events{Lines: f.events, Scored: f.scored, Unlabeled: f.unlabeled, Duplicate: f.duplicate, WithTS: f.withTS}}
		for _, fl := range f.qids {
			if fl&qScored != 0 {
				fr.QIDs++
			}
		}
		bad := r.badQIDs(f)
		fr.Overall, scratch = r.section(f, series, "", -1, scratch)
		fr.Overall.Scored = f.scored
		fr.Overall.BadQIDs = bad[""]
		for _, typ := range r.win.Types(f.arm) {
			ti, ok := f.types.Index[typ]
			if !ok {
				continue
			}
			var s Section
			s, scratch = r.section(f, series, typ, ti, scratch)
			s.Scored = f.typeScored[ti]
			s.BadQIDs = bad[typ]
			fr.Types = append(fr.Types, s)
		}
		if i == 0 {
			rep.Candidate = fr
		} else {
			rep.Baseline = &fr
		}
	}
	rep.PerQuestion = r.perQuestion()
	if rep.Baseline != nil {
		c, b := r.files[0], r.files[1]
		candM, baseM := r.metrics(c), r.metrics(b)
		ps, qs := newPairedSample(r.ks, c.questions, b.questions, candM, baseM)
		checks, v, reason := analysis.JudgeFixed(r.checks, r.alpha, ps)
		rep.Analysis = &AnalysisReport{Verdict: v, Reason: reason, CheckSet: config.CanaryCheckSet, Alpha: r.alpha,
			Events: analysis.Samples{Arm: c.scored, Baseline: b.scored}, Questions: qs, Checks: checks}
	}
	return rep
}

// metrics are every metric over all of f's events, λ groups cut into
// blocks of lambda.min_runs runs as the paired comparison counts them.
func (r *runner) metrics(f *file) map[string]window.Value {
	snap, ok := r.win.Snapshot(f.arm, windowName, "", windowTime)
	m := snap.Metrics
	if !ok {
		m = map[string]window.Value{}
	}
	var complete int64
	for q := 0; q < len(f.questions.lambda); q += 3 {
		complete += int64(f.questions.lambda[q])
	}
	for _, name := range []string{"lambda_convergence", "lambda_flip_rate"} {
		v := m[name]
		v.Samples = complete
		m[name] = v
	}
	return m
}

// section computes every metric of f's arm, over one content type (ti its
// index in f) or all of them (typ "", ti -1). The windows give every
// metric; exact quantiles replace their sketch estimates.
func (r *runner) section(f *file, series []window.Series, typ string, ti int, scratch []float64) (Section, []float64) {
	snap, ok := r.win.Snapshot(f.arm, windowName, typ, windowTime)
	values := snap.Metrics
	if !ok {
		// Nothing scored: the registry's values of an empty window
		// (precision and chr are 1 by the reference's convention).
		values = window.NewCumulative(r.ks, r.cfg.Lambda.MinRuns).Metrics()
	}
	s := Section{Type: typ, Metrics: make([]Metric, 0, len(series))}
	var gathered window.Sketch // the sketch whose values scratch holds
	for _, se := range series {
		v := values[se.Name]
		m := Metric{Name: se.Name, Value: v.Value, Valid: v.Valid, Samples: v.Samples}
		if r.exact && se.Kind == window.Quantile {
			if q, ok := quantileOf(se.Name); ok {
				// Gathered once for the quantiles of a sketch, which
				// follow each other; selection reorders but keeps them.
				if sk := se.Row.Sketch(); sk != gathered {
					scratch, gathered = f.gather(sk, ti, scratch[:0]), sk
				}
				m = Metric{Name: se.Name, Samples: int64(len(scratch))}
				if len(scratch) > 0 {
					m.Value, m.Valid = exactQuantile(scratch, q), true
				}
			}
		}
		s.Metrics = append(s.Metrics, m)
	}
	return s, scratch
}

// gather appends to dst the exact ΔS values of sketch sk in f, of type
// index ti or of every type (ti -1).
func (f *file) gather(sk window.Sketch, ti int, dst []float64) []float64 {
	byType := f.cited
	if sk == window.RetrievedDeltaS {
		byType = f.ret
	}
	if ti >= 0 {
		byType = byType[ti : ti+1]
	}
	n := 0
	for i := range byType {
		n += byType[i].n
	}
	dst = slices.Grow(dst, n)
	for i := range byType {
		dst = byType[i].appendTo(dst)
	}
	return dst
}

// badQIDs lists f's bad qids, sorted, overall ("") and by content type.
func (r *runner) badQIDs(f *file) map[string][]string {
	bad := map[string][]string{}
	for i, fl := range f.qids {
		if fl&qHighDS == 0 && (fl&qEligible == 0 || fl&qCovered != 0) {
			continue
		}
		it := r.gold.items[i]
		bad[""] = append(bad[""], it.QID)
		typ := f.foldedType(it.Type)
		bad[typ] = append(bad[typ], it.QID)
	}
	for _, l := range bad {
		slices.Sort(l)
	}
	return bad
}

// ---- JSON ----

// member and object write a JSON object in a chosen key order: the seed's
// compact keys first, then the metrics in the registry's order.
type member struct {
	key string
	val any
}

type object []member

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping (λ states such as <>
// stay readable).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

func value(m Metric) any {
	if !m.Valid {
		return nil
	}
	return m.Value
}

// compactKeys are the seed 001 report's keys and the metrics they stand
// for: P@k and R@k for each k, then coverage, citation accuracy and the
// cited ΔS median and p90.
func compactKeys(ks []int) []member {
	var keys []member
	for _, k := range ks {
		s := strconv.Itoa(k)
		keys = append(keys, member{"P@" + s, "mean_precision_at_" + s}, member{"R@" + s, "mean_recall_at_" + s})
	}
	return append(keys,
		member{"coverage", "coverage"},
		member{"citation_accuracy", "citation_accuracy"},
		member{"ΔS_med", "delta_s_median"},
		member{"ΔS_p90", "delta_s_p90"})
}

// compactAlias is the seed 001 key of a metric ("P@5" for
// mean_precision_at_5), "" when it has none.
func compactAlias(metric string, ks []int) string {
	for _, m := range compactKeys(ks) {
		if m.val == metric && m.key != metric {
			return m.key
		}
	}
	return ""
}

func compact(s *Section, ks []int) object {
	var o object
	for _, k := range compactKeys(ks) {
		m, _ := s.Metric(k.val.(string))
		o = append(o, member{k.key, value(m)})
	}
	return append(o, member{"bad_qids", nonNil(s.BadQIDs)})
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func metricsObject(s *Section) object {
	o := make(object, 0, len(s.Metrics))
	for _, m := range s.Metrics {
		o = append(o, member{m.Name, object{{"value", value(m)}, {"samples", m.Samples}}})
	}
	return o
}

// fileObject is a file's part of the JSON report: the seed 001 compact
// keys, overall and by type, then every metric with its sample count.
func (r *Report) fileObject(f *FileReport) object {
	o := compact(&f.Overall, r.Ks)
	byType := object{}
	types := object{}
	for i := range f.Types {
		s := &f.Types[i]
		byType = append(byType, member{s.Type, compact(s, r.Ks)})
		types = append(types, member{s.Type, object{
			{"events", object{{"scored", s.Scored}}},
			{"metrics", metricsObject(s)},
		}})
	}
	return append(o,
		member{"by_type", byType},
		member{"trace", f.File},
		member{"events", f.Events},
		member{"qids", f.QIDs},
		member{"metrics", metricsObject(&f.Overall)},
		member{"types", types},
	)
}

// delta is candidate − baseline of each metric of two sections, null
// where either has no value.
func delta(c, b *Section) object {
	o := make(object, 0, len(c.Metrics))
	for _, m := range c.Metrics {
		bm, _ := b.Metric(m.Name)
		var d any
		if m.Valid && bm.Valid {
			d = m.Value - bm.Value
		}
		o = append(o, member{m.Name, d})
	}
	return o
}

// JSON renders the report: the candidate's seed 001 compact keys and
// every metric, then with a baseline its report, the deltas, the canary
// analysis and the verdict.
func (r *Report) JSON() ([]byte, error) {
	o := r.fileObject(&r.Candidate)
	o = append(o,
		member{"gold", r.Gold},
		member{"gold_items", r.GoldItems},
		member{"k", r.Ks},
		member{"quantiles", r.Quantiles},
	)
	if r.Baseline != nil {
		o = append(o, member{"baseline", r.fileObject(r.Baseline)})
		o = append(o, member{"delta", delta(&r.Candidate.Overall, &r.Baseline.Overall)})
		byType := object{}
		for i := range r.Candidate.Types {
			c := &r.Candidate.Types[i]
			if b, ok := r.Baseline.TypeSection(c.Type); ok {
				byType = append(byType, member{c.Type, delta(c, b)})
			}
		}
		o = append(o, member{"delta_by_type", byType})
		o = append(o, member{"analysis", r.Analysis}, member{"verdict", r.Analysis.Verdict})
	}
	raw, err := marshal(o)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
