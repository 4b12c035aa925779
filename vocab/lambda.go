package vocab

import "fmt"

// LambdaState is the λ state a run reports in lambda_state.
type LambdaState uint8

// The λ states; LambdaNone is a run that sent no state. The group rule
// (SPEC §3) tells only → and ← apart from the other stated ones.
const (
	LambdaNone       LambdaState = iota // "" (absent)
	LambdaConvergent                    // → convergent
	LambdaDivergent                     // ← divergent
	LambdaRecursive                     // <> recursive
	LambdaChaotic                       // × chaotic
)

// NumLambdaStates counts the states, LambdaNone included.
const NumLambdaStates = int(LambdaChaotic) + 1

var lambdaWords = [NumLambdaStates]string{"", "convergent", "divergent", "recursive", "chaotic"}

var lambdaSymbols = [NumLambdaStates]string{"", "→", "←", "<>", "×"}

// String returns the state's word, "" for LambdaNone.
func (l LambdaState) String() string {
	if int(l) < NumLambdaStates {
		return lambdaWords[l]
	}
	return fmt.Sprintf("LambdaState(%d)", int(l))
}

// Symbol returns the state's arrow as producers send it, "" for
// LambdaNone and for a value that is no state.
func (l LambdaState) Symbol() string {
	if int(l) < NumLambdaStates {
		return lambdaSymbols[l]
	}
	return ""
}

// LambdaStateOf is the state s spells exactly: a symbol, a word or "".
// Producers that differ in casing or spacing need the lenient parse of
// the checks (checks.ParseLambdaState).
func LambdaStateOf(s string) (LambdaState, bool) {
	switch s {
	case "":
		return LambdaNone, true
	case "→", "convergent":
		return LambdaConvergent, true
	case "←", "divergent":
		return LambdaDivergent, true
	case "<>", "recursive":
		return LambdaRecursive, true
	case "×", "chaotic":
		return LambdaChaotic, true
	}
	return LambdaNone, false
}
