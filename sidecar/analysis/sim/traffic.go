package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	gsim "github.com/shadoweval/shadoweval/sidecar/gates/sim"
	"github.com/shadoweval/shadoweval/window"
)

// The traffic model is sidecar/gates/sim's (Profile, Healthy,
// WorsePrecision, imported). Its generator is unexported, so gold, newGold,
// generator.event and logitNormal below are copied from it, changed only to
// hand each observation to every judge instead of one *window.Windows and
// to number qids (QIDKey) so that no judge hashes them. They draw from the
// RNG in the same order.

// Profile is the true quality of an arm (sidecar/gates/sim.Profile).
type Profile = gsim.Profile

// WorseCHR returns p with chr lower by points and containment given a hit
// unchanged, so precision drops with it (by points × Contained).
func WorseCHR(p Profile, points float64) Profile {
	p.CHR -= points
	return p
}

// WorseDeltaSP90 returns p with the cited ΔS p90 higher by by and its
// median unchanged: the logit-normal's spread grows, only the tail worsens.
func WorseDeltaSP90(p Profile, by float64) Profile {
	p.DeltaSP90 += by
	return p
}

type gold struct {
	answerable, offsets []bool
	qids                []string
}

func newGold(rng *rand.Rand, p Profile, n int) gold {
	g := gold{answerable: make([]bool, n), offsets: make([]bool, n), qids: make([]string, n)}
	for i := range n {
		g.answerable[i] = rng.Float64() < p.Answerable
		g.offsets[i] = g.answerable[i] && rng.Float64() < p.Offsets/p.Answerable
		g.qids[i] = "q" + strconv.Itoa(i)
	}
	return g
}

// sink takes every generated observation and judgement pair.
type sink interface {
	observe(o *window.Observation) error
	pair(p *window.PairObservation) error
}

type generator struct {
	rng  *rand.Rand
	gold gold
	ks   int
}

var labels = window.JudgementLabels

// event generates one event of arm at t (and maybe a judgement pair).
func (g *generator) event(s sink, arm string, p *Profile, t time.Time, o *window.Observation) error {
	rng := g.rng
	i := rng.IntN(len(g.gold.qids))
	ans := g.gold.answerable[i]
	*o = window.Observation{
		Arm: arm, QID: g.gold.qids[i], QIDKey: uint32(i + 1), Time: t, HasAnswer: true, Answerable: ans, Triage: -1,
		HasRetrieval: true, PrecisionAtK: o.PrecisionAtK[:0],
	}
	for range g.ks {
		o.PrecisionAtK = append(o.PrecisionAtK, 0.2)
	}
	if ans {
		o.Shipped = rng.Float64() >= p.OverRefusal
		if rng.Float64() < p.Recall5 {
			o.RecallStrict = 1<<2 | 1<<3 // k = 5 and 10 of DefaultKs
		}
		o.CoverageEligible = true
		o.Covered = o.Shipped && rng.Float64() < p.Coverage/(1-p.OverRefusal)
		if g.gold.offsets[i] {
			o.CitationAccEligible = true
			o.CitationAccurate = rng.Float64() < p.CitationAcc
		}
		if o.Shipped {
			o.Hit = rng.Float64() < p.CHR
			o.Contained = o.Hit && rng.Float64() < p.Contained
		}
	} else {
		o.Shipped = rng.Float64() < p.UnderRefusal
	}
	if o.Shipped {
		o.HasDeltaSCited = true
		o.DeltaSCited = logitNormal(rng, p.DeltaSMedian, p.DeltaSP90)
	}
	switch u := rng.Float64(); {
	case u < p.LambdaArrow:
		o.Lambda.State = window.LambdaConvergent
	case u < (1+p.LambdaArrow)/2:
		o.Lambda.State = window.LambdaDivergent
	default:
		o.Lambda.State = window.LambdaOther
	}
	o.Lambda.Refused = !o.Shipped
	if err := s.observe(o); err != nil {
		return err
	}
	if rng.Float64() >= p.PairShare {
		return nil
	}
	truth := 2 // REJECT
	switch {
	case !o.Shipped:
		truth = 1 // NOT_IN_CONTEXT
	case ans && o.Hit:
		truth = 0 // VALID
	}
	agent := func() string {
		if rng.Float64() < p.AgentAccuracy {
			return labels[truth]
		}
		return labels[(truth+1+rng.IntN(2))%3]
	}
	sc, au := agent(), agent()
	if rng.Float64() < p.Abstain {
		sc = "ABSTAIN"
	}
	return s.pair(&window.PairObservation{Arm: arm, Time: t, Scholar: sc, Auditor: au})
}

// logitNormal draws x with logit(x) normal, median m and 90th percentile q.
func logitNormal(rng *rand.Rand, m, q float64) float64 {
	mu := math.Log(m / (1 - m))
	sigma := (math.Log(q/(1-q)) - mu) / 1.2815515655446004
	z := mu + sigma*rng.NormFloat64()
	return 1 / (1 + math.Exp(-z))
}

// armTraffic is one arm's events: the n-th at from + (n+½)/rate.
type armTraffic struct {
	arm  string
	rate float64
	p    *Profile
	from time.Time
	n    int64
}

func (a *armTraffic) next() time.Time {
	return a.from.Add(time.Duration((float64(a.n) + 0.5) / a.rate * float64(time.Second)))
}

// traffic generates every arm's events before end, interleaved by time.
func traffic(s sink, g *generator, end time.Time, arms []*armTraffic, o *window.Observation) error {
	for {
		var best *armTraffic
		var bt time.Time
		for _, a := range arms {
			if t := a.next(); t.Before(end) && (best == nil || t.Before(bt)) {
				best, bt = a, t
			}
		}
		if best == nil {
			return nil
		}
		if err := g.event(s, best.arm, best.p, bt, o); err != nil {
			return err
		}
		best.n++
	}
}
