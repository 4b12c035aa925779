package stream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shadoweval/shadoweval/wire"
)

// Workers is how many delivering goroutines Subscribe with workers per
// kind numbers: Message.Worker < Workers(workers).
func Workers(workers int) int { return wire.NumKinds * max(workers, 1) }

// Subscription is a set of core NATS subscriptions, one per kind.
type Subscription struct {
	subs []*nats.Subscription // in Kind order
	mu   sync.Mutex
	// dropped keeps the final count of subscriptions that are gone, whose
	// Dropped() no longer answers.
	dropped map[*nats.Subscription]uint64
}

// Subscribe subscribes to each kind's subject with core NATS
// (at-most-once). pendingMsgs and pendingBytes are the limits of messages
// buffered in the client for one kind before it drops, shared evenly by
// the kind's workers so that more workers do not buffer more (0 keeps the
// nats.go defaults per subscription, -1 is unlimited); drops are counted
// by Dropped and reported through ConnOptions.OnSlowConsumer.
//
// The SUB protocol lines are buffered like any publish: call nc.Flush (or
// FlushTimeout) afterwards to know the server has the interest, before
// declaring readiness.
//
// With workers > 1 each kind has that many subscriptions in a queue group
// of their own, which the server gives each message to exactly one of:
// the messages of a kind are handled by workers goroutines at once, in no
// particular order between them. The group's name is new for each call,
// so other processes (replicas) still receive every message.
//
// handle runs on the subscription's own goroutine: calls from one
// subscription are sequential, but calls from different ones run
// concurrently, so handle must be safe for concurrent use. It should be
// cheap (decode and hand off); a slow handler makes the client drop
// messages. The *Message is the subscription's and is refilled for its
// next message: a handler that keeps it past its return keeps a copy
// (Data and Header are the message's own and may be kept).
func Subscribe(nc *nats.Conn, subjects map[wire.Kind]string, workers, pendingMsgs, pendingBytes int, handle func(*Message)) (*Subscription, error) {
	workers = max(workers, 1)
	share := func(limit int) int {
		if limit <= 0 {
			return limit
		}
		return max(1, limit/workers)
	}
	pendingMsgs, pendingBytes = share(pendingMsgs), share(pendingBytes)
	if len(subjects) == 0 {
		return nil, errors.New("subscribe: no subjects")
	}
	kinds := make([]wire.Kind, 0, len(subjects))
	for k := range subjects {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i] < kinds[j] })
	s := &Subscription{dropped: map[*nats.Subscription]uint64{}}
	for _, kind := range kinds {
		subject := subjects[kind]
		if subject == "" {
			continue // an empty subject turns the kind off
		}
		queue := ""
		if workers > 1 {
			queue = "shadoweval-" + strconv.FormatUint(rand.Uint64(), 36)
		}
		for w := range workers {
			if err := s.subscribe(nc, kind, subject, queue, int(kind)*workers+w, pendingMsgs, pendingBytes, handle); err != nil {
				s.Unsubscribe()
				return nil, err
			}
		}
	}
	if len(s.subs) == 0 {
		return nil, errors.New("subscribe: every subject is empty")
	}
	return s, nil
}

func (s *Subscription) subscribe(nc *nats.Conn, kind wire.Kind, subject, queue string, worker, pendingMsgs, pendingBytes int, handle func(*Message)) error {
	// One Message per subscription, refilled for each message: its calls
	// are sequential, and a Message allocated per event was a fifth of the
	// sidecar's garbage.
	msg := new(Message)
	sub, err := nc.QueueSubscribe(subject, queue, func(m *nats.Msg) {
		*msg = Message{Kind: kind, Subject: m.Subject, Data: m.Data, Header: m.Header, Received: time.Now(), Worker: worker}
		handle(msg)
	})
	if err != nil {
		return fmt.Errorf("subscribe %s %q: %w", kind, subject, err)
	}
	s.subs = append(s.subs, sub)
	if pendingMsgs != 0 || pendingBytes != 0 {
		msgs, bytes := pendingMsgs, pendingBytes
		if msgs == 0 {
			msgs = nats.DefaultSubPendingMsgsLimit
		}
		if bytes == 0 {
			bytes = nats.DefaultSubPendingBytesLimit
		}
		if err := sub.SetPendingLimits(msgs, bytes); err != nil {
			return fmt.Errorf("subscribe %s %q: pending limits: %w", kind, subject, err)
		}
	}
	return nil
}

// Dropped is the number of messages the subscriptions dropped because their
// pending limits were reached, summed over kinds. It keeps counting what
// was dropped before Unsubscribe or Drain.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, sub := range s.subs {
		if d, err := sub.Dropped(); err == nil {
			s.dropped[sub] = uint64(d)
		}
		n += s.dropped[sub]
	}
	return n
}

// Unsubscribe removes interest at once; messages still pending in the
// client are discarded.
func (s *Subscription) Unsubscribe() error {
	s.Dropped() // keep the final counts
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrBadSubscription) && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Drain removes interest, lets the handler process every message already
// received and returns once all subscriptions are closed or ctx is done.
func (s *Subscription) Drain(ctx context.Context) error {
	s.Dropped()
	var errs []error
	var closed []<-chan nats.SubStatus
	for _, sub := range s.subs {
		ch := sub.StatusChanged(nats.SubscriptionClosed)
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrBadSubscription) && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
			continue
		}
		closed = append(closed, ch)
	}
	for _, ch := range closed {
	wait:
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					break wait
				}
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("drain: %w", context.Cause(ctx)))
				return errors.Join(errs...)
			}
		}
	}
	return errors.Join(errs...)
}
