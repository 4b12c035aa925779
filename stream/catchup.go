package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replayRange reads, in stream order, the messages of filters from
// sequence from (or stored since since, when from is 0) up to before upTo
// (0: up to the end of the stream as the read starts), through an ordered
// consumer, and hands each to each with its metadata. It fills the holes
// a durable consumer leaves when a message it delivered never arrived
// (the connection or the server died with it in flight), and rebuilds a
// partitioned member's state: either way without waiting for the durable
// consumer's ack wait, and without applying anything out of order.
func replayRange(ctx context.Context, js jetstream.JetStream, stream string, filters []string, from uint64, since time.Time, upTo uint64, each func(jetstream.Msg, *jetstream.MsgMetadata)) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, InactiveThreshold: time.Minute}
	switch {
	case from > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	case !since.IsZero():
		t := since.UTC()
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return err
	}
	defer func() {
		// The server drops an ordered consumer once inactive; deleting it
		// now only saves the wait.
		_ = js.DeleteConsumer(context.Background(), stream, cons.CachedInfo().Name)
	}()
	left := cons.CachedInfo().NumPending
	for left > 0 {
		batch := min(left, 1024)
		if upTo > from && from > 0 {
			batch = min(batch, upTo-from) // a hole is short: fetch no further
		}
		msgs, err := cons.Fetch(int(batch), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return err
		}
		got := 0
		for msg := range msgs.Messages() {
			got++
			left--
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			if upTo > 0 && meta.Sequence.Stream >= upTo {
				return nil
			}
			each(msg, meta)
		}
		if err := msgs.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		if got == 0 {
			return fmt.Errorf("%d messages announced did not come", left)
		}
	}
	return nil
}
