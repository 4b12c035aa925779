package analysissim

import (
	"math"
	"slices"

	"github.com/shadoweval/shadoweval/window"
)

// Kayenta and Flagger read metrics as Prometheus would serve them: one
// value per arm per minute. series keeps them, computed with the formulas
// of SPEC §4 (window.computeMetrics) over each minute's events.
//
// λ groups are cut as window.Cumulative cuts them (each qid's runs in
// arrival order, groups of minRuns) and counted in the minute they
// complete: a canary qid gets a run every ~75 s, so groups of one minute's
// runs would hardly ever complete.

// seriesMetrics are the metrics series computes, in this order.
var seriesMetrics = []string{
	"precision", "chr", "over_refusal", "under_refusal", "recall_at_5", "coverage",
	"citation_accuracy", "lambda_convergence", "delta_s_median", "delta_s_p90", "agreement", "kappa",
}

func seriesIndex(metric string) int { return slices.Index(seriesMetrics, metric) }

// bin is one arm's events of one minute.
type bin struct {
	ship, precNum, chrNum, shipUnans, unans, refAnsw, answ int64
	retA, recall5, covElig, covered, accElig, accurate     int64
	lamComplete, lamConv                                   int64
	ds                                                     []float64
	pairs                                                  [4][4]int64
}

type lamGroup struct{ runs, notArrow int }

// series is one arm's per-minute values.
type series struct {
	minRuns int
	cur     bin
	open    map[uint32]*lamGroup
	// values[m][i] is seriesMetrics[i] in minute m; NaN without data.
	values [][]float64
}

func newSeries(minRuns int) *series {
	return &series{minRuns: minRuns, open: map[uint32]*lamGroup{}}
}

func (s *series) observe(o *window.Observation) {
	b := &s.cur
	if o.Answerable {
		b.answ++
	} else {
		b.unans++
	}
	if o.Shipped {
		b.ship++
		if !o.Answerable {
			b.shipUnans++
		} else if o.Hit {
			b.chrNum++
			if o.Contained {
				b.precNum++
			}
		}
		if o.HasDeltaSCited {
			b.ds = append(b.ds, o.DeltaSCited)
		}
	} else if o.Answerable {
		b.refAnsw++
	}
	if o.Answerable {
		b.retA++
		if o.RecallStrict&(1<<2) != 0 {
			b.recall5++
		}
	}
	if o.CoverageEligible {
		b.covElig++
		if o.Covered {
			b.covered++
		}
	}
	if o.CitationAccEligible {
		b.accElig++
		if o.CitationAccurate {
			b.accurate++
		}
	}
	// Every generated run carries a λ state, so a group is convergent when
	// all its runs are → (lamSum.eval's rule for fully stated groups).
	g := s.open[o.QIDKey]
	if g == nil {
		g = &lamGroup{}
		s.open[o.QIDKey] = g
	}
	g.runs++
	if o.Lambda.State != window.LambdaConvergent {
		g.notArrow++
	}
	if g.runs >= s.minRuns {
		b.lamComplete++
		if g.notArrow == 0 {
			b.lamConv++
		}
		*g = lamGroup{}
	}
}

func (s *series) pair(p *window.PairObservation) {
	si, ai := slices.Index(window.JudgementLabels, p.Scholar), slices.Index(window.JudgementLabels, p.Auditor)
	s.cur.pairs[si][ai]++
}

// close ends the current minute.
func (s *series) close() {
	b := &s.cur
	nan := math.NaN()
	prop := func(num, den int64, empty float64) float64 {
		if den == 0 {
			return empty
		}
		return float64(num) / float64(den)
	}
	v := make([]float64, len(seriesMetrics))
	v[0] = prop(b.precNum, b.ship, 1)
	v[1] = prop(b.chrNum, b.ship, 1)
	v[2] = prop(b.refAnsw, b.answ, 0)
	v[3] = prop(b.shipUnans, b.unans, 0)
	v[4] = prop(b.recall5, b.retA, 0)
	v[5] = prop(b.covered, b.covElig, nan)
	v[6] = prop(b.accurate, b.accElig, nan)
	v[7] = prop(b.lamConv, b.lamComplete, nan)
	v[8], v[9] = nan, nan
	if len(b.ds) > 0 {
		slices.Sort(b.ds)
		v[8], v[9] = interp(b.ds, 0.5), interp(b.ds, 0.9)
	}
	v[10], v[11] = nan, nan
	if ag := window.Agreement(b.pairs); ag.N > 0 {
		v[10], v[11] = ag.PercentAgreement, ag.Kappa
	}
	s.values = append(s.values, v)
	ds := b.ds[:0]
	*b = bin{ds: ds}
}

// interp is the q-quantile of sorted xs, linearly interpolated as the
// windows' delta_s quantiles are.
func interp(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := math.Floor(pos)
	i := int(lo)
	if i+1 >= len(xs) {
		return xs[i]
	}
	return xs[i] + (xs[i+1]-xs[i])*(pos-lo)
}

// column is metric i's values over the first n minutes, NaNs removed (as
// Kayenta's nanStrategy "remove" does).
func (s *series) column(i, n int, out []float64) []float64 {
	out = out[:0]
	for _, v := range s.values[:n] {
		if !math.IsNaN(v[i]) {
			out = append(out, v[i])
		}
	}
	return out
}
