package window

import (
	"math"
	"slices"
	"time"
)

// Repeated runs of one question come together (a visit: its paraphrases
// × seeds asked at once), and their outcomes are alike, so a proportion's
// events are not independent draws: the variance of its estimate is not
// p(1 − p)/n but that of visits as clusters,
//
//	Σ_visits (N_v − p·D_v)² / (Σ D_v)²,
//
// N_v and D_v a visit's numerator and denominator counts. An accumulator
// keeps, per per-event proportion (PairedSeries), Σ N_v², Σ N_v·D_v and
// Σ D_v² over its visits, updated as each event joins its visit (the
// difference the event makes to each square), so that they add and
// subtract like every other count: the analyses judge each arm's estimate
// with this variance when it is the larger (VisitVariance).
//
// A visit is a qid's runs in one arm within one span of the visit gap
// (DefaultVisitGap unless set) of event time, spans counted from the
// Unix epoch: a function of the qid and the time alone, so that a replay,
// and a replica that sees some of the qids, make the same visits. A run
// that comes after a later span of its qid began is a visit of its own.
// An analysis leaves out of its sums the span its start falls in, whose
// visit may have begun before it (ExcludeVisit).

// The ΔS-cited values come in visits too, and a quantile's order
// statistics are no more independent draws than a proportion's events: the
// sums keep, after the paired series', the same three sums of a
// pseudo-series whose denominator is a visit's cited values, whose Σ D_v²
// bounds how much a visit's values move a quantile's count together
// (CitedDesignEffect).

// CitedVisitSeries names the visit sums of the ΔS-cited values.
const CitedVisitSeries = "delta_s_cited"

// DefaultVisitGap is the visit gap of an accumulator that sets none.
const DefaultVisitGap = 10 * time.Second

// The three sums of a paired series, in a cumulative cell's counts from
// layout.visits: Σ N², Σ N·D, Σ D².
const (
	visitNumSq = iota
	visitNumDen
	visitDenSq
	visitSums
)

var visitSumNames = [visitSums]string{"visit_num_sq:", "visit_num_den:", "visit_den_sq:"}

// pairedSeriesCount is len(PairedSeries(ks)) for nk cut-offs.
func pairedSeriesCount(nk int) int {
	n := 0
	for i := range registry {
		if !registry[i].PerEvent() {
			continue
		}
		switch registry[i].Over {
		case PerK:
			n += nk
		case PerTriageLabel:
			n += len(TriageLabels)
		default:
			n++
		}
	}
	return n
}

// newCumulativeLayout is newLayout with the visit sums after the counts.
func newCumulativeLayout(nk int) layout {
	l := newLayout(nk)
	l.visits, l.nVisit = l.nCnt, visitSums*(pairedSeriesCount(nk)+1)
	l.nCnt += l.nVisit
	return l
}

// maxPairedCells bounds the paired series and the ΔS-cited values: the
// per-k series at 32 cut-offs, 8 once and 8 per triage label at most.
const maxPairedCells = 8 + 2*32 + 8 + 1

// maxVisitIncs bounds the visit sums one event changes: every paired
// series, and the ΔS-cited values.
const maxVisitIncs = visitSums * maxPairedCells

// visitIncs are the changes one event makes to the visit sums.
type visitIncs struct {
	n   int
	idx [maxVisitIncs]uint16
	add [maxVisitIncs]int64
}

// visits is an arm's open visits, a row per qid as the λ table numbers
// them: the span of its visit, and per paired series its N and D.
type visits struct {
	gap   int64
	ks    []int
	cells []pairedCell
	span  []int64
	cnt   []uint16 // row·2·len(cells) + 2·series: N, then D
}

// VisitSpan is the span of the visit gap gap (ns) that time ns falls in.
func VisitSpan(ns, gap int64) int64 {
	s := ns / gap
	if ns < 0 && ns%gap != 0 {
		s--
	}
	return s
}

func newVisits(ks []int) visits {
	return visits{gap: int64(DefaultVisitGap), ks: ks, cells: append(pairedCells(ks), pairedCell{cited: true})}
}

// step adds an event of counters e at event time ns to the visit of row r
// (a new one when more than the gap from the row's latest run) and writes
// what that changes in the visit sums of layout l to out.
func (vs *visits) step(l *layout, r int32, ns int64, e *matchEvent, out *visitIncs) {
	out.n = 0
	if len(vs.cells) == 0 {
		return
	}
	stride := 2 * len(vs.cells)
	if int(r) >= len(vs.span) {
		n := int(r) + 1
		for len(vs.span) < n {
			vs.span = append(vs.span, math.MinInt64)
		}
		vs.cnt = append(vs.cnt, make([]uint16, n*stride-len(vs.cnt))...)
	}
	row := vs.cnt[int(r)*stride : (int(r)+1)*stride]
	switch span := VisitSpan(ns, vs.gap); {
	case span > vs.span[r]:
		clear(row)
		vs.span[r] = span
	case span < vs.span[r]:
		// Late for its span: a visit of its own, the row untouched.
		var single [2 * maxPairedCells]uint16
		row = single[:stride]
	}
	for i := range vs.cells {
		if vs.cells[i].uncounted {
			continue
		}
		c := vs.cells[i].cell(e)
		if c == cellOut {
			continue
		}
		N, D := int64(row[2*i]), int64(row[2*i+1])
		if D == 1<<16-1 {
			// A qid asked without a pause this long starts another visit.
			N, D = 0, 0
			row[2*i], row[2*i+1] = 0, 0
		}
		var n int64
		if c == cellHit {
			n = 1
		}
		base := uint16(l.visits + visitSums*i)
		k := out.n
		out.idx[k], out.add[k] = base+visitNumSq, n*(2*N+1)
		out.idx[k+1], out.add[k+1] = base+visitNumDen, N+n*(D+1)
		out.idx[k+2], out.add[k+2] = base+visitDenSq, 2*D+1
		out.n += 3
		row[2*i] += uint16(n)
		row[2*i+1]++
	}
}

// CitedDesignEffect is Σ D_v² / Σ D_v over the visits of cu's ΔS-cited
// values (at least 1): how many times the variance of a count of them
// below a quantile can exceed that of as many independent values, a
// visit's values being at worst all on the same side of it. The start
// span's visit is out of the squares (ExcludeVisit) but in the count, which
// errs by one span's values at most.
func (cu *Cumulative) CitedDesignEffect() float64 {
	cu.fold()
	n := float64(cu.c.cited.n)
	if n == 0 {
		return 1
	}
	sq := float64(cu.c.cnt[cu.l.visits+visitSums*(cu.l.nVisit/visitSums-1)+visitDenSq])
	return max(1, sq/n)
}

// apply adds the changes to counts cnt.
func (in *visitIncs) apply(cnt []int64) {
	for k := range in.n {
		cnt[in.idx[k]] += in.add[k]
	}
}

// VisitVariance is the variance of the estimate of per-event proportion s
// taking visits as clusters, Σ (N_v − p·D_v)² / (Σ D_v)² with p = ΣN/ΣD;
// ok is false when s is not such a proportion or has no sample. Of a mean
// that VisitClustered, it is a bound of that variance (meanVisitVariance).
func (cu *Cumulative) VisitVariance(s Series) (v float64, ok bool) {
	if s.Kind == Mean {
		return cu.meanVisitVariance(s)
	}
	if !s.Row.PerEvent() {
		return 0, false
	}
	cu.fold()
	i := -1
	for j, ps := range PairedSeries(cu.ks) {
		if ps.Name == s.Name {
			// The series at cu's cut-offs: a looked-up one knows no k index.
			i, s = j, ps
			break
		}
	}
	if i < 0 {
		return 0, false
	}
	cnt := cu.c.cnt
	idx := func(c Counter) int {
		switch c {
		case cRecallStrict, cTriageLabel, cHitAtK:
			return cu.l.index(c, s.index)
		}
		return int(c)
	}
	num, den := float64(cnt[idx(s.Row.num)]), float64(cnt[idx(s.Row.den)])
	if den == 0 {
		return 0, false
	}
	base := cu.l.visits + visitSums*i
	p := num / den
	sq := float64(cnt[base+visitNumSq]) - 2*p*float64(cnt[base+visitNumDen]) + p*p*float64(cnt[base+visitDenSq])
	return max(sq, 0) / (den * den), true
}

// visitDenSeries is the index in PairedSeries of a per-event proportion
// whose denominator is den, whose visit sums therefore hold Σ D_v² of the
// events counted in den; -1 when there is none.
func visitDenSeries(ks []int, den Counter) int {
	for i, ps := range PairedSeries(ks) {
		if ps.Row.den == den {
			return i
		}
	}
	return -1
}

// VisitClustered says whether the analyses can bound the variance of mean
// s taking visits as clusters: its denominator is a per-event
// proportion's, whose visit sums count its events by visit.
func VisitClustered(s Series) bool {
	return s.Kind == Mean && visitDenSeries([]int{1}, s.Row.den) >= 0
}

// meanVisitVariance bounds the variance of the estimate of mean s, whose
// values are in [0, 1], taking visits as clusters: μ(1 − μ) · Σ D_v² /
// (Σ D_v)². A value's variance is at most μ(1 − μ), and a visit's D_v
// values move together at worst (all equal: a question's repeated runs
// against one index retrieve alike), which multiplies the variance of
// their sum by D_v; Σ D_v² comes from the visit sums of a per-event
// proportion of the same denominator (VisitClustered).
func (cu *Cumulative) meanVisitVariance(s Series) (v float64, ok bool) {
	i := visitDenSeries(cu.ks, s.Row.den)
	ki := 0
	if s.Row.Over == PerK {
		ki = slices.Index(cu.ks, s.K)
	}
	if i < 0 || ki < 0 {
		return 0, false
	}
	cu.fold()
	n := float64(cu.c.cnt[s.Row.den])
	if n == 0 {
		return 0, false
	}
	mu := min(max(cu.c.sums[cu.l.sumIndex(s.Row.sum, ki)].float()/n, 0), 1)
	sq := max(float64(cu.c.cnt[cu.l.visits+visitSums*i+visitDenSq]), n)
	return mu * (1 - mu) * sq / (n * n), true
}
