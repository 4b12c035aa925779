package analysis

import (
	"maps"
	"math"
	"slices"

	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// Paired comparisons (SPEC §5.3): a comparison check of a per-event
// proportion, of λ convergence or flips, or of the judgement metrics reads
// the arms' matched pairs (window.Matcher) besides their totals, and is
// judged on the intersection of two confidence sequences, each at half
// its level: the unpaired one of §5.2 over every event, and a betting
// sequence (confseq.BettingMean) over the pairs' differences. Both hold
// uniformly over time, so by the union bound their intersection does at
// the check's level, and a healthy candidate is still failed with
// probability at most α.
//
// A pair's difference is exact when both its sides are counted in the
// metric (a gold-decided denominator: answerable, unanswerable,
// coverage- and offset-eligible questions; complete λ groups; judgement
// pairs): candidate − baseline in {−1, 0, 1}, whose mean is d, and the
// betting sequence holds at any sample size. Precision and chr divide by
// the answers shipped, which the two sides of a pair need not share: their
// difference of two ratios is linearised (the delta method) around the
// current estimates, as the unpaired sequence of §5.2 already is, and
// holds as the pairs grow. κ, a ratio of label frequencies, is linearised
// the same way.

// How a check's pairs were matched (CheckResult.Pairing).
const (
	PairedByRequest = "request"
	PairedByQID     = "qid"
	PairedNone      = "none"
)

// paired is what a check's pairs give: the interval of d at the level
// asked, how the pairs were matched and how many there are.
type paired struct {
	est     float64 // the mean of the values the sequence bets on
	iv      confseq.Interval
	pairing string
	pairs   int64
	ok      bool
}

// pairable says whether matched pairs count metric: a proportion some
// table of pairs counts, or κ.
func pairable(metric string) bool {
	s, ok := window.Lookup(metric)
	if !ok {
		return false
	}
	return s.Kind == window.Kappa || window.Pairable(s)
}

// pairing names the way most of the pairs were matched.
func pairing(byRequest, byQID int64) string {
	switch {
	case byRequest+byQID == 0:
		return PairedNone
	case byRequest >= byQID:
		return PairedByRequest
	}
	return PairedByQID
}

// pairedBounds is the paired interval of candidate − baseline of metric,
// each side at its level of lv, from the matched pairs m with the cut-offs ks; ok is
// false when no pair counts the metric.
//
// Each paired function needs a side of its interval only where it passes
// past (pastFor), on the check's scale.
func pairedBounds(metric string, ks []int, m *window.Matches, lv confseq.Levels, past confseq.Interval) paired {
	s, found := window.Lookup(metric)
	if m == nil || !found {
		return paired{pairing: PairedNone}
	}
	if s.Kind == window.Kappa {
		return kappaPaired(&m.Judged, lv, pairing(m.JudgedByRequest, m.JudgedByQID), past)
	}
	if visits, byRequest, byQID, ok := m.PairedVisits(s, ks); ok {
		return visitsPaired(visits, window.QuestionDecided(s), lv, pairing(byRequest, byQID), past)
	}
	t, byRequest, byQID, ok := m.Paired(s)
	if !ok {
		return paired{pairing: PairedNone}
	}
	// λ groups and judgement pairs count on both sides.
	both := t[1][1] + t[1][2] + t[2][1] + t[2][2]
	if both == 0 {
		return paired{pairing: PairedNone}
	}
	v := confseq.Values{
		X: []float64{-1, 0, 1}, N: []float64{float64(t[1][2]), float64(t[1][1] + t[2][2]), float64(t[2][1])},
		Lo: -1, Hi: 1,
	}
	return paired{pairing: pairing(byRequest, byQID), pairs: both, ok: true, est: v.Mean(), iv: confseq.BettingPast(lv, v, pastIn(past, 0, 1))}
}

// everySide asks for both sides of a paired sequence, whatever they are.
var everySide = confseq.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}

// pastIn is past, on a check's scale, on the scale of the values of a
// paired sequence whose bounds are widened by widen and clamped to
// [−limit, limit]: a side at or beyond the clamp is needed in any case.
func pastIn(past confseq.Interval, widen, limit float64) confseq.Interval {
	in := everySide
	if past.Lo > -limit {
		in.Lo = past.Lo + widen
	}
	if past.Hi < limit {
		in.Hi = past.Hi - widen
	}
	return in
}

// visitsPaired bounds d from the visits of a per-event proportion, each
// visit one value: the mean of its pairs' differences. exact: the
// metric's denominator is decided by the question, so a pair with one side
// counted is a half whose other half never came, which says nothing of
// the answers; the pairs counted on both sides are the sample and their
// differences are exact. Otherwise (precision and chr divide by the
// answers shipped, which the two sides need not share) each pair's
// difference is linearised around the current estimates.
func visitsPaired(visits map[window.VisitSummary]int64, exact bool, lv confseq.Levels, how string, past confseq.Interval) paired {
	var pairs int64
	values := map[float64]float64{}
	v := confseq.Values{Lo: -1, Hi: 1}
	if exact {
		for sm, n := range visits {
			_, _, _, _, both, ncBoth, nbBoth := sm.Fields()
			if both == 0 {
				continue
			}
			values[float64(ncBoth-nbBoth)/float64(both)] += float64(n)
			pairs += n * int64(both)
		}
	} else {
		// With p and D̄ a side's ratio and total denominator over the
		// n* pairs counted on some side, d̂ − d ≈ the mean over those
		// pairs of W = n*·((N_c − p_c·D_c)/D̄_c − (N_b − p_b·D_b)/D̄_b),
		// and X = W + d̂ has mean d̂ (the exact difference when both
		// sides are always counted). A visit's value is the mean of its
		// pairs' X.
		var sn, nc, dc, nb, db float64
		for sm, n := range visits {
			vnc, vdc, vnb, vdb, _, _, _ := sm.Fields()
			f := float64(n)
			sn += f * float64(sm.Pairs())
			nc, dc, nb, db = nc+f*float64(vnc), dc+f*float64(vdc), nb+f*float64(vnb), db+f*float64(vdb)
		}
		if dc == 0 || db == 0 {
			return paired{pairing: PairedNone}
		}
		pc, pb := nc/dc, nb/db
		d := pc - pb
		x := func(vnc, vdc, vnb, vdb float64) float64 {
			return sn*((vnc-pc*vdc)/dc-(vnb-pb*vdb)/db) + d
		}
		// The range of a pair's X: its extremes over what a pair can be.
		v.Lo, v.Hi = math.Inf(1), math.Inf(-1)
		for _, cell := range [][4]float64{{1, 1, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 0, 1}, {1, 1, 1, 1}, {1, 1, 0, 1}, {0, 1, 1, 1}, {0, 1, 0, 1}} {
			xv := x(cell[0], cell[1], cell[2], cell[3])
			v.Lo, v.Hi = min(v.Lo, xv), max(v.Hi, xv)
		}
		for sm, n := range visits {
			vnc, vdc, vnb, vdb, _, _, _ := sm.Fields()
			m := sm.Pairs()
			if m == 0 {
				continue
			}
			// The mean of the visit's pairs' X: the terms are linear.
			mean := (x(float64(vnc), float64(vdc), float64(vnb), float64(vdb)) - d + float64(m)*d) / float64(m)
			values[mean] += float64(n)
			pairs += n * int64(m)
		}
	}
	if pairs == 0 {
		return paired{pairing: PairedNone}
	}
	v.X, v.N = sortedValues(values)
	iv := confseq.BettingPast(lv, v, pastIn(past, 0, 1))
	return paired{pairing: how, pairs: pairs, ok: true, est: v.Mean(), iv: confseq.Interval{Lo: max(-1, iv.Lo), Hi: min(1, iv.Hi)}}
}

// kappaPaired bounds κ_c − κ_b from the matched judgement pairs,
// linearised by κ's influence function: a pair whose labels are (i, j)
// moves κ by (1{i=j} − p_o)/(1 − p_e) − (π_·i + π_j· − 2p_e)(1 − p_o)/(1 −
// p_e)², with p_o the agreement, p_e the chance agreement and π the
// label frequencies (Scholar rows, Auditor columns).
func kappaPaired(j *window.JudgedTable, lv confseq.Levels, how string, past confseq.Interval) paired {
	const nl = 4
	var n float64
	var rowC, colC, rowB, colB [nl]float64
	var diagC, diagB float64
	for a := range j {
		for b, k := range j[a] {
			if k == 0 {
				continue
			}
			f := float64(k)
			n += f
			sa, aa, sb, ab := a/nl, a%nl, b/nl, b%nl
			rowC[sa] += f
			colC[aa] += f
			rowB[sb] += f
			colB[ab] += f
			if sa == aa {
				diagC += f
			}
			if sb == ab {
				diagB += f
			}
		}
	}
	if n == 0 {
		return paired{pairing: PairedNone}
	}
	stats := func(row, col [nl]float64, diag float64) (po, pe, kappa float64, infl [nl * nl]float64, ok bool) {
		po = diag / n
		for i := range nl {
			pe += row[i] / n * col[i] / n
		}
		if pe >= 1 {
			return 0, 0, 0, infl, false
		}
		kappa = (po - pe) / (1 - pe)
		for l := range infl {
			i, jj := l/nl, l%nl
			same := 0.0
			if i == jj {
				same = 1
			}
			dpe := col[i]/n + row[jj]/n - 2*pe
			infl[l] = (same-po)/(1-pe) - dpe*(1-po)/((1-pe)*(1-pe))
		}
		return po, pe, kappa, infl, true
	}
	_, _, kc, ic, okc := stats(rowC, colC, diagC)
	_, _, kb, ib, okb := stats(rowB, colB, diagB)
	if !okc || !okb {
		return paired{pairing: PairedNone}
	}
	d := kc - kb
	v := confseq.Values{Lo: d + slices.Min(ic[:]) - slices.Max(ib[:]), Hi: d + slices.Max(ic[:]) - slices.Min(ib[:])}
	for a := range j {
		for b, k := range j[a] {
			if k > 0 {
				v.X = append(v.X, d+ic[a]-ib[b])
				v.N = append(v.N, float64(k))
			}
		}
	}
	iv := confseq.BettingPast(lv, v, pastIn(past, 0, 2))
	return paired{est: v.Mean(), iv: confseq.Interval{Lo: max(-2, iv.Lo), Hi: min(2, iv.Hi)}, pairing: how, pairs: int64(n), ok: true}
}

// quantilePaired bounds Q_c(p) − Q_b(p), the difference of the cited-ΔS
// p-quantiles, from the matched visits' binned values (window.CitedVisit),
// linearised by the quantile's influence function: with q̂ and f̂ a side's
// quantile and the density there, and n* the pairs with a value on some
// side, d̂ − d ≈ the mean over those pairs of
//
//	W = n*/n_c·(p − 1{c ≤ q̂_c})/f̂_c − n*/n_b·(p − 1{b ≤ q̂_b})/f̂_b
//
// (a side without a value adds 0), and a visit's value is d̂ plus the mean
// of its pairs' W, as visitsPaired does for a ratio. Where the arms cite
// alike on a question (an unchanged index), both sides of its pairs fall
// on the same side of the quantile and W is about 0: the sequence narrows
// as fast as the arms agree, which the unpaired order statistics cannot,
// every question's ΔS counting in both. The bins put each quantile within
// one bin of the values', and the interval is widened by one bin for it.
func quantilePaired(cs *citedSample, p float64, lv confseq.Levels, how string, past confseq.Interval) paired {
	nc, nb, np := cs.nc, cs.nb, cs.np
	// The linearisation needs values on both sides of each quantile: a
	// handful, all alike, would claim a density, and a certainty, that
	// no more than a handful can show.
	if min(nc, nb)*min(p, 1-p) < minQuantileTail {
		return paired{pairing: PairedNone}
	}
	qc, fc := binQuantile(&cs.hc, nc, p)
	qb, fb := binQuantile(&cs.hb, nb, p)
	d := float64(qc-qb) / window.CitedBins
	wc, wb := np/nc, np/nb
	// A side's term: its influence, by which side of the quantile its
	// value falls on.
	term := func(below bool, w, f float64) float64 {
		if below {
			return w * (p - 1) / f
		}
		return w * p / f
	}
	v := confseq.Values{Lo: d + term(true, wc, fc) - term(false, wb, fb), Hi: d + term(false, wc, fc) - term(true, wb, fb)}
	// A visit's value depends on the quantiles' bins only through how
	// many of its values fall at or below them: the visits counted by
	// that shape are kept for the bins of the last reads and follow the
	// visits as they come, so that a read whose bins have not moved costs
	// the shapes, not a pass over every visit. Each distinct value is then
	// worked out once, the same whatever order the visits came in.
	shapes := cs.shapesAt(qc, qb)
	if cs.values == nil {
		cs.values = map[float64]float64{}
	}
	values := cs.values
	clear(values)
	cBelow, cAbove, bBelow, bAbove := term(true, wc, fc), term(false, wc, fc), term(true, wb, fb), term(false, wb, fb)
	for sh, n := range shapes {
		s := float64(sh.cBelow)*cBelow + float64(sh.cAbove)*cAbove - float64(sh.bBelow)*bBelow - float64(sh.bAbove)*bAbove
		values[d+s/float64(sh.pairs)] += n
	}
	v.X, v.N = sortedValues(values)
	const bin = 1.0 / window.CitedBins
	iv := confseq.BettingPast(lv, v, pastIn(past, bin, 1))
	return paired{pairing: how, pairs: int64(np), ok: true, est: v.Mean(), iv: confseq.Interval{Lo: max(-1, iv.Lo-bin), Hi: min(1, iv.Hi+bin)}}
}

// citedSample is the matched visits' cited ΔS as quantilePaired reads
// them: each side's histogram and count of values, the pairs with a value
// on some side, and the visits unpacked, alike visits once. It is kept
// between reads and visits closed since are added to it.
type citedSample struct {
	hc, hb     [window.CitedBins]float64
	nc, nb, np float64
	visits     []citedVisit
	all        [][2]uint16 // the visits' pairs, back to back
	index      map[window.CitedVisit]int
	// byC and byB list, by bin, the visits with a pair whose candidate or
	// baseline value falls in it (each visit once a bin): when a quantile
	// moves a bin, only those visits change shape.
	byC, byB [][]int32
	// shapes counts the visits by shape at the quantile bins of the last
	// keptShapes reads (a median and a p90, as the bins move).
	shapes []shapeCounts
	reads  uint64
	values map[float64]float64 // quantilePaired's scratch
}

// citedVisit is kept for every distinct visit, so it is kept small.
type citedVisit struct {
	off uint32  // its pairs: all[off : off+k]
	k   uint16  // a visit has at most 255 pairs
	n   float64 // how many visits were alike
}

// visitShape is what a visit's value in quantilePaired depends on at the
// bins qc and qb: how many of its pairs' candidate and baseline values fall
// at or below each and above it, and how many pairs it has (at most 255).
type visitShape struct {
	cBelow, cAbove, bBelow, bAbove, pairs uint8
}

// shapeCounts is how many visits have each shape at the bins qc and qb.
type shapeCounts struct {
	qc, qb int
	read   uint64 // the citedSample.reads of its last read
	counts map[visitShape]float64
}

// keptShapes is how many bin pairs citedSample keeps shapes for: two
// quantile checks, and each quantile's bin as it steps between neighbours.
const keptShapes = 4

// shapeOf is the i-th visit's shape at the bins qc and qb.
func (cs *citedSample) shapeOf(i, qc, qb int) visitShape {
	sh := visitShape{pairs: uint8(cs.visits[i].k)}
	for _, pr := range cs.pairs(i) {
		switch c := pr[0]; {
		case c == window.NoCited:
		case int(c) <= qc:
			sh.cBelow++
		default:
			sh.cAbove++
		}
		switch b := pr[1]; {
		case b == window.NoCited:
		case int(b) <= qb:
			sh.bBelow++
		default:
			sh.bAbove++
		}
	}
	return sh
}

// shapesAt counts the visits by shape at the bins qc and qb: kept from an
// earlier read at the same bins; else the kept counts nearest by the
// visits that would change shape, moved a bin at a time, or counted anew
// when moving would touch more visits than there are; in the room of the
// one read least recently.
func (cs *citedSample) shapesAt(qc, qb int) map[visitShape]float64 {
	cs.reads++
	near, cost := -1, len(cs.visits)/2 // a move looks at a visit twice
	for i := range cs.shapes {
		sc := &cs.shapes[i]
		if sc.qc == qc && sc.qb == qb {
			sc.read = cs.reads
			return sc.counts
		}
		if c := cs.moveCost(sc.qc, sc.qb, qc, qb); c < cost {
			near, cost = i, c
		}
	}
	slot := len(cs.shapes)
	if slot < keptShapes {
		if slot < cap(cs.shapes) && cs.shapes[:slot+1][slot].counts != nil {
			// A slot a former sample used: its map is cleared.
			cs.shapes = cs.shapes[:slot+1]
		} else {
			cs.shapes = append(cs.shapes, shapeCounts{counts: map[visitShape]float64{}})
		}
	} else {
		slot = 0
		for i := range cs.shapes {
			if cs.shapes[i].read < cs.shapes[slot].read {
				slot = i
			}
		}
		if near == slot {
			// Moved in its own room: no copy.
			sc := &cs.shapes[slot]
			cs.move(sc, qc, qb)
			sc.read = cs.reads
			return sc.counts
		}
		clear(cs.shapes[slot].counts)
	}
	sc := &cs.shapes[slot]
	sc.read = cs.reads
	if near >= 0 {
		from := &cs.shapes[near]
		maps.Copy(sc.counts, from.counts)
		sc.qc, sc.qb = from.qc, from.qb
		cs.move(sc, qc, qb)
		return sc.counts
	}
	sc.qc, sc.qb = qc, qb
	for i, cv := range cs.visits {
		if cv.n != 0 {
			sc.counts[cs.shapeOf(i, qc, qb)] += cv.n
		}
	}
	return sc.counts
}

// moveCost is how many visits moving counts kept at the bins (fc, fb) to
// (qc, qb) would look at.
func (cs *citedSample) moveCost(fc, fb, qc, qb int) int {
	n := 0
	for q := min(fc, qc) + 1; q <= max(fc, qc); q++ {
		n += len(cs.byC[q])
	}
	for q := min(fb, qb) + 1; q <= max(fb, qb); q++ {
		n += len(cs.byB[q])
	}
	return n
}

// move brings sc's counts to the bins qc and qb a bin at a time: as a
// quantile's bin moves up by one to q, the visits with a value in q have
// one more value at or below it; down from q, one fewer.
func (cs *citedSample) move(sc *shapeCounts, qc, qb int) {
	step := func(visits []int32, fromC, fromB, toC, toB int) {
		for _, i := range visits {
			n := cs.visits[i].n
			if n == 0 {
				continue
			}
			sc.add(cs.shapeOf(int(i), fromC, fromB), -n)
			sc.add(cs.shapeOf(int(i), toC, toB), n)
		}
	}
	for ; sc.qc < qc; sc.qc++ {
		step(cs.byC[sc.qc+1], sc.qc, sc.qb, sc.qc+1, sc.qb)
	}
	for ; sc.qc > qc; sc.qc-- {
		step(cs.byC[sc.qc], sc.qc, sc.qb, sc.qc-1, sc.qb)
	}
	for ; sc.qb < qb; sc.qb++ {
		step(cs.byB[sc.qb+1], sc.qc, sc.qb, sc.qc, sc.qb+1)
	}
	for ; sc.qb > qb; sc.qb-- {
		step(cs.byB[sc.qb], sc.qc, sc.qb, sc.qc, sc.qb-1)
	}
}

// add counts n more visits of shape sh (n < 0: fewer), forgetting a shape
// no visit has.
func (sc *shapeCounts) add(sh visitShape, n float64) {
	if c := sc.counts[sh] + n; c != 0 {
		sc.counts[sh] = c
	} else {
		delete(sc.counts, sh)
	}
}

// newCitedSample unpacks cited, into the memory of spare when there is
// one (a sample no one reads any more): a read after every closed visit
// should not leave the collector a sample's worth of garbage.
func newCitedSample(cited map[window.CitedVisit]int64, spare *citedSample) *citedSample {
	cs := spare
	if cs == nil {
		cs = &citedSample{index: map[window.CitedVisit]int{}, byC: make([][]int32, window.CitedBins), byB: make([][]int32, window.CitedBins)}
	}
	clear(cs.index)
	for i := range cs.shapes {
		clear(cs.shapes[i].counts)
	}
	for q := range cs.byC {
		cs.byC[q], cs.byB[q] = cs.byC[q][:0], cs.byB[q][:0]
	}
	*cs = citedSample{visits: cs.visits[:0], all: cs.all[:0], index: cs.index, byC: cs.byC, byB: cs.byB, shapes: cs.shapes[:0], values: cs.values}
	for v, n := range cited {
		cs.add(v, float64(n))
	}
	return cs
}

// add counts n more visits like v (n < 0: fewer; a visit counted 0 times
// is read as absent).
func (cs *citedSample) add(v window.CitedVisit, n float64) {
	i, ok := cs.index[v]
	if !ok {
		i = len(cs.visits)
		cs.index[v] = i
		cs.visits = append(cs.visits, citedVisit{off: uint32(len(cs.all)), k: uint16(v.Pairs())})
		for j := range v.Pairs() {
			c, b := v.Pair(j)
			cs.all = append(cs.all, [2]uint16{c, b})
		}
		cs.post(i)
	}
	cs.visits[i].n += n
	for _, pr := range cs.pairs(i) {
		cs.np += n
		if c := pr[0]; c != window.NoCited {
			cs.hc[c] += n
			cs.nc += n
		}
		if b := pr[1]; b != window.NoCited {
			cs.hb[b] += n
			cs.nb += n
		}
	}
	for j := range cs.shapes {
		sc := &cs.shapes[j]
		sc.add(cs.shapeOf(i, sc.qc, sc.qb), n)
	}
}

// post lists the i-th visit under each bin its pairs' values fall in.
func (cs *citedSample) post(i int) {
	prs := cs.pairs(i)
	for j, pr := range prs {
		seenC, seenB := pr[0] == window.NoCited, pr[1] == window.NoCited
		for _, before := range prs[:j] {
			seenC = seenC || before[0] == pr[0]
			seenB = seenB || before[1] == pr[1]
		}
		if !seenC {
			cs.byC[pr[0]] = append(cs.byC[pr[0]], int32(i))
		}
		if !seenB {
			cs.byB[pr[1]] = append(cs.byB[pr[1]], int32(i))
		}
	}
}

// pairs are the pairs of the i-th visit.
func (cs *citedSample) pairs(i int) [][2]uint16 {
	v := cs.visits[i]
	return cs.all[v.off : v.off+uint32(v.k)]
}

// minQuantileTail is how many of a side's values must lie beyond its
// quantile (on the smaller side) before the paired sequence counts.
const minQuantileTail = 30

// binQuantile is the bin of the p-quantile of histogram h (n values): the
// first whose cumulative count reaches p·n; and the density of the values
// there, 2h over the spread of the bins of the (p ∓ h)-quantiles, h the
// Hall–Sheather bandwidth. The spread counts both end bins whole, so the
// density errs low and the influence, and the interval, wide.
func binQuantile(h *[window.CitedBins]float64, n, p float64) (bin int, density float64) {
	at := func(q float64) int {
		target, cum := q*n, 0.0
		for k, c := range h {
			cum += c
			if cum >= target {
				return k
			}
		}
		return len(h) - 1
	}
	zp := confseq.ZQuantile(p)
	phi := math.Exp(-zp*zp/2) / math.Sqrt(2*math.Pi)
	z := confseq.ZQuantile(0.975)
	bw := math.Pow(n, -1.0/3) * math.Pow(z, 2.0/3) * math.Cbrt(1.5*phi*phi/(2*zp*zp+1))
	lo, hi := max(p-bw, 0), min(p+bw, 1)
	spread := float64(at(hi)-at(lo)+1) / window.CitedBins
	return at(p), (hi - lo) / spread
}

// sortedValues lays out a map of values and their weights in the order of
// the values: sums over a map's order differ in the last bit from one
// read to the next, and replicas must answer alike to the bit.
func sortedValues(values map[float64]float64) (xs, ns []float64) {
	xs = slices.Sorted(maps.Keys(values))
	ns = make([]float64, len(xs))
	for i, x := range xs {
		ns[i] = values[x]
	}
	return xs, ns
}
