package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// CoreSubscription receives the input subjects over a core NATS connection
// of its own, read by one goroutine that frames the protocol in place and
// hands the messages to the workers in batches: one allocation per message
// (its payload) and one hand-off per batch, where nats.go's subscriptions
// take three allocations and a goroutine wake-up per message. The
// connection reconnects like Connect's, subscribing again each time.
type CoreSubscription struct {
	opt    ConnOptions
	nopts  nats.Options
	handle func(*Message)
	limit  int64 // bytes waiting for the workers before messages are dropped

	subLines []byte
	kinds    [NumKinds + 1]Kind // by sid: sid k+1 is kind k
	subjects [NumKinds + 1]string
	sids     []uint64

	// servers is the reconnect pool: the configured URLs and those the
	// servers announce (reader goroutine only, after CoreSubscribe).
	servers []*url.URL
	next    int

	mu      sync.Mutex
	cond    sync.Cond
	queue   []*coreBatch
	waiting int
	closed  bool

	pending atomic.Int64
	dropped atomic.Uint64

	conn     atomic.Pointer[coreConn]
	stopping atomic.Bool
	stop     chan struct{}
	readDone chan struct{}
	workers  sync.WaitGroup
	batches  sync.Pool
	stopOnce sync.Once
}

// coreConn is one connection with its keep-alive and drain bookkeeping.
type coreConn struct {
	*wireConn
	wmu   sync.Mutex // writes: PONG from the reader, PING, UNSUB
	pings atomic.Int64
	pongs atomic.Int64
	pong  chan struct{} // a PONG arrived (capacity 1)
}

func (c *coreConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.Write(b)
	return err
}

// ping sends a PING and returns its number: the PONG that answers it makes
// c.pongs reach that number.
func (c *coreConn) ping() (int64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := c.pings.Add(1)
	_, err := c.Write([]byte("PING\r\n"))
	return n, err
}

// coreBatch is the messages framed from one read, up to maxBatch.
type coreBatch struct {
	msgs  []Message
	bytes int64
}

// maxBatch spreads a large read over the workers.
const maxBatch = 64

// readBufSize is the read buffer's size; a larger message grows it.
const readBufSize = 256 << 10

// defaultPingInterval is how often the connection is checked with a PING
// unless ConnOptions.PingInterval says otherwise; maxPingsOut unanswered
// ones close it and the subscription reconnects (nats.go's defaults).
const (
	defaultPingInterval = 2 * time.Minute
	maxPingsOut         = 2
)

// CoreSubscribe connects with opt and subscribes to each kind's subject
// (an empty subject turns the kind off). handle runs on one of workers
// goroutines, concurrently with the others and in no fixed order between
// them; the *Message is refilled after handle returns (Data and Header are
// the message's own and may be kept). Up to pendingBytes of messages wait
// for the workers (<= 0: unlimited); beyond, messages are dropped, counted
// by Dropped and reported once per episode through opt.OnSlowConsumer (an
// episode ends when no more than half of pendingBytes wait).
//
// The first connection is retried until ctx is done, as Connect's; once
// subscribed, the server has the interest when CoreSubscribe returns.
func CoreSubscribe(ctx context.Context, opt ConnOptions, subjects map[Kind]string, workers int, pendingBytes int64, handle func(*Message)) (*CoreSubscription, error) {
	secrets := opt.secrets()
	natsOpts, err := opt.natsOptions()
	if err != nil {
		return nil, redact(err, secrets)
	}
	s := &CoreSubscription{opt: opt, handle: handle, limit: pendingBytes, stop: make(chan struct{}), readDone: make(chan struct{})}
	for _, f := range natsOpts {
		if err := f(&s.nopts); err != nil {
			return nil, redact(err, secrets)
		}
	}
	s.cond.L = &s.mu
	s.batches.New = func() any { return &coreBatch{msgs: make([]Message, 0, maxBatch)} }
	for k := Kind(0); k < NumKinds; k++ {
		subject := subjects[k]
		if subject == "" {
			continue
		}
		if strings.ContainsAny(subject, " \t\r\n") {
			return nil, fmt.Errorf("subscribe %s %q: a subject has no white space", k, subject)
		}
		sid := uint64(k) + 1
		s.kinds[sid], s.subjects[sid] = k, subject
		s.sids = append(s.sids, sid)
		s.subLines = fmt.Appendf(s.subLines, "SUB %s %d\r\n", subject, sid)
	}
	if len(s.sids) == 0 {
		return nil, errors.New("subscribe: every subject is empty")
	}
	servers := opt.URL
	if servers == "" {
		servers = nats.DefaultURL
	}
	for _, raw := range strings.Split(servers, ",") {
		raw = strings.TrimSpace(raw)
		if !strings.Contains(raw, "://") {
			raw = "nats://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, redact(fmt.Errorf("nats url %s: %w", redactURLs(raw), err), secrets)
		}
		s.servers = append(s.servers, u)
	}
	rand.Shuffle(len(s.servers), func(i, j int) { s.servers[i], s.servers[j] = s.servers[j], s.servers[i] })

	var c *coreConn
	if err := opt.retry(ctx, func() error {
		c, err = s.dial(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	s.conn.Store(c)
	for w := range max(workers, 1) {
		s.workers.Add(1)
		go s.work(w)
	}
	go s.run(c)
	go s.keepAlive()
	return s, nil
}

// dial tries the next server of the pool.
func (s *CoreSubscription) dial(ctx context.Context) (*coreConn, error) {
	u := s.servers[s.next%len(s.servers)]
	s.next++
	wc, err := dialWire(ctx, u, &s.nopts, s.subLines)
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", redactURLs(u.String()), err)
	}
	s.learn(wc.info)
	return &coreConn{wireConn: wc, pong: make(chan struct{}, 1)}, nil
}

// learn adds the servers an INFO announces to the pool, with the
// credentials of the first configured URL (as nats.go does).
func (s *CoreSubscription) learn(info serverInfo) {
	for _, hostport := range info.ConnectURLs {
		known := slices.ContainsFunc(s.servers, func(u *url.URL) bool { return u.Host == hostport })
		if known || len(s.servers) >= 64 {
			continue
		}
		u := *s.servers[0]
		u.Host = hostport
		s.servers = append(s.servers, &u)
	}
}

// run reads connections until the subscription stops, reconnecting with
// back-off in between.
func (s *CoreSubscription) run(c *coreConn) {
	defer close(s.readDone)
	buf := make([]byte, readBufSize)
	backoff := s.opt.backoff()
	for {
		err := s.read(c, &buf)
		c.Close()
		if s.stopping.Load() {
			return
		}
		if s.opt.OnDisconnect != nil {
			s.opt.OnDisconnect(redact(err, s.opt.secrets()))
		}
		c = nil
		lastErr := ""
		for attempt := 0; c == nil; attempt++ {
			t := time.NewTimer(backoff(attempt))
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
			var err error
			if c, err = s.dial(context.Background()); err != nil && err.Error() != lastErr && s.opt.OnError != nil {
				// Once per kind of failure, not per attempt: a rotated
				// credential or a refused TLS handshake is worth a log line.
				lastErr = err.Error()
				s.opt.OnError(redact(fmt.Errorf("reconnecting: %w", err), s.opt.secrets()))
			}
		}
		s.conn.Store(c)
		if s.stopping.Load() {
			c.Close()
			return
		}
		if s.opt.OnReconnect != nil {
			s.opt.OnReconnect()
		}
	}
}

// read frames what c sends until it fails or is closed.
func (s *CoreSubscription) read(c *coreConn, bufp *[]byte) error {
	buf := *bufp
	n := 0
	maxPayload := c.info.MaxPayload
	interned := make(map[string]string)
	slow := false
	for {
		m, err := c.r.Read(buf[n:])
		n += m
		if m == 0 && err != nil {
			return err
		}
		now := time.Now()
		// What waits for the workers, as of this read: one shared load
		// per read rather than two atomic operations per message.
		queued := s.pending.Load()
		batch := s.batches.Get().(*coreBatch)
		p, wanted := 0, 0
		for {
			f, used, need, err := nextFrame(buf[p:n], maxPayload)
			if err != nil {
				s.push(batch)
				if s.opt.OnError != nil {
					s.opt.OnError(err)
				}
				return err
			}
			if used == 0 {
				wanted = need
				if need > len(buf)-p {
					grown := make([]byte, max(need, 2*len(buf)))
					n = copy(grown, buf[p:n])
					p = 0
					buf = grown
					*bufp = buf
				}
				break
			}
			p += used
			switch f.op {
			case opMsg:
				if f.sid == 0 || f.sid > NumKinds || s.subjects[f.sid] == "" {
					continue // not ours: an earlier connection's
				}
				size := int64(len(f.payload))
				if s.limit > 0 && queued+batch.bytes+size > s.limit {
					s.dropped.Add(1)
					if !slow && s.opt.OnSlowConsumer != nil {
						s.opt.OnSlowConsumer(s.subjects[f.sid])
					}
					slow = true
					continue
				}
				if queued+batch.bytes+size <= s.limit/2 {
					// The episode ends once half the room is free again:
					// a queue hovering at the limit is one episode, not
					// one report per message that fits.
					slow = false
				}
				batch.msgs = append(batch.msgs, s.message(f, now, interned))
				batch.bytes += size
				if len(batch.msgs) == maxBatch {
					queued = s.push(batch)
					batch = s.batches.Get().(*coreBatch)
				}
			case opPing:
				if err := c.write([]byte("PONG\r\n")); err != nil {
					s.push(batch)
					return err
				}
			case opPong:
				c.pongs.Add(1)
				select {
				case c.pong <- struct{}{}:
				default:
				}
			case opErr:
				if s.opt.OnError != nil {
					s.opt.OnError(redact(serverError(string(f.payload)), s.opt.secrets()))
				}
			case opInfo:
				var info serverInfo
				if json.Unmarshal(f.payload, &info) == nil {
					s.learn(info)
					if info.MaxPayload > 0 {
						maxPayload = info.MaxPayload
					}
				}
			}
		}
		s.push(batch)
		n = copy(buf, buf[p:n])
		if len(buf) > readBufSize && wanted <= readBufSize {
			// A large message grew the buffer and is done; give it back.
			small := make([]byte, readBufSize)
			n = copy(small, buf[:n])
			buf = small
			*bufp = buf
		}
	}
}

// message copies a framed message out of the read buffer. Subjects are
// interned (up to 1024 of them, so a flood of distinct subjects cannot grow
// the map without bound).
func (s *CoreSubscription) message(f frame, now time.Time, interned map[string]string) Message {
	subject, ok := interned[string(f.subject)]
	if !ok {
		subject = string(f.subject)
		if len(interned) < 1024 {
			interned[subject] = subject
		}
	}
	data := make([]byte, len(f.payload))
	copy(data, f.payload)
	m := Message{Kind: s.kinds[f.sid], Subject: subject, Received: now}
	if f.hdr > 0 {
		h, err := nats.DecodeHeadersMsg(data[:f.hdr])
		if err == nil {
			m.Header = h
		} else if s.opt.OnError != nil {
			// As nats.go: the message is still delivered.
			s.opt.OnError(fmt.Errorf("%w on %s", nats.ErrBadHeaderMsg, subject))
		}
		data = data[f.hdr:]
	}
	m.Data = data
	return m
}

// push queues b for the workers and returns the bytes now waiting.
func (s *CoreSubscription) push(b *coreBatch) int64 {
	if len(b.msgs) == 0 {
		s.batches.Put(b)
		return s.pending.Load()
	}
	queued := s.pending.Add(b.bytes)
	s.mu.Lock()
	s.queue = append(s.queue, b)
	if s.waiting > 0 {
		s.cond.Signal()
	}
	s.mu.Unlock()
	return queued
}

// pop waits for a batch; nil once the queue is closed and empty.
func (s *CoreSubscription) pop() *coreBatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 {
		if s.closed {
			return nil
		}
		s.waiting++
		s.cond.Wait()
		s.waiting--
	}
	b := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	if len(s.queue) == 0 {
		s.queue = s.queue[:0:0] // let the drained backing array go
	}
	return b
}

func (s *CoreSubscription) work(w int) {
	defer s.workers.Done()
	for {
		b := s.pop()
		if b == nil {
			return
		}
		for i := range b.msgs {
			m := &b.msgs[i]
			m.Worker = w
			s.handle(m)
		}
		s.pending.Add(-b.bytes)
		clear(b.msgs)
		b.msgs, b.bytes = b.msgs[:0], 0
		s.batches.Put(b)
	}
}

// keepAlive pings the server every ping interval and closes a connection
// that left maxPingsOut of them unanswered, so a dead peer (or a NAT that
// forgot the connection) is noticed.
func (s *CoreSubscription) keepAlive() {
	every := s.opt.PingInterval
	if every <= 0 {
		every = defaultPingInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		c := s.conn.Load()
		if c.pings.Load()-c.pongs.Load() >= maxPingsOut {
			c.Close()
			continue
		}
		_, _ = c.ping()
	}
}

// Dropped is the number of messages dropped because pendingBytes were
// waiting for the workers.
func (s *CoreSubscription) Dropped() uint64 { return s.dropped.Load() }

// Unsubscribe closes the connection at once; messages waiting for the
// workers are discarded.
func (s *CoreSubscription) Unsubscribe() error {
	s.halt()
	s.mu.Lock()
	for _, b := range s.queue {
		s.pending.Add(-b.bytes)
	}
	s.queue = nil
	s.mu.Unlock()
	s.workers.Wait()
	return nil
}

// Flush returns once the subscription has read everything the server sent
// it before Flush's PING (the messages are then queued for the workers,
// dropped or handled).
func (s *CoreSubscription) Flush(ctx context.Context) error {
	return s.roundTrip(ctx, nil)
}

// roundTrip writes first and a PING and waits for the PONG.
func (s *CoreSubscription) roundTrip(ctx context.Context, first []byte) error {
	c := s.conn.Load()
	if len(first) > 0 {
		if err := c.write(first); err != nil {
			return err
		}
	}
	n, err := c.ping()
	if err != nil {
		return err
	}
	for c.pongs.Load() < n {
		select {
		case <-c.pong:
		case <-s.readDone:
			return errors.New("nats: subscription closed")
		case <-ctx.Done():
			return fmt.Errorf("flush: %w", context.Cause(ctx))
		}
	}
	return nil
}

// Drain removes interest, lets the workers handle every message the server
// sent before it saw that, and returns once they are done or ctx is done.
func (s *CoreSubscription) Drain(ctx context.Context) error {
	var unsub []byte
	for _, sid := range s.sids {
		unsub = append(append(append(unsub, "UNSUB "...), strconv.FormatUint(sid, 10)...), "\r\n"...)
	}
	err := s.roundTrip(ctx, unsub)
	if err != nil {
		err = fmt.Errorf("drain: %w", err)
	}
	s.halt()
	done := make(chan struct{})
	go func() {
		s.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("drain: %w", context.Cause(ctx)))
	}
	return err
}

// halt stops the reader and the keep-alive and closes the queue: the
// workers finish what is queued.
func (s *CoreSubscription) halt() {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		close(s.stop)
		s.conn.Load().Close()
		<-s.readDone
		s.mu.Lock()
		s.closed = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
}
