package stream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/wire"
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
	Subjects map[wire.Kind]string
	// StartTime is where delivery starts (DeliverByStartTime).
	StartTime time.Time
	// MaxAge is the stream's MaxAge when the stream is created here; 0:
	// unlimited.
	MaxAge time.Duration
	// Replicas is the stream's replica count when the stream is created
	// here; 0: 1. An existing stream keeps its own (StreamReplicas).
	Replicas int
	// AckWait is how long the server waits for an ack before delivering a
	// message again; 0: DefaultAckWait.
	AckWait time.Duration
	// Heartbeat is the idle heartbeat of the consumer's pull requests: two
	// missed in a row (a dead server, a consumer leader gone, a pull that
	// got "no responders") make the client pull again. 0:
	// DefaultHeartbeat; nats.go accepts 500 ms to 30 s.
	Heartbeat time.Duration
	// OnError receives asynchronous consumer errors (missed heartbeats,
	// a deleted consumer, …).
	OnError func(error)
}

// DefaultAckWait is the consumers' ack wait when none is given: a message
// lost with a server is delivered again this soon.
const DefaultAckWait = 5 * time.Second

// DefaultHeartbeat is the pull requests' idle heartbeat when none is
// given: a consumer whose pull went unanswered pulls again after two.
const DefaultHeartbeat = time.Second

// TooFewServers reports whether err is the server's refusal to create a
// stream or bucket with more replicas than it has JetStream servers for
// (a single server, or a cluster smaller than the replica count).
func TooFewServers(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, id := range []server.ErrorIdentifier{server.JSStreamReplicasNotSupportedErr, server.JSClusterNoPeersErrF} {
		if uint16(apiErr.ErrorCode) == server.ApiErrors[id].ErrCode {
			return true
		}
	}
	return false
}

// consumeOptions are the Consume options of a consumer pulled with
// heartbeat hb (0: DefaultHeartbeat): nats.go pulls again on its own after
// two missed heartbeats, after a leader change and after a reconnection.
func consumeOptions(hb time.Duration) []jetstream.PullConsumeOpt {
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	return []jetstream.PullConsumeOpt{
		jetstream.PullHeartbeat(hb),
		jetstream.PullExpiry(max(jetstream.DefaultExpires, 2*hb)),
	}
}

// JetStreamSubscription is a running JetStream consumer: messages are
// delivered in stream order to one handler, one at a time, and each is
// acked after the handler returns.
type JetStreamSubscription struct {
	js       jetstream.JetStream
	str      jetstream.Stream
	cons     jetstream.Consumer
	cc       jetstream.ConsumeContext
	opt      JetStreamOptions
	patterns []kindPattern
	subjects []string
	handle   func(*Message)
	replicas int // the stream's

	// Owned by the delivering goroutine.
	lastDelivery uint64    // highest consumer sequence seen
	hole         bool      // a delivery went missing: fill before applying past it
	retryFill    time.Time // after a failed fill, not before
	stopCtx      context.Context
	stop         context.CancelFunc

	applied      atomic.Uint64 // stream sequence of the last message applied
	pending      atomic.Uint64 // num_pending: of the last handled message, or from Info
	behind       atomic.Bool   // num_pending of the last handled message > 0
	redeliveries atomic.Uint64
	ackErrors    atomic.Uint64
	fills        atomic.Uint64
	lastStored   atomic.Int64 // stored time (ns) of the last handled message
	waiting      atomic.Bool  // messages after applied, at the last Refresh
	nextStored   atomic.Int64 // stored time (ns) of the first message after applied, as last read
	nextSeq      atomic.Uint64
	prevAckFloor uint64      // ack floor of the consumer this one replaced
	stopped      atomic.Bool // Drain was called
}

type kindPattern struct {
	kind    wire.Kind
	pattern string
}

// ConsumeJetStream makes sure the stream exists, replaces the durable
// consumer with one starting at opt.StartTime (explicit acks, filtered on
// the kinds' subjects) and consumes it. For each message handle gets a
// Message whose Stored, Received (both the time the server stored the
// message), Seq, Delivered and Replayed are set; the message is acked once
// handle returns, so a message is acked only after it is applied. handle
// runs on one goroutine, in stream order, once per message: a message
// delivered again after it was applied (its ack was lost) is acked without
// handle, and one the server delivered that never arrived (lost with a
// server or a connection) is read from the stream as soon as the next
// delivery shows the hole, before that delivery is applied.
func ConsumeJetStream(ctx context.Context, nc *nats.Conn, opt JetStreamOptions, handle func(*Message)) (*JetStreamSubscription, error) {
	s := &JetStreamSubscription{opt: opt, handle: handle}
	for k, p := range opt.Subjects {
		if p != "" {
			s.patterns = append(s.patterns, kindPattern{k, p})
		}
	}
	if len(s.patterns) == 0 {
		return nil, errors.New("jetstream: every subject is empty")
	}
	sort.Slice(s.patterns, func(i, j int) bool { return s.patterns[i].kind < s.patterns[j].kind })
	s.subjects = make([]string, len(s.patterns))
	for i, p := range s.patterns {
		s.subjects[i] = p.pattern
	}
	var err error
	if s.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	str, err := s.js.Stream(ctx, opt.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		str, err = s.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        opt.Stream,
			Description: "shadoweval input events (created by shadoweval)",
			Subjects:    s.subjects,
			Storage:     jetstream.FileStorage,
			MaxAge:      opt.MaxAge,
			Replicas:    max(opt.Replicas, 1),
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			str, err = s.js.Stream(ctx, opt.Stream) // created meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: stream %s: %w", opt.Stream, err)
	}
	s.str, s.replicas = str, max(str.CachedInfo().Config.Replicas, 1)
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
		ackWait = DefaultAckWait
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
	if len(s.subjects) == 1 {
		cc.FilterSubject = s.subjects[0]
	} else {
		cc.FilterSubjects = s.subjects
	}
	cons, err := str.CreateConsumer(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: creating consumer %s on stream %s: %w", opt.Durable, opt.Stream, err)
	}
	s.cons = cons
	s.pending.Store(cons.CachedInfo().NumPending)
	s.behind.Store(cons.CachedInfo().NumPending > 0)
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	copts := append(consumeOptions(opt.Heartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if opt.OnError != nil && !s.stopped.Load() {
				opt.OnError(err)
			}
		}))
	s.cc, err = cons.Consume(s.deliver, copts...)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("jetstream: consuming %s: %w", opt.Durable, err)
	}
	return s, nil
}

// deliver applies a message of the consumer, in stream order, once.
func (s *JetStreamSubscription) deliver(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		s.ack(msg) // not a JetStream message: cannot happen on a pull consumer
		return
	}
	s.pending.Store(meta.NumPending)
	s.behind.Store(meta.NumPending > 0)
	if meta.Sequence.Consumer > s.lastDelivery+1 {
		// The server delivered something in between that never came.
		s.hole = true
	}
	s.lastDelivery = max(s.lastDelivery, meta.Sequence.Consumer)
	seq := meta.Sequence.Stream
	if seq <= s.applied.Load() {
		s.redeliveries.Add(1) // applied already; its ack was lost or late
		s.ack(msg)
		return
	}
	if s.hole && seq > s.applied.Load()+1 {
		if err := s.fill(seq); err != nil {
			// Applied in order once the stream answers: the message comes
			// back, and the hole is filled then.
			_ = msg.NakWithDelay(time.Second)
			if s.opt.OnError != nil && !s.stopped.Load() {
				s.opt.OnError(fmt.Errorf("jetstream: reading the stream before sequence %d: %w", seq, err))
			}
			return
		}
		s.hole = false
	}
	m := &Message{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers(), Delivered: meta.NumDelivered}
	if m.Delivered > 1 {
		s.redeliveries.Add(1)
	}
	s.apply(m, meta)
	s.ack(msg)
}

// apply hands a message of the stream to the handler, kind and times set.
func (s *JetStreamSubscription) apply(m *Message, meta *jetstream.MsgMetadata) {
	m.Stored, m.Received, m.Seq = meta.Timestamp, meta.Timestamp, meta.Sequence.Stream
	m.Replayed = m.Seq <= s.prevAckFloor
	if kind, ok := s.kindOf(m.Subject); ok {
		m.Kind = kind
		s.handle(m)
	}
	s.applied.Store(m.Seq)
	s.lastStored.Store(m.Stored.UnixNano())
}

// fill applies the consumer's messages after the last one applied and
// before sequence upTo, read from the stream: the hole a lost delivery
// left. After a failure it waits a second before reading again.
func (s *JetStreamSubscription) fill(upTo uint64) error {
	if time.Now().Before(s.retryFill) {
		return errors.New("the last attempt failed less than a second ago")
	}
	ctx, cancel := context.WithTimeout(s.stopCtx, 30*time.Second)
	defer cancel()
	from, since := s.applied.Load()+1, time.Time{}
	if from == 1 {
		from, since = 0, s.opt.StartTime // nothing applied yet
	}
	s.fills.Add(1)
	err := replayRange(ctx, s.js, s.opt.Stream, s.subjects, from, since, upTo, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
		if meta.Sequence.Stream > s.applied.Load() {
			s.apply(&Message{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers(), Delivered: 1}, meta)
		}
	})
	if err != nil {
		s.retryFill = time.Now().Add(time.Second)
	}
	return err
}

func (s *JetStreamSubscription) ack(msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		s.ackErrors.Add(1)
	}
}

// kindOf finds the kind whose pattern matches subject.
func (s *JetStreamSubscription) kindOf(subject string) (wire.Kind, bool) {
	for _, p := range s.patterns {
		if SubjectMatches(p.pattern, subject) {
			return p.kind, true
		}
	}
	return 0, false
}

// Pending is the consumer's num_pending as last seen: from the last
// delivered message, or from Refresh.
func (s *JetStreamSubscription) Pending() uint64 { return s.pending.Load() }

// Behind reports whether the stream held more messages for the consumer
// when the last handled message was delivered (or, before the first, when
// the consumer was created): a replay is in progress or the handler lags.
func (s *JetStreamSubscription) Behind() bool { return s.behind.Load() }

// Refresh asks the server for the consumer's num_pending and, while
// messages wait (undelivered, or delivered and not yet acked, that is not
// yet applied), for the stored time of the oldest of its messages after
// the last one applied (Lag).
func (s *JetStreamSubscription) Refresh(ctx context.Context) error {
	info, err := s.cons.Info(ctx)
	if err != nil {
		return err
	}
	s.pending.Store(info.NumPending)
	if info.NumPending == 0 && info.NumAckPending == 0 {
		s.waiting.Store(false)
		return nil
	}
	return readNext(ctx, s.str, s.applied.Load()+1, s.subjects, &s.waiting, &s.nextSeq, &s.nextStored)
}

// Lag is how far behind the stream the handler is at now: 0 when no
// message waited at the last look, else the time since the server stored
// the oldest message not yet applied (as far as Refresh last saw it).
func (s *JetStreamSubscription) Lag(now time.Time) time.Duration {
	if !s.waiting.Load() {
		return 0
	}
	return lag(now, s.applied.Load(), s.nextSeq.Load(), s.nextStored.Load(), s.lastStored.Load())
}

// readNext stores the sequence and stored time of the stream's first
// message of any of subjects at or after sequence from, and whether there
// is one.
func readNext(ctx context.Context, str jetstream.Stream, from uint64, subjects []string, found *atomic.Bool, seq *atomic.Uint64, stored *atomic.Int64) error {
	var first *jetstream.RawStreamMsg
	for _, subject := range subjects {
		m, err := str.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // none stored after it
		}
		if err != nil {
			return err
		}
		if first == nil || m.Sequence < first.Sequence {
			first = m
		}
	}
	found.Store(first != nil)
	if first != nil {
		stored.Store(first.Time.UnixNano())
		seq.Store(first.Sequence)
	}
	return nil
}

// lag is now minus the stored time of the oldest message not applied: the
// one read after the last applied message (next), or, once that one is
// applied too, at most the time since the last one applied was stored.
func lag(now time.Time, applied, nextSeq uint64, nextStored, lastStored int64) time.Duration {
	ref := lastStored
	if nextSeq > applied && nextStored != 0 {
		ref = nextStored
	}
	if ref == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, ref)), 0)
}

// Replicas is the stream's replica count (its own, when it existed).
func (s *JetStreamSubscription) Replicas() int { return s.replicas }

// Redeliveries counts messages delivered more than once (the server did not
// see their ack in time).
func (s *JetStreamSubscription) Redeliveries() uint64 { return s.redeliveries.Load() }

// Fills counts the reads of the stream that filled a hole a lost delivery
// left.
func (s *JetStreamSubscription) Fills() uint64 { return s.fills.Load() }

// Applied is the stream sequence of the last message applied.
func (s *JetStreamSubscription) Applied() uint64 { return s.applied.Load() }

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
	defer s.stop()
	select {
	case <-s.cc.Closed():
		return nil
	case <-ctx.Done():
		s.stop() // a hole being filled gives up
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
