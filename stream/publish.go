package stream

import (
	"errors"
	"fmt"
	"net/textproto"

	"github.com/go-json-experiment/json"
	"github.com/nats-io/nats.go"
)

// Headers set on dead-lettered messages.
const (
	HeaderReason    = "Shadoweval-Reason"
	HeaderSubject   = "Shadoweval-Subject"
	HeaderTruncated = "Shadoweval-Truncated"
)

// maxReasonLen caps the reason header: reasons quote input values.
const maxReasonLen = 1024

// Publisher publishes the sidecar's outputs: dead letters, alerts and
// verdicts. It is safe for concurrent use.
type Publisher struct {
	nc *nats.Conn
}

// NewPublisher publishes on nc.
func NewPublisher(nc *nats.Conn) *Publisher { return &Publisher{nc: nc} }

// DeadLetter republishes the original bytes of m on subject with the
// original headers plus Shadoweval-Reason (reason, at most 1 KiB) and
// Shadoweval-Subject (the subject m came on). When the result would exceed
// the server's max payload, the data is cut to fit and
// Shadoweval-Truncated: true is set; if the headers alone do not fit, the
// original headers are dropped, then the reason is shortened. Like any core NATS publish it only
// buffers: errors are those of nats.go (closed connection, bad subject).
func (p *Publisher) DeadLetter(subject string, m *Message, reason string) error {
	if m == nil {
		return errors.New("dead letter: nil message")
	}
	if len(reason) > maxReasonLen {
		reason = truncateUTF8(reason, maxReasonLen)
	}
	h := make(nats.Header, len(m.Header)+3)
	for k, vs := range m.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set(HeaderReason, reason)
	h.Set(HeaderSubject, m.Subject)
	data := m.Data
	if limit := p.nc.MaxPayload(); limit > 0 && int64(headerSize(h)+len(data)) > limit {
		h.Set(HeaderTruncated, "true")
		if int64(headerSize(h)) >= limit {
			h = nats.Header{
				HeaderReason:    {reason},
				HeaderSubject:   {m.Subject},
				HeaderTruncated: {"true"},
			}
			if over := int64(headerSize(h)) - limit; over >= 0 {
				// A tiny max payload: the reason gives way too.
				keep := max(int64(len(reason))-over-1, 0)
				h.Set(HeaderReason, truncateUTF8(reason, int(keep)))
			}
		}
		room := limit - int64(headerSize(h))
		if room < 0 {
			room = 0
		}
		if int64(len(data)) > room {
			data = data[:room]
		}
	}
	if err := p.nc.PublishMsg(&nats.Msg{Subject: subject, Data: data, Header: h}); err != nil {
		return fmt.Errorf("dead letter to %s: %w", subject, err)
	}
	return nil
}

// PublishJSON marshals v with github.com/go-json-experiment/json (nil
// slices and maps encode as [] and {}) and publishes it on subject.
func (p *Publisher) PublishJSON(subject string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	if err := p.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}

// headerSize is the encoded size of h as nats.go writes it, which the
// server counts against the max payload together with the data.
func headerSize(h nats.Header) int {
	if len(h) == 0 {
		return 0
	}
	n := len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(textproto.TrimString(v)) + len(": \r\n")
		}
	}
	return n
}

// truncateUTF8 cuts s to at most n bytes without splitting a code point.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
