package vocab

// Judgement agents (SPEC §2.4).
const (
	AgentScholar = "scholar"
	AgentAuditor = "auditor"
)

// Judgement labels of seed 003 (SPEC §2.4).
const (
	LabelValid        = "VALID"
	LabelNotInContext = "NOT_IN_CONTEXT"
	LabelReject       = "REJECT"
	LabelAbstain      = "ABSTAIN"
)

// Labels is the label space of seed 003 in the reference order, which is
// also the row and column order of its confusion matrix.
var Labels = [...]string{LabelValid, LabelNotInContext, LabelReject, LabelAbstain}

// NumLabels is the size of the label space.
const NumLabels = len(Labels)

// LabelIndex is the position of label in Labels: the seed's exact,
// case-sensitive `idx` lookup. ok is false outside the label space.
func LabelIndex(label string) (i int, ok bool) {
	switch label {
	case LabelValid:
		return 0, true
	case LabelNotInContext:
		return 1, true
	case LabelReject:
		return 2, true
	case LabelAbstain:
		return 3, true
	}
	return -1, false
}
