package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/wire"
)

// DefaultReplaySubject is where Replay publishes when no subject is given.
const DefaultReplaySubject = "rag.trace.live"

// progressEvery is the minimum time between two Progress calls.
const progressEvery = 100 * time.Millisecond

// ReplayOptions configures Replay.
type ReplayOptions struct {
	// Name names the input in errors (the file name); default "replay".
	Name string
	// Subject to publish on; default DefaultReplaySubject.
	Subject string
	// Rate in messages per second; 0 publishes as fast as possible.
	Rate float64
	// MsgID sets the Nats-Msg-Id header from the line's top-level
	// "event_id" string, when it has one, so JetStream de-duplicates a
	// replay of the same file.
	MsgID bool
	// Progress, when set, is called with the lines sent so far and the
	// total: first with sent = 0, then at most every 100 ms, and last with
	// sent = the final count. total is -1 when r is not an io.Seeker (the
	// lines cannot be counted beforehand).
	Progress func(sent, total int)
	// FlushTimeout bounds the final flush when ctx has no deadline;
	// 0 means 10 s.
	FlushTimeout time.Duration
	// PartitionKey, when "qid", appends the key token of each line's qid
	// (PartitionKey of EventQID) to Subject, as a partitioned stream
	// (SPEC §10) wants it; a line without a qid goes to Subject itself,
	// for the sidecar to count and dead-letter. "" adds no key token.
	PartitionKey string
}

// PartitionKeyQID is the ReplayOptions.PartitionKey that keys by qid.
const PartitionKeyQID = "qid"

// CheckPartitionKey refuses a partition key other than "" (none) and
// PartitionKeyQID, the only field that keeps a qid's events together.
func CheckPartitionKey(key string) error {
	if key != "" && key != PartitionKeyQID {
		return fmt.Errorf("want %q or \"\", got %q", PartitionKeyQID, key)
	}
	return nil
}

// ReplayStats summarises a replay.
type ReplayStats struct {
	Sent              int   // messages published
	Bytes             int64 // payload bytes published
	WithMsgID         int   // messages that carried Nats-Msg-Id
	Unkeyed           int   // with PartitionKey: messages without a qid, sent without a key token
	Oversize          int   // lines longer than the server's max payload, skipped
	FirstOversizeLine int   // line number of the first oversize line (0: none)
	NotJSON           int   // lines sent that are not one valid JSON value: the sidecar rejects them
	FirstNotJSONLine  int   // line number of the first of them (0: none)
	// Stream is the JetStream stream that stores the subject ("": none,
	// the messages went out on core NATS unconfirmed); NotStored the
	// messages it did not confirm even after retries.
	Stream    string
	NotStored int
	Elapsed   time.Duration
}

// ErrNotStored is the error of a replay some of whose messages the stream
// did not confirm.
var ErrNotStored = errors.New("not stored")

type replayLine struct {
	data    []byte
	id      string
	key     string // key token; "" for none
	notJSON bool
}

// Replay publishes every non-blank line of a JSONL stream, in order, as one
// message, then flushes. Where a JetStream stream stores the subject, each
// message must be confirmed by it: those that are not (a server or the
// stream's leader lost on the way) are published again, a few times, and
// the ones never confirmed are counted in ReplayStats.NotStored and the
// error (ErrNotStored). Without such a stream they go out on core NATS. Lines follow the rules of ParallelLines
// (universal newlines; lines that Python's strip() leaves empty are
// skipped) and are sent stripped of Python white space but otherwise as
// they are: the sidecar validates and dead-letters. A line that is not one
// valid JSON value (RFC 7493: duplicate names and invalid UTF-8 included)
// is sent all the same, for the sidecar to reject, and counted in
// ReplayStats.NotJSON, so that the caller can say so. A line
// longer than the server's max payload cannot be sent: it is counted in
// ReplayStats.Oversize and skipped. A cancelled ctx stops the replay with
// ctx's error; the stats then tell how far it got.
func Replay(ctx context.Context, nc *nats.Conn, r io.Reader, opt ReplayOptions) (ReplayStats, error) {
	start := time.Now()
	var st ReplayStats
	name := opt.Name
	if name == "" {
		name = "replay"
	}
	subject := opt.Subject
	if subject == "" {
		subject = DefaultReplaySubject
	}
	if opt.Rate < 0 {
		return st, fmt.Errorf("replay: negative rate %v", opt.Rate)
	}
	if err := CheckPartitionKey(opt.PartitionKey); err != nil {
		return st, fmt.Errorf("replay: partition key: %w", err)
	}
	keyed := opt.PartitionKey == PartitionKeyQID
	total := -1
	if opt.Progress != nil {
		if s, ok := r.(io.Seeker); ok {
			n, err := countLines(r, s, name)
			if err != nil {
				return st, err
			}
			total = n
		}
		opt.Progress(0, total)
	}
	lastProgress := time.Now()
	paceStart := lastProgress
	var interval time.Duration
	if opt.Rate > 0 {
		interval = time.Duration(float64(time.Second) / opt.Rate)
	}
	maxPayload := nc.MaxPayload()
	msg := &nats.Msg{Subject: subject}
	acked, err := newAckedPublisher(ctx, nc, subject, keyed)
	if err != nil {
		return st, fmt.Errorf("replay: %w", err)
	}
	if acked != nil {
		st.Stream = acked.stream
	}
	n := 0 // lines handled, sent or not, for pacing
	err = wire.ParallelLines(r, name, func(line []byte) (replayLine, error) {
		l := replayLine{data: line, notJSON: !jsontext.Value(line).IsValid()}
		if opt.MsgID {
			l.id = topLevelString(line, "event_id")
		}
		if keyed {
			if qid := wire.EventQID(line); qid != "" {
				l.key = PartitionKey(qid)
			}
		}
		return l, nil
	}, func(lineNo int, l replayLine) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if interval > 0 {
			// Message n is due at start + n·interval: the average rate
			// holds over the run, whatever the cost of each publish.
			due := paceStart.Add(time.Duration(n) * interval)
			if wait := time.Until(due); wait > 0 {
				if err := sleepCtx(ctx, wait); err != nil {
					return err
				}
			}
		}
		n++
		msg.Subject, msg.Data, msg.Header = subject, l.data, nil
		if l.key != "" {
			msg.Subject = subject + "." + l.key
		}
		size := int64(len(l.data))
		if l.id != "" {
			msg.Header = nats.Header{nats.MsgIdHdr: {l.id}}
			size += int64(headerSize(msg.Header))
		}
		if maxPayload > 0 && size > maxPayload {
			st.Oversize++
			if st.FirstOversizeLine == 0 {
				st.FirstOversizeLine = lineNo
			}
			return nil
		}
		if acked != nil {
			if err := acked.publish(msg); err != nil {
				return &wire.LineError{File: name, Line: lineNo, Err: fmt.Errorf("publish to %s: %w", msg.Subject, err)}
			}
		} else if err := nc.PublishMsg(msg); err != nil {
			return &wire.LineError{File: name, Line: lineNo, Err: fmt.Errorf("publish to %s: %w", msg.Subject, err)}
		}
		st.Sent++
		if l.notJSON {
			st.NotJSON++
			if st.FirstNotJSONLine == 0 {
				st.FirstNotJSONLine = lineNo
			}
		}
		if keyed && l.key == "" {
			st.Unkeyed++
		}
		st.Bytes += int64(len(l.data))
		if l.id != "" {
			st.WithMsgID++
		}
		if opt.Progress != nil && time.Since(lastProgress) >= progressEvery {
			lastProgress = time.Now()
			opt.Progress(st.Sent, total)
		}
		return nil
	})
	if err == nil {
		err = flush(ctx, nc, opt.FlushTimeout)
	}
	if err == nil && acked != nil {
		var first error
		if st.NotStored, first = acked.finish(ctx); st.NotStored > 0 {
			err = fmt.Errorf("replay: %d of %d messages %w by stream %s (the first: %v)", st.NotStored, st.Sent, ErrNotStored, acked.stream, first)
		}
	}
	if opt.Progress != nil {
		opt.Progress(st.Sent, total)
	}
	st.Elapsed = time.Since(start)
	return st, err
}

func flush(ctx context.Context, nc *nats.Conn, timeout time.Duration) error {
	if _, ok := ctx.Deadline(); !ok {
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("replay: flush: %w", err)
	}
	return nil
}

// countLines counts the lines Replay would send, then rewinds.
func countLines(r io.Reader, s io.Seeker, name string) (int, error) {
	pos, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return -1, nil // a pipe or terminal: total unknown
	}
	n := 0
	err = wire.ParallelLines(r, name, func([]byte) (struct{}, error) { return struct{}{}, nil },
		func(int, struct{}) error { n++; return nil })
	if err != nil {
		return 0, err
	}
	if _, err := s.Seek(pos, io.SeekStart); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// topLevelString is the value of the top-level member name of a JSON
// object when it is a string, else "". It reads no further than needed and
// gives up quietly on invalid JSON.
func topLevelString(line []byte, name string) string {
	dec := jsontext.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for dec.PeekKind() == '"' {
		key, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if key.String() == name {
			if dec.PeekKind() != '"' {
				return ""
			}
			v, err := dec.ReadToken()
			if err != nil {
				return ""
			}
			return v.String()
		}
		if err := dec.SkipValue(); err != nil {
			return ""
		}
	}
	return ""
}

// ackedPublisher publishes to a JetStream stream and keeps the messages it
// did not confirm, to publish them again.
type ackedPublisher struct {
	js     jetstream.JetStream
	stream string
	mu     sync.Mutex
	failed []*nats.Msg
	errs   []error
}

// newAckedPublisher returns a publisher for the stream that stores
// subject (with keyed, its subjects below it); nil when none does, or the
// server has no JetStream.
func newAckedPublisher(ctx context.Context, nc *nats.Conn, subject string, keyed bool) (*ackedPublisher, error) {
	if on, _ := nc.ConnectedServerJetStream(); !on {
		return nil, nil
	}
	p := &ackedPublisher{}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(4096),
		jetstream.WithPublishAsyncTimeout(5*time.Second),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			p.mu.Lock()
			p.failed, p.errs = append(p.failed, m), append(p.errs, err)
			p.mu.Unlock()
		}))
	if err != nil {
		return nil, err
	}
	probe := subject
	if keyed {
		probe += ".>"
	}
	lookup, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name, err := js.StreamNameBySubject(lookup, probe)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("finding the stream of %s: %w", probe, err)
	}
	p.js, p.stream = js, name
	return p, nil
}

// publish sends a copy of m, whose data the caller reuses.
func (p *ackedPublisher) publish(m *nats.Msg) error {
	c := &nats.Msg{Subject: m.Subject, Data: bytes.Clone(m.Data), Header: m.Header}
	_, err := p.js.PublishMsgAsync(c)
	return err
}

// finish waits for every confirmation, publishes again (waiting for each)
// the messages that were not confirmed, and returns how many never were,
// with the first such error.
func (p *ackedPublisher) finish(ctx context.Context) (int, error) {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return p.js.PublishAsyncPending(), ctx.Err()
	}
	p.mu.Lock()
	failed, errs := p.failed, p.errs
	p.mu.Unlock()
	left := 0
	var first error
	for i, m := range failed {
		err := errs[i]
		for attempt, wait := 0, 200*time.Millisecond; attempt < 5 && lostOnTheWay(err) && ctx.Err() == nil; attempt, wait = attempt+1, min(2*wait, 2*time.Second) {
			if attempt > 0 && sleepCtx(ctx, wait) != nil {
				break
			}
			pub, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = p.js.PublishMsg(pub, m)
			cancel()
		}
		if err != nil {
			left++
			if first == nil {
				first = err
			}
		}
	}
	return left, first
}

// lostOnTheWay reports whether a publish failed for want of an answer (a
// server or the stream's leader gone), which a later attempt may get,
// rather than by the stream's refusal.
func lostOnTheWay(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrConnectionClosed)
}
