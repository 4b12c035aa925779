package analysis

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shadoweval/shadoweval/window"
)

// ErrNoParts is MergedResult's error when no part holds accumulators.
var ErrNoParts = errors.New("analysis: no part with accumulators")

// MergedResult judges an over the accumulators of several replicas' parts
// (each a Saved with accumulators, SaveAll or SaveClosedGroups), as one
// replica that saw all their events would: counts, sums and sketches add
// up, and no λ group spans two parts when each qid belongs to one
// partition. The parts' open groups (short of lambda.min_runs) are no
// outcome yet and change nothing. Matched pairs add up too: a request's
// and a qid's events share a partition, so no pair spans two parts.
//
// The running intersection of each check's sequence is each replica's own
// and is left out: the merged result reads the merged sequence as it is
// now, which holds at the same level (a time-uniform sequence holds at
// every reading), and is never narrower than the single replica's.
func (an *Analysis) MergedResult(parts []Saved) (Result, error) {
	var cand, base *window.Cumulative
	pairs := window.NewMatches(an.ks)
	var events Samples
	for _, p := range parts {
		if p.Candidate == nil || p.Baseline == nil {
			continue
		}
		if err := an.readsUncounted(p.Uncounted); err != nil {
			return Result{}, fmt.Errorf("analysis %q: part: %w", an.spec.ID, err)
		}
		c, b := new(window.Cumulative), new(window.Cumulative)
		if err := json.Unmarshal(p.Candidate, c); err != nil {
			return Result{}, fmt.Errorf("analysis %q: candidate part: %w", an.spec.ID, err)
		}
		if err := json.Unmarshal(p.Baseline, b); err != nil {
			return Result{}, fmt.Errorf("analysis %q: baseline part: %w", an.spec.ID, err)
		}
		if len(p.Matched) > 0 {
			m, err := window.DecodeMatches(p.Matched, an.ks)
			if err != nil {
				return Result{}, fmt.Errorf("analysis %q: matched part: %w", an.spec.ID, err)
			}
			pairs.Add(m, 1)
		}
		events.Arm += p.Events.Arm
		events.Baseline += p.Events.Baseline
		if cand == nil {
			cand, base = c, b
			continue
		}
		if err := cand.Merge(c); err != nil {
			return Result{}, fmt.Errorf("analysis %q: %w", an.spec.ID, err)
		}
		if err := base.Merge(b); err != nil {
			return Result{}, fmt.Errorf("analysis %q: %w", an.spec.ID, err)
		}
	}
	if cand == nil {
		return Result{}, ErrNoParts
	}
	a := arms{cand: cand, base: base, candM: cand.Metrics(), baseM: base.Metrics(), pairs: pairs, ks: an.ks}
	checks, v, reason := judge(an.checks, &a, an.alpha, nil)
	an.mu.Lock()
	defer an.mu.Unlock()
	r := Result{
		Verdict: v, Analysis: an.spec.ID, Arm: an.spec.Arm, Baseline: an.spec.Baseline, CheckSet: an.spec.CheckSet,
		Since: an.spec.Start, Alpha: an.alpha, Events: events, Reason: reason, Checks: checks,
	}
	if !an.ended.IsZero() {
		end := an.ended
		r.Ended, r.EndReason = &end, an.endReason
	}
	return r, nil
}
