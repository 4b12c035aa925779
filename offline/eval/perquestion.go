package eval

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/shadoweval/shadoweval/window"
)

// Per question (`eval --per-question`, and the table's largest
// regressions): each ranking metric's mean over a question's ranked events
// in a file, trec_eval's `-q`. With a baseline, each question both files
// ranked also gets its candidate − baseline differences, and the lines go
// largest regression first.

// rankingSeries are the metrics listed per question: the ranking metrics
// (those whose denominator is window.CountRanked), in the order of
// window.MetricNames.
func rankingSeries(ks []int) []window.Series {
	var out []window.Series
	for _, s := range window.Expand(ks) {
		if s.Row.RankingMetric() {
			out = append(out, s)
		}
	}
	return out
}

// questionRanks are one file's sums of the ranking metrics per gold
// question.
type questionRanks struct {
	series []window.Series
	at     []func(o *window.Observation) float64 // each series' value of an observation
	n      []int64                               // ranked events per question
	sums   []float64                             // [q·len(series) + s]
}

func newQuestionRanks(ks []int, items int) *questionRanks {
	qr := &questionRanks{series: rankingSeries(ks), n: make([]int64, items)}
	qr.sums = make([]float64, items*len(qr.series))
	nk := len(ks)
	for _, s := range qr.series {
		if b, ok := s.Row.SumBlock(); ok {
			i := window.MeanIndex(b, max(s.KIndex(), 0), nk)
			qr.at = append(qr.at, func(o *window.Observation) float64 { return o.Means[i] })
			continue
		}
		bit := uint32(1) << s.KIndex()
		qr.at = append(qr.at, func(o *window.Observation) float64 {
			if o.HitAtK&bit != 0 {
				return 1
			}
			return 0
		})
	}
	return qr
}

func (qr *questionRanks) add(q int32, o *window.Observation) {
	if !o.Counters.Has(window.CountRanked) {
		return
	}
	qr.n[q]++
	row := qr.sums[int(q)*len(qr.series):]
	for s, at := range qr.at {
		row[s] += at(o)
	}
}

// mean is question q's mean of series s.
func (qr *questionRanks) mean(q, s int) float64 {
	return qr.sums[q*len(qr.series)+s] / float64(qr.n[q])
}

// QuestionLine is one question's ranking metrics in one file: a line of
// `eval --per-question`.
type QuestionLine struct {
	QID string
	Arm string // CandidateArm or BaselineArm
	// Runs are the question's ranked events in the file (its gold set
	// not empty), over which each metric is averaged.
	Runs    int64
	Metrics []Metric
	// With a baseline, on a candidate line of a question both files
	// ranked: candidate − baseline per metric, and the largest drop.
	Delta []Metric
	// Change is the most negative difference of Delta (0 when none
	// dropped), on Worst; the lines are sorted by it, the largest
	// regression first.
	Change float64
	Worst  string
}

// perQuestion lists the questions each file ranked, a line per question
// and file: with a baseline, the candidate's lines of questions both
// ranked by Change, each followed by the baseline's line of its question,
// then the questions one file ranked, by qid.
func (r *runner) perQuestion() []QuestionLine {
	if len(r.files) == 0 || r.files[0].ranks == nil {
		return nil
	}
	line := func(f *file, q int) QuestionLine {
		qr := f.ranks
		l := QuestionLine{QID: r.gold.items[q].QID, Arm: f.arm, Runs: qr.n[q]}
		for s, se := range qr.series {
			l.Metrics = append(l.Metrics, Metric{Name: se.Name, Value: qr.mean(q, s), Valid: true, Samples: qr.n[q]})
		}
		return l
	}
	var paired, single []QuestionLine
	for q := range r.gold.items {
		c := r.files[0].ranks.n[q] > 0
		b := len(r.files) > 1 && r.files[1].ranks.n[q] > 0
		switch {
		case c && b:
			cl, bl := line(r.files[0], q), line(r.files[1], q)
			for i, m := range cl.Metrics {
				d := m.Value - bl.Metrics[i].Value
				cl.Delta = append(cl.Delta, Metric{Name: m.Name, Value: d, Valid: true})
				if d < cl.Change {
					cl.Change, cl.Worst = d, m.Name
				}
			}
			paired = append(paired, cl, bl)
		case c:
			single = append(single, line(r.files[0], q))
		case b:
			single = append(single, line(r.files[1], q))
		}
	}
	// Pairs move together: sort the candidate lines, then put each
	// baseline line back after its candidate's.
	type pair struct{ c, b QuestionLine }
	ps := make([]pair, 0, len(paired)/2)
	for i := 0; i < len(paired); i += 2 {
		ps = append(ps, pair{paired[i], paired[i+1]})
	}
	slices.SortStableFunc(ps, func(x, y pair) int {
		return cmp.Or(cmp.Compare(x.c.Change, y.c.Change), cmp.Compare(x.c.QID, y.c.QID))
	})
	out := make([]QuestionLine, 0, len(paired)+len(single))
	for _, p := range ps {
		out = append(out, p.c, p.b)
	}
	slices.SortStableFunc(single, func(x, y QuestionLine) int { return cmp.Compare(x.QID, y.QID) })
	return append(out, single...)
}

// PerQuestionJSONL writes r.PerQuestion, a JSON line each: qid, arm, runs,
// the metrics by name, and with a baseline delta (by name), change and
// worst.
func (r *Report) PerQuestionJSONL() ([]byte, error) {
	var b bytes.Buffer
	for _, l := range r.PerQuestion {
		o := object{{"qid", l.QID}, {"arm", l.Arm}, {"runs", l.Runs}, {"metrics", metricValues(l.Metrics)}}
		if l.Delta != nil {
			var worst any
			if l.Worst != "" {
				worst = l.Worst
			}
			o = append(o, member{"delta", metricValues(l.Delta)}, member{"change", l.Change}, member{"worst", worst})
		}
		j, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

func metricValues(ms []Metric) object {
	o := make(object, 0, len(ms))
	for _, m := range ms {
		o = append(o, member{m.Name, value(m)})
	}
	return o
}

// Regressions are the candidate lines of questions whose ranking dropped
// (Change < 0), largest first, at most n.
func (r *Report) Regressions(n int) []QuestionLine {
	var out []QuestionLine
	for _, l := range r.PerQuestion {
		if len(out) == n {
			break
		}
		if l.Delta != nil && l.Change < 0 {
			out = append(out, l)
		}
	}
	return out
}
