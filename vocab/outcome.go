package vocab

// Outcome is what became of one incoming event (SPEC §6). Every message
// has exactly one.
type Outcome int

// The outcomes, in the order of Outcomes.
const (
	Scored Outcome = iota
	Unlabeled
	Rejected
	Duplicate
	Late
	JoinTimeout
)

// NumOutcomes counts the outcomes.
const NumOutcomes = int(JoinTimeout) + 1

// Outcomes names the outcomes, as metric labels and JSON keys.
var Outcomes = [NumOutcomes]string{"scored", "unlabeled", "rejected", "duplicate", "late", "join_timeout"}

func (o Outcome) String() string { return Outcomes[o] }
