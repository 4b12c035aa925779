package stream

// Partitioned consumption (SPEC §10): several replicas share the input
// through a static JetStream partitioned consumer group (orbit.go
// pcgroups).
//
// The stream puts the partition of each message's key token in front of
// its subject as it stores it (a subject transform computed by the
// server: PREFIX.<arm>.<key> → <partition>.PREFIX.<arm>.<key>). The group
// is static: the partition count and the members are fixed by the
// configuration, so no administrator has to add members, and the messages
// stay in the input stream (an elastic group copies them into a work
// queue that forgets what it delivered), from which a replica rebuilds its
// windows.
//
// Each member has one durable consumer filtered on its partitions; every
// instance of the member consumes it, the server pins one and the others
// are hot standbys. An instance rebuilds its state from the stream before
// it joins (from StartTime), and whenever it is pinned anew (a message
// with a pin id it has not seen) it first applies what the member's other
// instances applied since its own last message. Messages are applied in
// stream order on one goroutine and acked after; one already applied (a
// redelivery after a change of pin) is acked without applying it again.
//
// Messages without a key token are stored as they came. A consumer of
// their own, pinned to one instance of the cluster, hands them to
// OnUnkeyed.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/pcgroups"

	"github.com/shadoweval/shadoweval/wire"
)

// PartitionedOptions configure ConsumePartitioned.
type PartitionedOptions struct {
	// Stream is created when missing, with the partitioning transform;
	// an existing stream must have that transform.
	Stream string
	// Group is the consumer group's name (nats.durable).
	Group string
	// Subjects maps each kind to its PREFIX.> pattern; the prefixes have
	// one token count.
	Subjects   map[wire.Kind]string
	Partitions int
	// Members of the group and the one this instance is.
	Members []string
	Member  string
	// StartTime is how far back an instance rebuilds on joining.
	StartTime time.Time
	MaxAge    time.Duration // of a stream created here
	// Replicas of a stream created here; 0: 1. The group's bucket and the
	// consumers take the stream's.
	Replicas int
	// AckWait also sets how soon a standby takes over a silent pinned
	// instance and how soon a member's pull goes again after a lost
	// server (pcgroups derives the pin's lifetime and its pulls' expiry
	// from it); 0: DefaultAckWait.
	AckWait time.Duration
	// Heartbeat is the idle heartbeat of the unkeyed messages' consumer
	// (JetStreamOptions.Heartbeat); 0: DefaultHeartbeat.
	Heartbeat time.Duration
	OnError   func(error)
	// OnUnkeyed receives, on the one instance pinned for them, the
	// messages stored without a partition (no key token).
	OnUnkeyed func(*Message)
}

// PartitionedSubscription is this instance's part of a partitioned
// consumer group.
type PartitionedSubscription struct {
	js       jetstream.JetStream
	str      jetstream.Stream
	opt      PartitionedOptions
	patterns []kindPattern
	filters  []string // the member's partitions, as <p>.>
	handle   func(*Message)
	replicas int // the stream's

	mu        sync.Mutex // applying, in stream order
	applied   uint64     // the last stream sequence applied
	pin       string     // the pin id of the last delivered message
	delivered uint64     // the highest consumer sequence seen under pin
	ackFloor  uint64     // the member consumer's, as last read: below it, side effects were had
	ackAll    bool       // the member consumer acks all up to a message
	unacked   jetstream.Msg
	unackedN  int
	done      chan struct{} // closed by Stop: ends ackLoop
	stopOnce  sync.Once
	lastStore atomic.Int64
	// appliedSeq is applied for readers that must not wait for a catch-up.
	appliedSeq atomic.Uint64

	catchUps   atomic.Uint64
	deliveries atomic.Uint64 // messages the member's consumer delivered here
	ackErrors  atomic.Uint64
	pinned     atomic.Int64  // unix ns of the last delivery to this instance
	pending    atomic.Uint64 // the member consumer's num_pending, as last seen
	waiting    atomic.Bool   // the member's messages after applied, at the last RefreshPending
	nextSeq    atomic.Uint64 // the member's first message after applied, as last read
	nextStored atomic.Int64

	group   pcgroups.ConsumerGroupConsumeContext
	unkeyed jetstream.ConsumeContext
}

// PartitionTransform is the stream's subject transform for partitions
// partitions of subjects whose prefixes have prefixTokens tokens: the
// partition of the key token (the last of PREFIX.<arm>.<key>) goes first.
func PartitionTransform(prefixTokens, partitions int) (src, dest string) {
	n := prefixTokens + 2
	src = strings.TrimSuffix(strings.Repeat("*.", n), ".")
	parts := []string{fmt.Sprintf("{{partition(%d,%d)}}", partitions, n)}
	for i := 1; i <= n; i++ {
		parts = append(parts, fmt.Sprintf("{{wildcard(%d)}}", i))
	}
	return src, strings.Join(parts, ".")
}

// Partitioner computes a key's partition as the server's transform does.
type Partitioner struct {
	tr     server.SubjectTransformer
	prefix string // PREFIX.arm. of a subject the transform matches
}

// NewPartitioner returns the partitioner of the input subjects' transform.
func NewPartitioner(prefixTokens, partitions int) (*Partitioner, error) {
	src, dest := PartitionTransform(prefixTokens, partitions)
	tr, err := server.NewSubjectTransform(src, dest)
	if err != nil {
		return nil, fmt.Errorf("partition transform %s → %s: %w", src, dest, err)
	}
	return &Partitioner{tr: tr, prefix: strings.Repeat("x.", prefixTokens+1)}, nil
}

// Partition is the partition of key (a PartitionKey), -1 when key is not
// a single subject token.
func (p *Partitioner) Partition(key string) int {
	out, err := p.tr.Match(p.prefix + key)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(out[:strings.IndexByte(out, '.')])
	if err != nil {
		return -1
	}
	return n
}

// MemberPartitions lists the partitions of member in a static group of
// members over partitions partitions, as pcgroups assigns them.
func MemberPartitions(members []string, partitions int, member string) []int {
	var out []int
	for _, f := range pcgroups.GeneratePartitionFilters(members, uint(partitions), nil, member, ">") {
		if n, err := strconv.Atoi(strings.TrimSuffix(f, ".>")); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// prefixTokens is the token count of the patterns' PREFIX (PREFIX.>).
func prefixTokens(patterns []string) (int, error) {
	n := -1
	for _, p := range patterns {
		prefix, ok := strings.CutSuffix(p, ".>")
		if !ok {
			return 0, fmt.Errorf("partitions need PREFIX.> subjects, got %q", p)
		}
		t := strings.Count(prefix, ".") + 1
		if n >= 0 && t != n {
			return 0, fmt.Errorf("partitioned subjects need prefixes of one length, got %s", strings.Join(patterns, ", "))
		}
		n = t
	}
	return n, nil
}

// ConsumePartitioned joins this instance to the member's consumer: the
// stream and group are created when missing, the member's partitions are
// replayed from opt.StartTime, then consumed. handle gets each message
// with the partition and key tokens taken off its subject (PREFIX.<arm>),
// Stored, Received, Seq and Delivered set, and Replayed for a message the
// member had acked before this instance joined. handle runs on one
// goroutine at a time, in stream order.
func ConsumePartitioned(ctx context.Context, nc *nats.Conn, opt PartitionedOptions, handle func(*Message)) (*PartitionedSubscription, error) {
	s := &PartitionedSubscription{opt: opt, handle: handle}
	for k, p := range opt.Subjects {
		if p != "" {
			s.patterns = append(s.patterns, kindPattern{k, p})
		}
	}
	slices.SortFunc(s.patterns, func(a, b kindPattern) int { return int(a.kind) - int(b.kind) })
	subjects := make([]string, len(s.patterns))
	for i, p := range s.patterns {
		subjects[i] = p.pattern
	}
	tokens, err := prefixTokens(subjects)
	if err != nil {
		return nil, err
	}
	if s.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	str, err := s.ensureStream(ctx, subjects, tokens)
	if err != nil {
		return nil, err
	}
	s.str, s.replicas = str, max(str.CachedInfo().Config.Replicas, 1)
	if err := retryWhileStarting(ctx, func() error {
		_, err := pcgroups.CreateStatic(ctx, s.js, opt.Stream, opt.Group, uint(opt.Partitions), nil, opt.Members, nil)
		return err
	}); err != nil {
		return nil, fmt.Errorf("consumer group %s on stream %s: %w (changing cluster.partitions or the members needs the group deleted first: nats kv del static-consumer-groups %s.%s)", opt.Group, opt.Stream, err, opt.Stream, opt.Group)
	}
	for _, p := range MemberPartitions(opt.Members, opt.Partitions, opt.Member) {
		s.filters = append(s.filters, strconv.Itoa(p)+".>")
	}
	if len(s.filters) == 0 {
		return nil, fmt.Errorf("member %q has no partition (members %v, %d partitions)", opt.Member, opt.Members, opt.Partitions)
	}
	tmpl, err := s.memberConsumerConfig(ctx, str)
	if err != nil {
		return nil, err
	}
	// Rebuild before joining: a pinned instance then goes on from the
	// member's ack floor, and messages up to what the rebuild applied are
	// acked without being applied twice.
	if err := s.resume(ctx, 0, false); err != nil {
		return nil, err
	}
	s.ackAll = tmpl.AckPolicy == jetstream.AckAllPolicy
	s.done = make(chan struct{})
	go s.ackLoop()
	s.group, err = pcgroups.StaticConsume(ctx, s.js, opt.Stream, opt.Group, opt.Member, s.deliver, tmpl)
	if err != nil {
		close(s.done)
		return nil, fmt.Errorf("joining consumer group %s as member %s: %w", opt.Group, opt.Member, err)
	}
	if opt.OnUnkeyed != nil {
		if err := s.consumeUnkeyed(ctx, str, subjects); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// retryWhileStarting calls f until it succeeds, fails for another reason
// than a JetStream asset still being made (no responders, a request timed
// out, its stream not found yet), or about 15 s have passed: members that
// start together on a fresh cluster each make the consumer groups'
// bucket, and until its stream exists and has a leader the others'
// requests find nobody to answer them.
func retryWhileStarting(ctx context.Context, f func() error) error {
	wait := 50 * time.Millisecond
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := f()
		if err == nil || !(errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)) ||
			ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// ensureStream creates the stream with the partitioning transform, or
// checks that an existing one has it.
func (s *PartitionedSubscription) ensureStream(ctx context.Context, subjects []string, tokens int) (jetstream.Stream, error) {
	src, dest := PartitionTransform(tokens, s.opt.Partitions)
	str, err := s.js.Stream(ctx, s.opt.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		str, err = s.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:             s.opt.Stream,
			Description:      "shadoweval input events, partitioned by key (created by shadoweval)",
			Subjects:         subjects,
			Storage:          jetstream.FileStorage,
			MaxAge:           s.opt.MaxAge,
			Replicas:         max(s.opt.Replicas, 1),
			SubjectTransform: &jetstream.SubjectTransformConfig{Source: src, Destination: dest},
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			str, err = s.js.Stream(ctx, s.opt.Stream)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: stream %s: %w", s.opt.Stream, err)
	}
	tr := str.CachedInfo().Config.SubjectTransform
	if tr == nil || tr.Source != src || tr.Destination != dest {
		have := "none"
		if tr != nil {
			have = tr.Source + " → " + tr.Destination
		}
		return nil, fmt.Errorf("jetstream: stream %s has subject transform %s; %d partitions need %s → %s (a stream made for another partition count or none cannot be reused)", s.opt.Stream, have, s.opt.Partitions, src, dest)
	}
	return str, nil
}

// memberConsumerConfig is the template pcgroups creates the member's
// consumer from. pcgroups creates it on every join, and the server refuses
// a config other than the existing consumer's, so an existing consumer's
// own config is reused; a new one starts at StartTime.
func (s *PartitionedSubscription) memberConsumerConfig(ctx context.Context, str jetstream.Stream) (jetstream.ConsumerConfig, error) {
	name := s.opt.Group + "-" + s.opt.Member
	if c, err := str.Consumer(ctx, name); err == nil {
		info := c.CachedInfo()
		s.ackFloor = info.AckFloor.Stream
		return info.Config, nil
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return jetstream.ConsumerConfig{}, fmt.Errorf("jetstream: consumer %s: %w", name, err)
	}
	ackWait := s.opt.AckWait
	if ackWait <= 0 {
		ackWait = DefaultAckWait
	}
	start := s.opt.StartTime.UTC()
	return jetstream.ConsumerConfig{
		Description:   "shadoweval: member " + s.opt.Member + " of consumer group " + s.opt.Group,
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &start,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       ackWait,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
	}, nil
}

// deliver applies a message of the member's consumer.
func (s *PartitionedSubscription) deliver(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		s.ack(msg) // not a JetStream message: cannot happen on a pull consumer
		return
	}
	s.pinned.Store(time.Now().UnixNano())
	s.deliveries.Add(1)
	s.pending.Store(meta.NumPending)
	s.mu.Lock()
	// Pinned anew, what the member's other instances applied since this
	// one's last message comes first; under the same pin, a consumer
	// sequence skipped is a delivery lost in flight (with a server or a
	// connection), which a later ack would cover (AckAll): it is read
	// from the stream first.
	pin := msg.Headers().Get("Nats-Pin-Id")
	hole := pin != s.pin || (s.delivered > 0 && meta.Sequence.Consumer > s.delivered+1)
	if pin != s.pin {
		s.pin, s.delivered = pin, 0
	}
	if hole && meta.Sequence.Stream > s.applied+1 {
		if err := s.resume(context.Background(), meta.Sequence.Stream, false); err != nil {
			s.mu.Unlock()
			s.reportError(fmt.Errorf("catching up before sequence %d: %w", meta.Sequence.Stream, err))
			_ = msg.Nak() // applied in order once the stream answers
			s.pin = ""
			return
		}
	}
	s.delivered = max(s.delivered, meta.Sequence.Consumer)
	if meta.Sequence.Stream > s.applied {
		m := s.message(msg.Subject(), msg.Data(), msg.Headers(), meta, false)
		m.Delivered = meta.NumDelivered
		s.apply(m)
	}
	if !s.ackAll {
		s.mu.Unlock()
		s.ack(msg)
		return
	}
	// One ack covers every message delivered before it: a batch's last
	// is acked, or the last one applied once deliveries pause.
	s.unacked = msg
	if s.unackedN++; s.unackedN >= ackEvery {
		s.flushAckLocked()
	}
	s.mu.Unlock()
}

// ackEvery is how many applied messages one ack covers at most (AckAll):
// an ack costs the server about as much as the message it acks.
const ackEvery = 256

// flushAckLocked acks the last message applied, if not yet.
func (s *PartitionedSubscription) flushAckLocked() {
	if s.unacked != nil {
		s.ack(s.unacked)
		s.unacked, s.unackedN = nil, 0
	}
}

// ackLoop acks what was applied since the last ack, so that a pause in
// deliveries leaves nothing unacked for long.
func (s *PartitionedSubscription) ackLoop() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.mu.Lock()
			s.flushAckLocked()
			s.mu.Unlock()
		}
	}
}

func (s *PartitionedSubscription) ack(msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		s.ackErrors.Add(1)
	}
}

// message builds the Message of a stored message whose subject has its
// partition token taken off already.
func (s *PartitionedSubscription) message(subject string, data []byte, h nats.Header, meta *jetstream.MsgMetadata, replayed bool) *Message {
	m := &Message{Data: data, Header: h, Stored: meta.Timestamp, Received: meta.Timestamp, Seq: meta.Sequence.Stream, Delivered: 1}
	m.Replayed = replayed || m.Seq <= s.ackFloor
	if k, ok := s.kindOf(subject); ok {
		m.Kind = k
	}
	// PREFIX.<arm>.<key> → PREFIX.<arm>: the arm is the subject's last
	// token to the handler.
	if i := strings.LastIndexByte(subject, '.'); i > 0 {
		subject = subject[:i]
	}
	m.Subject = subject
	return m
}

func (s *PartitionedSubscription) kindOf(subject string) (wire.Kind, bool) {
	for _, p := range s.patterns {
		if SubjectMatches(p.pattern, subject) {
			return p.kind, true
		}
	}
	return 0, false
}

func (s *PartitionedSubscription) apply(m *Message) {
	s.handle(m)
	s.applied = m.Seq
	s.appliedSeq.Store(m.Seq)
	s.lastStore.Store(m.Stored.UnixNano())
}

// resume applies the member's messages after the last one applied (from
// StartTime before the first) up to before upTo (0: the end of the stream
// as it starts), with s.mu held by the caller or not yet shared. replayed
// marks them all as applied elsewhere, side effects included.
func (s *PartitionedSubscription) resume(ctx context.Context, upTo uint64, replayed bool) error {
	if s.applied == 0 {
		return s.catchUp(ctx, 0, s.opt.StartTime, upTo, replayed)
	}
	return s.catchUp(ctx, s.applied+1, time.Time{}, upTo, replayed)
}

// catchUp applies, in stream order, the member's messages from sequence
// from (or time since, when from is 0) up to before upTo.
func (s *PartitionedSubscription) catchUp(ctx context.Context, from uint64, since time.Time, upTo uint64, replayed bool) error {
	s.catchUps.Add(1)
	err := replayRange(ctx, s.js, s.opt.Stream, s.filters, from, since, upTo, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) {
		if meta.Sequence.Stream <= s.applied {
			return
		}
		subject := msg.Subject()
		if i := strings.IndexByte(subject, '.'); i >= 0 {
			subject = subject[i+1:] // the partition token
		}
		s.apply(s.message(subject, msg.Data(), msg.Headers(), meta, replayed))
	})
	if err != nil {
		return fmt.Errorf("jetstream: replaying member %s: %w", s.opt.Member, err)
	}
	return nil
}

// consumeUnkeyed consumes the messages stored without a partition, on
// whichever instance of the cluster the server pins.
func (s *PartitionedSubscription) consumeUnkeyed(ctx context.Context, str jetstream.Stream, subjects []string) error {
	name := s.opt.Group + "-unkeyed"
	const group = "unkeyed"
	cons, err := str.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        name,
		Description:    "shadoweval: messages without a partition key token, dead-lettered",
		FilterSubjects: subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.ackWait(),
		PriorityGroups: []string{group},
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PinnedTTL:      30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("jetstream: consumer %s: %w", name, err)
	}
	s.unkeyed, err = cons.Consume(func(msg jetstream.Msg) {
		if meta, err := msg.Metadata(); err == nil {
			m := &Message{Subject: msg.Subject(), Data: msg.Data(), Header: msg.Headers(), Stored: meta.Timestamp, Received: meta.Timestamp, Seq: meta.Sequence.Stream, Delivered: meta.NumDelivered}
			m.Kind, _ = s.kindOf(m.Subject)
			s.opt.OnUnkeyed(m)
		}
		s.ack(msg)
	}, append(consumeOptions(s.opt.Heartbeat), jetstream.PullPriorityGroup(group),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { s.reportError(err) }))...)
	if err != nil {
		return fmt.Errorf("jetstream: consuming %s: %w", name, err)
	}
	return nil
}

func (s *PartitionedSubscription) ackWait() time.Duration {
	if s.opt.AckWait > 0 {
		return s.opt.AckWait
	}
	return DefaultAckWait
}

func (s *PartitionedSubscription) reportError(err error) {
	if s.opt.OnError != nil {
		s.opt.OnError(err)
	}
}

// Partitions are the member's partitions.
func (s *PartitionedSubscription) Partitions() []int {
	return MemberPartitions(s.opt.Members, s.opt.Partitions, s.opt.Member)
}

// Applied is the stream sequence of the last message applied.
func (s *PartitionedSubscription) Applied() uint64 { return s.appliedSeq.Load() }

// LastStored is the stored time of the last message applied; zero before
// the first.
func (s *PartitionedSubscription) LastStored() time.Time {
	if ns := s.lastStore.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// LastDelivery is when the member's consumer last delivered to this
// instance (it was pinned then); zero if never.
func (s *PartitionedSubscription) LastDelivery() time.Time {
	if ns := s.pinned.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// CatchUps counts the replays this instance ran (on joining, and each
// time it was pinned anew).
func (s *PartitionedSubscription) CatchUps() uint64 { return s.catchUps.Load() }

// Deliveries counts the messages the member's consumer delivered to this
// instance: it was pinned for them.
func (s *PartitionedSubscription) Deliveries() uint64 { return s.deliveries.Load() }

// AckErrors counts acks that could not be sent.
func (s *PartitionedSubscription) AckErrors() uint64 { return s.ackErrors.Load() }

// Refresh applies what the member's pinned instance applied since this
// instance's last message, unless this instance was delivered to within
// quiet: a standby stays current, and a pinned instance is left to its
// consumer.
func (s *PartitionedSubscription) Refresh(ctx context.Context, quiet time.Duration) error {
	if t := s.LastDelivery(); !t.IsZero() && time.Since(t) < quiet {
		return nil
	}
	// What the member acked was applied, dead letters included, by its
	// pinned instance; the rest may never be, if that instance is gone.
	if c, err := s.js.Consumer(ctx, s.opt.Stream, s.opt.Group+"-"+s.opt.Member); err == nil {
		s.mu.Lock()
		s.ackFloor = max(s.ackFloor, c.CachedInfo().AckFloor.Stream)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resume(ctx, 0, false)
}

// RefreshPending reads the member consumer's num_pending and ack floor
// and, while messages wait for the member (undelivered, delivered and not
// yet acked, or acked by its other instance past this one), the stored
// time of the oldest of the member's messages this instance has not
// applied (Lag).
func (s *PartitionedSubscription) RefreshPending(ctx context.Context) error {
	c, err := s.js.Consumer(ctx, s.opt.Stream, s.opt.Group+"-"+s.opt.Member)
	if err != nil {
		return err
	}
	info := c.CachedInfo()
	s.pending.Store(info.NumPending)
	if info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream <= s.Applied() {
		s.waiting.Store(false)
		return nil
	}
	return readNext(ctx, s.str, s.Applied()+1, s.filters, &s.waiting, &s.nextSeq, &s.nextStored)
}

// Lag is how far behind the stream this instance is at now: 0 when none
// of the member's messages waited for it at the last look, else the time
// since the server stored the oldest one it has not applied (as far as
// RefreshPending last saw it).
func (s *PartitionedSubscription) Lag(now time.Time) time.Duration {
	if !s.waiting.Load() {
		return 0
	}
	return lag(now, s.Applied(), s.nextSeq.Load(), s.nextStored.Load(), s.lastStore.Load())
}

// Replicas is the stream's replica count (its own, when it existed).
func (s *PartitionedSubscription) Replicas() int { return s.replicas }

// Pending is the member consumer's num_pending as last seen: from the last
// message delivered here, or from RefreshPending.
func (s *PartitionedSubscription) Pending() uint64 { return s.pending.Load() }

// Stop leaves the group; a message being applied is finished first.
// Messages delivered and not applied are delivered again, to the member's
// next pinned instance.
func (s *PartitionedSubscription) Stop() {
	if s.group != nil {
		s.group.Stop()
	}
	if s.unkeyed != nil {
		s.unkeyed.Stop()
	}
	s.mu.Lock()
	s.flushAckLocked() // what was applied is not delivered again
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.done) })
}
