package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStreamOptions configure ConsumeJetStream.
type JetStreamOptions struct {
	// Stream is the stream name; it is created, file-backed, with the
	// input subjects when missing. An existing stream is used as it is.
	Stream string
	// Durable is the consumer name. The consumer is deleted and created
	// again on every call, starting at StartTime: the caller's state is
	// rebuilt from the stream, so the old consumer's position is of no use.
	Durable string
	// Subjects maps each kind to its subject pattern; an empty pattern
	// turns the kind off. The patterns must not overlap (one consumer
	// filters on all of them).
	Subjects map[Kind]string
	// StartTime is where delivery starts (DeliverByStartTime).
	StartTime time.Time
	// MaxAge is the stream's MaxAge when the stream is created here; 0:
	// unlimited.
	MaxAge time.Duration
	// AckWait is how long the server waits for an ack before delivering a
	// message again; 0: 30 s.
	AckWait time.Duration
	// OnError receives asynchronous consumer errors (missed heartbeats,
	// a deleted consumer, …).
	OnError func(error)
}

// JetStreamSubscription is a running JetStream consumer: messages are
// delivered in stream order to one handler, one at a time, and each is
// acked after the handler returns.
type JetStreamSubscription struct {
	cons     jetstream.Consumer
	cc       jetstream.ConsumeContext
	patterns []kindPattern

	pending      atomic.Uint64 // num_pending: of the last handled message, or from Info
	behind       atomic.Bool   // num_pending of the last handled message > 0
	redeliveries atomic.Uint64
	ackErrors    atomic.Uint64
	lastStored   atomic.Int64 // stored time (ns) of the last handled message
	prevAckFloor uint64       // ack floor of the consumer this one replaced
	stopped      atomic.Bool  // Drain was called
}

type kindPattern struct {
	kind    Kind
	pattern string
}

// ConsumeJetStream makes sure the stream exists, replaces the durable
// consumer with one starting at opt.StartTime (explicit acks, filtered on
// the kinds' subjects) and consumes it. For each message handle gets a
// Message whose Stored, Received (both the time the server stored the
// message), Seq, Delivered and Replayed are set; the message is acked once
// handle returns, so a message is acked only after it is applied. handle
// runs on one goroutine, in stream order.
func ConsumeJetStream(ctx context.Context, nc *nats.Conn, opt JetStreamOptions, handle func(*Message)) (*JetStreamSubscription, error) {
	s := &JetStreamSubscription{}
	for k, p := range opt.Subjects {
		if p != "" {
			s.patterns = append(s.patterns, kindPattern{k, p})
		}
	}
	if len(s.patterns) == 0 {
		return nil, errors.New("jetstream: every subject is empty")
	}
	sort.Slice(s.patterns, func(i, j int) bool { return s.patterns[i].kind < s.patterns[j].kind })
	subjects := make([]string, len(s.patterns))
	for i, p := range s.patterns {
		subjects[i] = p.pattern
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	str, err := js.Stream(ctx, opt.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		str, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        opt.Stream,
			Description: "shadoweval input events (created by shadoweval)",
			Subjects:    subjects,
			Storage:     jetstream.FileStorage,
			MaxAge:      opt.MaxAge,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			str, err = js.Stream(ctx, opt.Stream) // created meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: stream %s: %w", opt.Stream, err)
	}
	// What the consumer being replaced had acked was applied, dead letters
	// included, by an earlier process: its replay only rebuilds state.
	if old, err := str.Consumer(ctx, opt.Durable); err == nil {
		s.prevAckFloor = old.CachedInfo().AckFloor.Stream
	}
	if err := str.DeleteConsumer(ctx, opt.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("jetstream: deleting consumer %s: %w", opt.Durable, err)
	}
	ackWait := opt.AckWait
	if ackWait <= 0 {
		ackWait = 30 * time.Second
	}
	start := opt.StartTime.UTC()
	cc := jetstream.ConsumerConfig{
		Durable:       opt.Durable,
		Description:   "shadoweval: replays the longest window on start, then follows",
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &start,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
	}
	if len(subjects) == 1 {
		cc.FilterSubject = subjects[0]
	} else {
		cc.FilterSubjects = subjects
	}
	cons, err := str.CreateConsumer(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: creating consumer %s on stream %s: %w", opt.Durable, opt.Stream, err)
	}
	s.cons = cons
	s.pending.Store(cons.CachedInfo().NumPending)
	s.behind.Store(cons.CachedInfo().NumPending > 0)
	s.cc, err = cons.Consume(func(msg jetstream.Msg) { s.deliver(msg, handle) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if opt.OnError != nil && !s.stopped.Load() {
				opt.OnError(err)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("jetstream: consuming %s: %w", opt.Durable, err)
	}
	return s, nil
}

func (s *JetStreamSubscription) deliver(msg jetstream.Msg, handle func(*Message)) {
	m := &Message{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers()}
	meta, err := msg.Metadata()
	if err == nil {
		m.Stored, m.Seq, m.Delivered = meta.Timestamp, meta.Sequence.Stream, meta.NumDelivered
		m.Replayed = m.Seq <= s.prevAckFloor
	} else {
		m.Stored = time.Now() // not a JetStream message: cannot happen on a pull consumer
	}
	m.Received = m.Stored
	kind, ok := s.kindOf(m.Subject)
	if ok {
		m.Kind = kind
		if m.Delivered > 1 {
			s.redeliveries.Add(1)
		}
		handle(m)
	}
	if err := msg.Ack(); err != nil {
		s.ackErrors.Add(1)
	}
	s.lastStored.Store(m.Stored.UnixNano())
	if meta != nil {
		s.pending.Store(meta.NumPending)
		s.behind.Store(meta.NumPending > 0)
	}
}

// kindOf finds the kind whose pattern matches subject.
func (s *JetStreamSubscription) kindOf(subject string) (Kind, bool) {
	for _, p := range s.patterns {
		if SubjectMatches(p.pattern, subject) {
			return p.kind, true
		}
	}
	return 0, false
}

// Pending is the consumer's num_pending as last seen: from the last
// delivered message, or from RefreshPending.
func (s *JetStreamSubscription) Pending() uint64 { return s.pending.Load() }

// Behind reports whether the stream held more messages for the consumer
// when the last handled message was delivered (or, before the first, when
// the consumer was created): a replay is in progress or the handler lags.
func (s *JetStreamSubscription) Behind() bool { return s.behind.Load() }

// RefreshPending asks the server for the consumer's num_pending.
func (s *JetStreamSubscription) RefreshPending(ctx context.Context) error {
	info, err := s.cons.Info(ctx)
	if err != nil {
		return err
	}
	s.pending.Store(info.NumPending)
	return nil
}

// Redeliveries counts messages delivered more than once (the server did not
// see their ack in time).
func (s *JetStreamSubscription) Redeliveries() uint64 { return s.redeliveries.Load() }

// AckErrors counts acks that could not be sent.
func (s *JetStreamSubscription) AckErrors() uint64 { return s.ackErrors.Load() }

// LastStored is the stored time of the last handled message; zero before
// the first.
func (s *JetStreamSubscription) LastStored() time.Time {
	ns := s.lastStored.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Closed is closed once the consumer stopped, by Drain or because the
// server deleted it.
func (s *JetStreamSubscription) Closed() <-chan struct{} { return s.cc.Closed() }

// Drain stops fetching, lets the handler finish the messages already
// received (acking each) and returns once they are done or ctx is.
func (s *JetStreamSubscription) Drain(ctx context.Context) error {
	s.stopped.Store(true)
	s.cc.Drain()
	select {
	case <-s.cc.Closed():
		return nil
	case <-ctx.Done():
		s.cc.Stop()
		return fmt.Errorf("jetstream drain: %w", context.Cause(ctx))
	}
}

// SubjectMatches reports whether subject matches the NATS subject pattern
// (tokens split on '.', '*' one token, '>' one or more trailing tokens).
func SubjectMatches(pattern, subject string) bool {
	for {
		pi := strings.IndexByte(pattern, '.')
		si := strings.IndexByte(subject, '.')
		ptok, stok := pattern, subject
		if pi >= 0 {
			ptok = pattern[:pi]
		}
		if si >= 0 {
			stok = subject[:si]
		}
		switch {
		case ptok == ">":
			return pi < 0 && stok != ""
		case ptok != "*" && ptok != stok:
			return false
		case stok == "":
			return false
		}
		if pi < 0 || si < 0 {
			return pi < 0 && si < 0
		}
		pattern, subject = pattern[pi+1:], subject[si+1:]
	}
}
