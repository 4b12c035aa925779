package checks

import (
	"fmt"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/vocab"
)

// ParseLambdaState parses lambda_state: → ← <> × or the words convergent,
// divergent, recursive, chaotic. "" is vocab.LambdaNone. Surrounding white
// space is ignored (Python strip) and the words are matched after Python
// lower, since producers differ in casing; anything else is an error.
func ParseLambdaState(s string) (vocab.LambdaState, error) {
	if l, ok := vocab.LambdaStateOf(pycompat.Lower(pycompat.Strip(s))); ok {
		return l, nil
	}
	return vocab.LambdaNone, fmt.Errorf("lambda_state %q: want → ← <> × or convergent, divergent, recursive, chaotic", s)
}

// lambdaStateOf is ParseLambdaState, without its Python string work for
// the states as they are normally sent.
func lambdaStateOf(s string) (vocab.LambdaState, error) {
	if l, ok := vocab.LambdaStateOf(s); ok {
		return l, nil
	}
	return ParseLambdaState(s)
}

// LambdaRun is what the λ group rule needs of one run of a qid in one arm.
type LambdaRun struct {
	State    vocab.LambdaState
	Refused  bool     // IsRefusal of the run's claim
	CitedIDs []string // compared as a set: order and duplicates ignored
}

// LambdaGroup applies the λ group rule of SPEC §3 to the runs of one qid in
// one arm. complete: at least minRuns runs. convergent and flips are
// computed whether or not the group is complete; callers count them only
// for complete groups. An empty group is neither convergent nor flipping.
//
//   - Every run has a state: convergent when all are →, flips when any is ←.
//   - No run has a state: convergent when all runs make the same refuse/ship
//     decision and cite the same id set; flips when the decisions differ.
//   - Mixed: both rules apply, so no reported signal is ignored: convergent
//     needs every stated run to be → and all runs to agree on decision and
//     cited set; flips when any stated run is ← or the decisions differ.
func LambdaGroup(runs []LambdaRun, minRuns int) (complete, convergent, flips bool) {
	complete = len(runs) >= minRuns
	if len(runs) == 0 {
		return complete, false, false
	}
	stated, allArrow, anyBack := 0, true, false
	for _, r := range runs {
		if r.State == vocab.LambdaNone {
			continue
		}
		stated++
		allArrow = allArrow && r.State == vocab.LambdaConvergent
		anyBack = anyBack || r.State == vocab.LambdaDivergent
	}
	if stated == len(runs) {
		return complete, allArrow, anyBack
	}
	sameDecision, sameCited := true, true
	first := idSet(runs[0].CitedIDs)
	for _, r := range runs[1:] {
		sameDecision = sameDecision && r.Refused == runs[0].Refused
		sameCited = sameCited && sameIDSet(first, idSet(r.CitedIDs))
	}
	convergent = sameDecision && sameCited && allArrow
	flips = !sameDecision || anyBack
	return complete, convergent, flips
}

// sameIDSet reports whether a and b hold the same ids.
func sameIDSet(a, b map[string]struct{}) bool {
	return len(a) == len(b) && countIn(a, b) == len(a)
}
