package stream

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

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

// Message is one received input message. Data and Header are nats.go's
// own (not copied) and may be kept; the Message itself is refilled by
// Subscribe for the next message of its subscription (see there).
type Message struct {
	Kind     Kind
	Subject  string
	Data     []byte
	Header   nats.Header
	Received time.Time
	// Stored is when the JetStream server stored the message; zero for a
	// core NATS message.
	Stored time.Time
	// Seq is the stream sequence of a JetStream message (0: core NATS) and
	// Delivered how many times the server delivered it (1 the first time).
	Seq       uint64
	Delivered uint64
	// Replayed is set on a JetStream message that an earlier consumer of
	// the same name had acked: it was applied before, side effects (dead
	// letters) included, and is delivered again to rebuild the windows.
	Replayed bool
	// Worker numbers the goroutine that delivered the message, from 0 to
	// Workers(workers)-1 (Subscribe), so a handler can keep state per
	// goroutine that no other delivering goroutine touches.
	Worker int
}

// Workers is how many delivering goroutines Subscribe with workers per
// kind numbers: Message.Worker < Workers(workers).
func Workers(workers int) int { return NumKinds * max(workers, 1) }

// ArmFromSubject is the last token of subject (SPEC §2.2: the arm when the
// event names none); "" when the subject has a single token or its last
// token is empty or a wildcard.
func ArmFromSubject(subject string) string {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 {
		return ""
	}
	arm := subject[i+1:]
	if arm == "*" || arm == ">" {
		return ""
	}
	return arm
}

// MsgID is the Nats-Msg-Id header (JetStream's de-duplication id), matched
// exactly as the server does.
func MsgID(h nats.Header) string {
	return h.Get(nats.MsgIdHdr)
}

// Traceparent is the W3C traceparent header, its name matched
// case-insensitively (publishers write "traceparent" or "Traceparent").
func Traceparent(h nats.Header) string {
	if v := h.Get("traceparent"); v != "" {
		return v
	}
	for k, vs := range h {
		if len(vs) > 0 && strings.EqualFold(k, "traceparent") {
			return vs[0]
		}
	}
	return ""
}
