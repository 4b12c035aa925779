package analysissim

import (
	"math"
	"slices"

	"github.com/shadoweval/shadoweval/window"
)

// Kayenta and Flagger read metrics as Prometheus would serve them: one
// value per arm per minute. series keeps them, counted as the windows
// count them: the per-event proportions by window.EventCounts and their
// registry rows, the cited ΔS quantiles at their rows' q (over the exact
// values, interpolated as the windows interpolate), agreement and κ by
// window.Agreement.
//
// λ groups are cut as window.Cumulative cuts them (each qid's runs in
// arrival order, groups of minRuns) and counted in the minute they
// complete: a canary qid gets a run every ~75 s, so groups of one minute's
// runs would hardly ever complete.

// seriesMetrics are the metrics series computes, in this order: those the
// Kayenta and Flagger configurations of the simulations read.
var seriesMetrics = []string{
	"precision", "chr", "over_refusal", "under_refusal", "recall_at_5", "coverage",
	"citation_accuracy", "lambda_convergence", "delta_s_median", "delta_s_p90", "agreement", "kappa",
}

func seriesIndex(metric string) int { return slices.Index(seriesMetrics, metric) }

// bin is one arm's events of one minute.
type bin struct {
	counts               *window.EventCounts
	lamComplete, lamConv int64
	ds                   []float64
	pairs                [4][4]int64
}

type lamGroup struct{ runs, notArrow int }

// series is one arm's per-minute values.
type series struct {
	ks      []int
	minRuns int
	cur     bin
	open    map[uint32]*lamGroup
	// values[m][i] is seriesMetrics[i] in minute m; NaN without data.
	values [][]float64
}

func newSeries(ks []int, minRuns int) *series {
	return &series{ks: ks, minRuns: minRuns, cur: bin{counts: window.NewEventCounts(ks)}, open: map[uint32]*lamGroup{}}
}

func (s *series) observe(o *window.Observation) {
	b := &s.cur
	b.counts.Add(o)
	if o.HasAnswer && o.Shipped && o.HasDeltaSCited {
		b.ds = append(b.ds, o.DeltaSCited)
	}
	if !o.HasAnswer && o.Lambda.State == window.LambdaNone {
		return // no λ run, as the windows count runs
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
	v := make([]float64, len(seriesMetrics))
	for i := range v {
		v[i] = nan
	}
	set := func(name string, val window.Value) {
		if i := seriesIndex(name); i >= 0 && val.Valid {
			v[i] = val.Value
		}
	}
	for p := range b.counts.Proportions() {
		set(p.Name, p.Value())
	}
	if b.lamComplete > 0 {
		set("lambda_convergence", window.Value{Value: float64(b.lamConv) / float64(b.lamComplete), Valid: true})
	}
	if len(b.ds) > 0 {
		slices.Sort(b.ds)
		for _, name := range seriesMetrics {
			if m, ok := window.Lookup(name); ok && m.Row.Sketch() == window.CitedDeltaS {
				set(name, window.Value{Value: interp(b.ds, m.Row.Q()), Valid: true})
			}
		}
	}
	if ag := window.Agreement(b.pairs); ag.N > 0 {
		set("agreement", window.Value{Value: ag.PercentAgreement, Valid: true})
		set("kappa", window.Value{Value: ag.Kappa, Valid: true})
	}
	s.values = append(s.values, v)
	*b = bin{counts: window.NewEventCounts(s.ks), ds: b.ds[:0]}
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
