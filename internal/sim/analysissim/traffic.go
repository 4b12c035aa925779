package analysissim

import (
	"time"

	"github.com/shadoweval/shadoweval/internal/sim/gatesim"
	"github.com/shadoweval/shadoweval/window"
)

// The traffic model is internal/sim/gatesim's: Profile, Healthy,
// WorsePrecision and the Generator that draws observations from them.

// Profile is the true quality of an arm (gatesim.Profile).
type Profile = gatesim.Profile

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

// sink takes every generated observation and judgement pair.
type sink interface {
	observe(o *window.Observation) error
	pair(p *window.PairObservation) error
}

// event draws one event of arm at t (and maybe a judgement pair) from g
// and hands it to s.
func event(g *gatesim.Generator, s sink, arm string, p *Profile, t time.Time, o *window.Observation) error {
	var pair window.PairObservation
	judged := g.Draw(arm, p, t, o, &pair)
	if err := s.observe(o); err != nil {
		return err
	}
	if !judged {
		return nil
	}
	return s.pair(&pair)
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
func traffic(s sink, g *gatesim.Generator, end time.Time, arms []*armTraffic, o *window.Observation) error {
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
		if err := event(g, s, best.arm, best.p, bt, o); err != nil {
			return err
		}
		best.n++
	}
}
