package checks

import (
	"testing"

	"github.com/shadoweval/shadoweval/vocab"
)

func TestParseLambdaState(t *testing.T) {
	tests := []struct {
		in      string
		want    vocab.LambdaState
		wantErr bool
	}{
		{"", vocab.LambdaNone, false},
		{"  ", vocab.LambdaNone, false},
		{"→", vocab.LambdaConvergent, false},
		{"←", vocab.LambdaDivergent, false},
		{"<>", vocab.LambdaRecursive, false},
		{"×", vocab.LambdaChaotic, false},
		{"convergent", vocab.LambdaConvergent, false},
		{"divergent", vocab.LambdaDivergent, false},
		{"recursive", vocab.LambdaRecursive, false},
		{"chaotic", vocab.LambdaChaotic, false},
		{"Convergent", vocab.LambdaConvergent, false},
		{" DIVERGENT\n", vocab.LambdaDivergent, false},
		{"\u00a0→\u00a0", vocab.LambdaConvergent, false},
		{"D\u0130VERGENT", vocab.LambdaNone, true}, // Python lower gives "di̇vergent"
		{"x", vocab.LambdaNone, true},
		{"X", vocab.LambdaNone, true},
		{"↔", vocab.LambdaNone, true},
		{"< >", vocab.LambdaNone, true},
		{"->", vocab.LambdaNone, true},
		{"converge", vocab.LambdaNone, true},
		{"none", vocab.LambdaNone, true},
	}
	for _, tt := range tests {
		got, err := ParseLambdaState(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseLambdaState(%q) = %v, %v, want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLambdaGroup(t *testing.T) {
	conv := LambdaRun{State: vocab.LambdaConvergent, CitedIDs: []string{"a"}}
	div := LambdaRun{State: vocab.LambdaDivergent, CitedIDs: []string{"a"}}
	rec := LambdaRun{State: vocab.LambdaRecursive, CitedIDs: []string{"a"}}
	cha := LambdaRun{State: vocab.LambdaChaotic, CitedIDs: []string{"a"}}
	shipAB := LambdaRun{CitedIDs: []string{"a", "b"}}
	shipBA := LambdaRun{CitedIDs: []string{"b", "a", "a"}}
	shipA := LambdaRun{CitedIDs: []string{"a"}}
	refused := LambdaRun{Refused: true}
	refusedEmpty := LambdaRun{Refused: true, CitedIDs: []string{}}

	tests := []struct {
		name                                    string
		runs                                    []LambdaRun
		minRuns                                 int
		wantComplete, wantConvergent, wantFlips bool
	}{
		{"empty group", nil, 3, false, false, false},
		{"empty group, min 0", nil, 0, true, false, false},
		{"all →", []LambdaRun{conv, conv, conv}, 3, true, true, false},
		{"all → but too few", []LambdaRun{conv, conv}, 3, false, true, false},
		{"states ignore decisions", []LambdaRun{conv, {State: vocab.LambdaConvergent, Refused: true}, conv}, 3, true, true, false},
		{"one ←", []LambdaRun{conv, div, conv}, 3, true, false, true},
		{"one <> neither converges nor flips", []LambdaRun{conv, rec, conv}, 3, true, false, false},
		{"one × neither converges nor flips", []LambdaRun{conv, conv, cha}, 3, true, false, false},
		{"all ←", []LambdaRun{div, div, div}, 2, true, false, true},
		{"no states, same decision and set", []LambdaRun{shipAB, shipBA, shipAB}, 3, true, true, false},
		{"no states, all refused", []LambdaRun{refused, refusedEmpty, refused}, 3, true, true, false},
		{"no states, same decision, other set", []LambdaRun{shipAB, shipA, shipAB}, 3, true, false, false},
		{"no states, decisions differ", []LambdaRun{shipA, refused, shipA}, 3, true, false, true},
		{"no states, single run", []LambdaRun{shipA}, 3, false, true, false},
		{"mixed: stated → and no-state agree", []LambdaRun{conv, shipA, shipA}, 3, true, true, false},
		{"mixed: stated → but cited sets differ", []LambdaRun{conv, shipAB, shipA}, 3, true, false, false},
		{"mixed: stated → but decisions differ", []LambdaRun{conv, refused, shipA}, 3, true, false, true},
		{"mixed: a ← flips though behaviour agrees", []LambdaRun{div, shipA, shipA}, 3, true, false, true},
		{"mixed: <> blocks convergence", []LambdaRun{rec, shipA, shipA}, 3, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			complete, convergent, flips := LambdaGroup(tt.runs, tt.minRuns)
			if complete != tt.wantComplete || convergent != tt.wantConvergent || flips != tt.wantFlips {
				t.Errorf("LambdaGroup = complete %v, convergent %v, flips %v; want %v, %v, %v",
					complete, convergent, flips, tt.wantComplete, tt.wantConvergent, tt.wantFlips)
			}
		})
	}
}
