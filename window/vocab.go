package window

import "github.com/shadoweval/shadoweval/vocab"

// The window's names for words of package vocab, which declares them: each
// is the vocab value itself, not a copy.
const (
	DefaultArm = vocab.DefaultArm // arm of an Observation with Arm ""

	LambdaNone       = vocab.LambdaNone
	LambdaConvergent = vocab.LambdaConvergent
	LambdaDivergent  = vocab.LambdaDivergent

	nLabels = vocab.NumLabels
)

// LambdaState is the λ state of a run. The group rule tells → and ← apart
// from the other stated ones (<> and ×) only.
type LambdaState = vocab.LambdaState

// JudgementLabels are the judgement labels of seed 003, in the order of
// its LABELS list: the rows and columns of the confusion matrix.
var JudgementLabels = vocab.Labels[:]

// TriageLabels are the triage labels of seed 004, in the order of
// Observation.Triage.
var TriageLabels = vocab.TriageLabels[:]

// labelIndex is the seed's `idx` lookup: exact, case-sensitive; -1 for a
// label outside the space.
func labelIndex(s string) int {
	i, _ := vocab.LabelIndex(s)
	return i
}
