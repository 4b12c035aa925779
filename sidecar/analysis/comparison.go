package analysis

import (
	"fmt"
	"strconv"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// comparison judges d = candidate − baseline of the metric against the
// tolerance on the metric's failing side, with a two-sample sequence.
type comparison struct{}

func init() { checkKinds[config.CheckComparison] = comparison{} }

func (comparison) describe(c config.AnalysisCheck, r *CheckResult) { r.Tolerance = c.Tolerance }

// hasData: data in the baseline alone is inconclusive, not no_data.
func (comparison) hasData(s Samples) bool { return s.Arm > 0 || s.Baseline > 0 }

func (comparison) waiting(s Samples) string {
	switch {
	case s.Arm == 0:
		return "no sample in arm yet; baseline has " + strconv.FormatInt(s.Baseline, 10)
	case s.Baseline == 0:
		return "no sample in baseline yet; arm has " + strconv.FormatInt(s.Arm, 10)
	}
	return ""
}

// bounds: proportions with a sequence for a difference of two Bernoulli
// streams, and the ranking means (values in [0, 1]) with the same one,
// which their variance, at most the Bernoulli one, makes conservative; the cited-ΔS quantiles with each arm's order-statistic bounds
// at half the level, the candidate's lower bound minus the baseline's
// upper bound and so on, so that each side of the difference holds at
// level; κ with Cohen's large-sample variance of each arm. A metric that
// matched pairs count (paired.go) is judged on the intersection of that
// sequence and the paired one, each at half the level.
func (comparison) bounds(c config.AnalysisCheck, a *arms, lv confseq.Levels, r *CheckResult) (float64, confseq.Interval) {
	r.Pairing = PairedNone
	kind := window.KindOf(c.Metric)
	half := lv.Half()
	if kind == window.Quantile {
		// Each arm's order statistics at a quarter of the level, the
		// candidate's lower bound minus the baseline's upper bound and
		// so on: half the level; the matched visits' sequence the other.
		p := quantileOf(c.Metric)
		bLo, bHi := quantileBoundary(lv.Lo/4, p), quantileBoundary(lv.Hi/4, p)
		cl, _ := rankBounds(bLo, a.cand, p)
		_, bh := rankBounds(bLo, a.base, p)
		_, ch := rankBounds(bHi, a.cand, p)
		bl, _ := rankBounds(bHi, a.base, p)
		d, iv := a.candM[c.Metric].Value-a.baseM[c.Metric].Value, confseq.Interval{Lo: cl - bh, Hi: ch - bl}
		if a.pairs == nil {
			return d, iv
		}
		pr := a.memoized(c.Metric, half, r, func() paired {
			return quantilePaired(a.citedPairs(), p, half, pairing(a.pairs.ByRequest, a.pairs.ByQID), pastFor(r.past, iv))
		})
		return d, withPaired(r, iv, pr)
	}
	// A pairable metric's unpaired sequence takes half the level whether
	// or not pairs have come yet, so that the two halves add up to the
	// level at every time.
	unpaired, isPaired := lv, pairable(c.Metric)
	if isPaired {
		unpaired = half
	}
	// One boundary a side, each tuned to where that side decides.
	bLo := boundaryFor(unpaired.Lo, confseq.PlannedInformation(unpaired.Lo, c.Tolerance))
	bHi := boundaryFor(unpaired.Hi, confseq.PlannedInformation(unpaired.Hi, c.Tolerance))
	var d float64
	var iv confseq.Interval
	if kind == window.Kappa {
		kc, vc := kappaVariance(a.candM)
		kb, vb := kappaVariance(a.baseM)
		d = kc - kb
		iv = confseq.Interval{Lo: max(-2, d-confseq.Diff(bLo, vc+vb)), Hi: min(2, d+confseq.Diff(bHi, vc+vb))}
	} else {
		// proportions, and means of values in [0, 1] (config admits no
		// other kind), whose variance the Bernoulli one of their mean
		// bounds. A per-event one's events come in visits of a question,
		// whose variance counts (a mean's: VisitVariance's bound).
		vc, vb := a.candM[c.Metric], a.baseM[c.Metric]
		var cc, cb float64
		if s, ok := window.Lookup(c.Metric); ok {
			cc, _ = a.cand.VisitVariance(s)
			cb, _ = a.base.VisitVariance(s)
		}
		d = vc.Value - vb.Value
		iv.Lo = confseq.ProportionDiffClustered(bLo, vc.Num, vc.Den, cc, vb.Num, vb.Den, cb).Lo
		iv.Hi = confseq.ProportionDiffClustered(bHi, vc.Num, vc.Den, cc, vb.Num, vb.Den, cb).Hi
	}
	if !isPaired {
		return d, iv
	}
	pr := a.memoized(c.Metric, half, r, func() paired {
		return pairedBounds(c.Metric, a.ks, a.pairs, half, pastFor(r.past, iv))
	})
	return d, withPaired(r, iv, pr)
}

// pairedMemo holds paired sequences by what they are computed from: the
// same pairs (a Matcher's total that several analyses' views read, with
// its one cited-ΔS sample), metric and levels give the same sequence
// whatever else the analyses differ in, as long as nothing is counted
// between, and both of its sides are asked for (a reading, not a
// narrowing). The evaluation tick judges every analysis under one hold of
// the lock with one.
type pairedMemo map[pairedKey]paired

type pairedKey struct {
	pairs  *window.Matches
	metric string
	lv     confseq.Levels
}

// memoized is the paired sequence compute gives for metric at levels lv,
// taken from a.memo or kept there.
func (a *arms) memoized(metric string, lv confseq.Levels, r *CheckResult, compute func() paired) paired {
	if a.memo == nil || r.past.Set || a.pairs == nil {
		return compute()
	}
	k := pairedKey{pairs: a.pairs, metric: metric, lv: lv}
	if p, ok := a.memo[k]; ok {
		return p
	}
	p := compute()
	a.memo[k] = p
	return p
}

// pastFor is what the paired sequence of a check must pass for a side of
// it to matter to a narrowing of the running bound b, iv the unpaired
// sequence now: the narrowing keeps max(b.Lo, now.Lo) with now the two
// sequences combined (combine), which a paired lower bound at or below
// b.Lo leaves as it is as long as b.Lo ≤ iv.Hi, and likewise above. Outside a narrowing (b not
// set), or where that does not hold, each side is needed in any case.
func pastFor(b Bound, iv confseq.Interval) confseq.Interval {
	past := everySide
	if !b.Set {
		return past
	}
	if b.Lo <= iv.Hi {
		past.Lo = b.Lo
	}
	if b.Hi >= iv.Lo {
		past.Hi = b.Hi
	}
	return past
}

// withPaired is the interval a check decides on: the unpaired sequence iv
// alone until the paired one pr holds, then the two combined, with both
// recorded in r.
func withPaired(r *CheckResult, iv confseq.Interval, pr paired) confseq.Interval {
	if !pr.ok {
		return iv
	}
	r.Pairing, r.Pairs, r.PairedEstimate = pr.pairing, pr.pairs, ptr(pr.est)
	r.PairedInterval = &[2]float64{pr.iv.Lo, pr.iv.Hi}
	r.UnpairedInterval = &[2]float64{iv.Lo, iv.Hi}
	return combine(iv, pr.iv, !r.LowerIsBetter)
}

// combine is what two sequences that each hold at half the level decide
// together: their intersection; where they do not meet (one of them is
// off, or the candidate changed and the paired one, waiting for visits to
// close, has not yet seen it), the one on the failing side (the lower
// where the low side passes). Then the check fails when either sequence
// alone fails and passes only when both pass, so a false verdict still
// needs one of them to err on that side: at most the level, by the union
// bound, as for the intersection.
func combine(x, y confseq.Interval, lowPasses bool) confseq.Interval {
	if met := (confseq.Interval{Lo: max(x.Lo, y.Lo), Hi: min(x.Hi, y.Hi)}); met.Lo <= met.Hi {
		return met
	}
	if (x.Hi < y.Lo) == lowPasses {
		return x
	}
	return y
}

// lowPasses: where higher is better, the lower bound passes (above
// −tolerance); where lower is, the upper (below +tolerance).
func (comparison) lowPasses(_ config.AnalysisCheck, lowerIsBetter bool) bool { return !lowerIsBetter }

func (comparison) tooFew(c config.AnalysisCheck, s Samples) string {
	if n := int64(c.MinSamples); s.Arm >= n && s.Baseline >= n {
		return ""
	}
	return fmt.Sprintf("samples %d (arm) and %d (baseline), need %d each", s.Arm, s.Baseline, c.MinSamples)
}

func (comparison) decide(c config.AnalysisCheck, lowerBetter bool, iv confseq.Interval) (Verdict, string) {
	t, d := c.Tolerance, "arm − baseline in "+span(iv)
	if lowerBetter {
		switch {
		case iv.Lo > t:
			return Fail, d + ", entirely above +" + fmt4(t)
		case iv.Hi < t:
			return Pass, d + ", entirely below +" + fmt4(t)
		}
		return Inconclusive, d + ", straddles +" + fmt4(t)
	}
	switch {
	case iv.Hi < -t:
		return Fail, d + ", entirely below −" + fmt4(t)
	case iv.Lo > -t:
		return Pass, d + ", entirely above −" + fmt4(t)
	}
	return Inconclusive, d + ", straddles −" + fmt4(t)
}

// present: arm − baseline against the tolerance on the metric's failing
// side.
func (comparison) present(r CheckResult) Presentation {
	if r.LowerIsBetter {
		return Presentation{Relative: true, Limit: r.Tolerance, Op: "<="}
	}
	return Presentation{Relative: true, Limit: -r.Tolerance, Op: ">="}
}
