package stream

import (
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/wire"
)

// Message is one received input message. Data and Header are nats.go's
// own (not copied) and may be kept; the Message itself is refilled by
// Subscribe for the next message of its subscription (see there).
type Message struct {
	Kind     wire.Kind
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
