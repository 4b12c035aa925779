package analysis

import (
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

// pairedBounds is the paired interval of candidate − baseline of metric at
// level (each side), from the matched pairs m with the cut-offs ks; ok is
// false when no pair counts the metric.
func pairedBounds(metric string, ks []int, m *window.Matches, level float64) paired {
	s, found := window.Lookup(metric)
	if m == nil || !found {
		return paired{pairing: PairedNone}
	}
	if s.Kind == window.Kappa {
		return kappaPaired(&m.Judged, level, pairing(m.JudgedByRequest, m.JudgedByQID))
	}
	t, byRequest, byQID, ok := m.Paired(s, ks)
	if !ok {
		return paired{pairing: PairedNone}
	}
	return tablePaired(&t, window.QuestionDecided(s), level, pairing(byRequest, byQID))
}

// tablePaired bounds d from a 3×3 table of pairs ([candidate][baseline]
// cell: 0 not counted, 1 counted, 2 counted in the numerator). exact:
// the metric's denominator is decided by the question, so the pairs with
// one side counted are halves whose other half never came, which says
// nothing of the answers: the pairs with both sides counted are the
// sample, and their differences are exact.
func tablePaired(t *window.Table, exact bool, level float64, how string) paired {
	if exact {
		both := t[1][1] + t[1][2] + t[2][1] + t[2][2]
		if both == 0 {
			return paired{pairing: PairedNone}
		}
		return paired{pairing: how, pairs: both, ok: true, iv: confseq.BettingMean(level, confseq.Values{
			X: []float64{-1, 0, 1}, N: []float64{float64(t[1][2]), float64(t[1][1] + t[2][2]), float64(t[2][1])},
			Lo: -1, Hi: 1,
		})}
	}
	informative := t.Pairs()
	if informative == 0 {
		return paired{pairing: PairedNone}
	}
	out := paired{pairing: how, pairs: informative, ok: true}
	// Linearised: with n pairs, D and N a side's denominator and numerator
	// indicators, μ its mean D and p its ratio, d̂ − d ≈ the mean over the
	// pairs of (N_c − p_c·D_c)/μ_c − (N_b − p_b·D_b)/μ_b. Over the n*
	// informative pairs, X = (n/n*)·that + d̂ has mean d̂, and is the exact
	// difference when both sides of every pair are counted.
	var n, dc, nc, db, nb float64
	for a := range 3 {
		for b := range 3 {
			k := float64(t[a][b])
			n += k
			if a > 0 {
				dc += k
			}
			if a == 2 {
				nc += k
			}
			if b > 0 {
				db += k
			}
			if b == 2 {
				nb += k
			}
		}
	}
	if dc == 0 || db == 0 {
		return paired{pairing: PairedNone}
	}
	pc, pb := nc/dc, nb/db
	mc, mb := dc/n, db/n
	d := pc - pb
	scale := n / float64(informative)
	value := func(a, b int) float64 {
		side := func(cell int, p, mu float64) float64 {
			if cell == 0 {
				return 0
			}
			hit := 0.0
			if cell == 2 {
				hit = 1
			}
			return (hit - p) / mu
		}
		return scale*(side(a, pc, mc)-side(b, pb, mb)) + d
	}
	v := confseq.Values{Lo: math.Inf(1), Hi: math.Inf(-1)}
	for a := range 3 {
		for b := range 3 {
			if a == 0 && b == 0 {
				continue
			}
			x := value(a, b)
			v.Lo, v.Hi = min(v.Lo, x), max(v.Hi, x)
			if k := t[a][b]; k > 0 {
				v.X = append(v.X, x)
				v.N = append(v.N, float64(k))
			}
		}
	}
	iv := confseq.BettingMean(level, v)
	out.iv = confseq.Interval{Lo: max(-1, iv.Lo), Hi: min(1, iv.Hi)}
	return out
}

// kappaPaired bounds κ_c − κ_b from the matched judgement pairs,
// linearised by κ's influence function: a pair whose labels are (i, j)
// moves κ by (1{i=j} − p_o)/(1 − p_e) − (π_·i + π_j· − 2p_e)(1 − p_o)/(1 −
// p_e)², with p_o the agreement, p_e the chance agreement and π the
// label frequencies (Scholar rows, Auditor columns).
func kappaPaired(j *window.JudgedTable, level float64, how string) paired {
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
	iv := confseq.BettingMean(level, v)
	return paired{iv: confseq.Interval{Lo: max(-2, iv.Lo), Hi: min(2, iv.Hi)}, pairing: how, pairs: int64(n), ok: true}
}
