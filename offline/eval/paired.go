package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// With a baseline, the two files are one look at a paired design (SPEC
// §5.3): both answered the same gold questions, so each check compares the
// files question by question. A file's counts are kept per question; a
// check's estimate is the difference of the two files' values over the
// questions both answered, and its interval a fixed-sample one over those
// questions at level 1 − α/m: a t-interval of the linearised difference
// for proportions and λ convergence (each question's runs pooled, so the
// estimate is the metric over them), a normal interval with the bootstrap's
// standard error over questions for the ΔS quantiles. Questions in one
// file only are counted and left out.

// bootstrapRounds is how many resamples of the questions estimate a ΔS
// quantile difference's standard error; the seed makes the report
// reproducible.
const (
	bootstrapRounds = 2000
	bootstrapSeed   = 0x5eed
)

// questionCounts are one file's counts per gold question.
type questionCounts struct {
	series int
	cells  *window.EventCells
	buf    []uint8
	// counts holds per question and paired series its numerator and
	// denominator: [q·2·series + 2·s], [… + 1].
	counts []int32
	// lambda holds per question its complete, convergent and flipping
	// λ groups (runs in blocks of lambda.min_runs, as an analysis cuts
	// them).
	lambda []int32
	blocks *window.LambdaBlocks
	// cited are the shipped runs' cited ΔS values with their question.
	cited  []float64
	citedQ []int32
	scored []int32 // scored events per question
}

func newQuestionCounts(ks []int, items, minRuns int) *questionCounts {
	s := len(window.PairedSeries(ks))
	return &questionCounts{series: s, cells: window.NewEventCells(ks), buf: make([]uint8, s),
		counts: make([]int32, items*2*s), lambda: make([]int32, items*3), blocks: window.NewLambdaBlocks(minRuns, items),
		scored: make([]int32, items)}
}

func (qc *questionCounts) add(q int32, o *window.Observation) {
	qc.scored[q]++
	qc.cells.Of(o, qc.buf)
	row := qc.counts[int(q)*2*qc.series:]
	for s, c := range qc.buf {
		if c > 0 {
			row[2*s+1]++
			if c == 2 {
				row[2*s]++
			}
		}
	}
	if complete, conv, flips := qc.blocks.Add(int(q), o); complete {
		l := qc.lambda[int(q)*3:]
		l[0]++
		if conv {
			l[1]++
		}
		if flips {
			l[2]++
		}
	}
	if o.HasDeltaSCited && o.HasAnswer && o.Shipped { // as the windows count them
		qc.cited = append(qc.cited, o.DeltaSCited)
		qc.citedQ = append(qc.citedQ, q)
	}
}

// pairedSample judges the canary checks over the questions both files
// answered (analysis.FixedSample).
type pairedSample struct {
	ks       []int
	c, b     *questionCounts
	both     []int32 // the questions both files scored
	candM    map[string]window.Value
	baseM    map[string]window.Value
	seriesOf map[string]int
}

// Questions counts the gold questions by which files scored them.
type Questions struct {
	Paired        int `json:"paired"`
	CandidateOnly int `json:"candidate_only"`
	BaselineOnly  int `json:"baseline_only"`
}

func newPairedSample(ks []int, c, b *questionCounts, candM, baseM map[string]window.Value) (*pairedSample, Questions) {
	ps := &pairedSample{ks: ks, c: c, b: b, candM: candM, baseM: baseM, seriesOf: map[string]int{}}
	for i, s := range window.PairedSeries(ks) {
		ps.seriesOf[s.Name] = i
	}
	var qs Questions
	for q := range c.scored {
		switch sc, sb := c.scored[q] > 0, b.scored[q] > 0; {
		case sc && sb:
			ps.both = append(ps.both, int32(q))
			qs.Paired++
		case sc:
			qs.CandidateOnly++
		case sb:
			qs.BaselineOnly++
		}
	}
	return ps, qs
}

func (ps *pairedSample) Samples(metric string) analysis.Samples {
	return analysis.Samples{Arm: ps.candM[metric].Samples, Baseline: ps.baseM[metric].Samples}
}

func (ps *pairedSample) Interval(c config.AnalysisCheck, lv confseq.Levels, r *analysis.CheckResult) string {
	s, ok := window.Lookup(c.Metric)
	if !ok {
		return "unknown metric " + c.Metric
	}
	if c.Absolute() {
		return "eval --baseline judges comparisons only"
	}
	nq := len(ps.both)
	nc, dc, nb, db := make([]float64, nq), make([]float64, nq), make([]float64, nq), make([]float64, nq)
	switch i, perEvent := ps.seriesOf[s.Name]; {
	case s.Kind == window.Quantile:
		return ps.quantile(s, lv, r)
	case perEvent:
		for k, q := range ps.both {
			cr, br := ps.c.counts[int(q)*2*ps.c.series+2*i:], ps.b.counts[int(q)*2*ps.b.series+2*i:]
			nc[k], dc[k], nb[k], db[k] = float64(cr[0]), float64(cr[1]), float64(br[0]), float64(br[1])
		}
	case window.Pairable(s) && s.Row.Unit() == window.LambdaGroups:
		num := 1 // convergent
		if s.LowerIsBetter {
			num = 2 // flips
		}
		for k, q := range ps.both {
			cl, bl := ps.c.lambda[int(q)*3:], ps.b.lambda[int(q)*3:]
			nc[k], dc[k], nb[k], db[k] = float64(cl[num]), float64(cl[0]), float64(bl[num]), float64(bl[0])
		}
	default:
		return "eval --baseline pairs per-event proportions, λ groups and ΔS quantiles by question; " + c.Metric + " has no paired interval"
	}
	est, iv, clusters, ok := confseq.PairedRatioDiff(lv, nc, dc, nb, db)
	r.Pairing, r.Pairs = analysis.PairedByQID, int64(clusters)
	if !ok {
		return fmt.Sprintf("only %d of the questions both files answered count in %s; a paired interval needs two", clusters, c.Metric)
	}
	r.Estimate = &est
	r.Interval = &[2]float64{max(-1, iv.Lo), min(1, iv.Hi)}
	return ""
}

// quantile compares the files' cited-ΔS quantile over the questions both
// answered: the difference of the exact quantiles, with a normal interval
// whose standard error is the bootstrap's over questions.
func (ps *pairedSample) quantile(s window.Series, lv confseq.Levels, r *analysis.CheckResult) string {
	p := quantileProbability(s.Name)
	weights := make([]int32, len(ps.c.scored))
	for _, q := range ps.both {
		weights[q] = 1
	}
	cv, bv := sortedByQuestion(ps.c, weights), sortedByQuestion(ps.b, weights)
	if len(cv.vals) == 0 || len(bv.vals) == 0 {
		return "no cited ΔS in the questions both files answered"
	}
	est := cv.quantile(weights, p) - bv.quantile(weights, p)
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(ps.both))))
	var sum, sumSq float64
	rounds := 0
	for range bootstrapRounds {
		clear(weights)
		for range ps.both {
			weights[ps.both[rng.IntN(len(ps.both))]]++
		}
		qc, qb := cv.quantile(weights, p), bv.quantile(weights, p)
		if math.IsNaN(qc) || math.IsNaN(qb) {
			continue
		}
		d := qc - qb
		sum += d
		sumSq += d * d
		rounds++
	}
	if rounds < 2 {
		return "too few questions with a cited ΔS to resample"
	}
	m := sum / float64(rounds)
	se := math.Sqrt(max(0, sumSq/float64(rounds)-m*m) * float64(rounds) / float64(rounds-1))
	r.Pairing, r.Pairs = analysis.PairedByQID, int64(len(ps.both))
	r.Estimate = &est
	r.Interval = &[2]float64{est - confseq.ZQuantile(1-lv.Lo)*se, est + confseq.ZQuantile(1-lv.Hi)*se}
	return ""
}

func quantileProbability(name string) float64 {
	q, _ := quantileOf(name)
	return q
}

// citedValues are a file's cited ΔS values of the questions with a
// weight, sorted, each with its question.
type citedValues struct {
	vals []float64
	qs   []int32
}

func sortedByQuestion(qc *questionCounts, weights []int32) citedValues {
	idx := make([]int, 0, len(qc.cited))
	for i, q := range qc.citedQ {
		if weights[q] > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case qc.cited[a] < qc.cited[b]:
			return -1
		case qc.cited[a] > qc.cited[b]:
			return 1
		}
		return 0
	})
	cv := citedValues{vals: make([]float64, len(idx)), qs: make([]int32, len(idx))}
	for k, i := range idx {
		cv.vals[k], cv.qs[k] = qc.cited[i], qc.citedQ[i]
	}
	return cv
}

// quantile is the p-quantile, linearly interpolated as numpy's default
// is, of the multiset in which each value appears as often as its
// question's weight; NaN when it is empty.
func (cv citedValues) quantile(weights []int32, p float64) float64 {
	var n int64
	for _, q := range cv.qs {
		n += int64(weights[q])
	}
	if n == 0 {
		return math.NaN()
	}
	pos := p * float64(n-1)
	lo := int64(math.Floor(pos))
	frac := pos - float64(lo)
	var seen int64
	var at float64
	found := false
	for k, q := range cv.qs {
		w := int64(weights[q])
		if w == 0 {
			continue
		}
		if !found && seen+w > lo {
			at, found = cv.vals[k], true
			if frac == 0 || seen+w > lo+1 {
				return at
			}
		} else if found {
			return at + (cv.vals[k]-at)*frac
		}
		seen += w
	}
	return at
}
