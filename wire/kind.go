package wire

import "fmt"

// Kind is the kind of an input message, given by the subject it came on
// (SPEC §2.5). The values are dense from 0 so that [NumKinds]T arrays can be
// indexed by Kind.
type Kind int

const (
	KindTrace     Kind = iota // rag.trace.>: retrieval and answer together
	KindRetrieval             // rag.retrieval.>: the retrieval half
	KindAnswer                // rag.answer.>: the answer half
	KindJudgement             // rag.judgement.>

	NumKinds = 4
)

// String is the kind's name, as used in metric labels: "trace",
// "retrieval", "answer", "judgement".
func (k Kind) String() string {
	switch k {
	case KindTrace:
		return "trace"
	case KindRetrieval:
		return "retrieval"
	case KindAnswer:
		return "answer"
	case KindJudgement:
		return "judgement"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}
