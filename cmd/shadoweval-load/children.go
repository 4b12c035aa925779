package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/wire"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// The children talk to the parent in lines on stdout: "ready ..." once
// they can start, "result {json}" at the end. The parent writes "go" on
// the publisher's stdin to start sending; a child whose stdin closes (the
// parent is gone) stops.

// prog names the tool in flag errors.
const prog = "shadoweval-load"

// ---- server ----

func runServer(args []string, stdout, stderr io.Writer) int {
	fs := cmdutil.NewFlags(prog, "server", stderr)
	port := fs.Int("port", -1, "client port on 127.0.0.1 (-1: any free port)")
	maxPending := fs.Int64("max-pending", 0, "server-side outbound buffer per client in bytes before it is cut as a slow consumer (0: nats-server's default, 64 MiB)")
	jsDir := fs.String("jetstream-dir", "", "turn JetStream on, storing in this directory (empty: core NATS only)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "shadoweval-load",
		Host:       "127.0.0.1",
		Port:       *port,
		NoSigs:     true,
		NoLog:      true,
		MaxPending: *maxPending,
		JetStream:  *jsDir != "",
		StoreDir:   *jsDir,
	})
	if err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return 1
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		fmt.Fprintln(stderr, "server: not ready after 10s")
		srv.Shutdown()
		return 1
	}
	fmt.Fprintln(stdout, "ready", srv.ClientURL())
	waitParent()
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}

// waitParent returns when stdin closes (the parent is done or gone) or on
// SIGTERM/SIGINT.
func waitParent() {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or error: either way the parent is gone
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
}

// ---- events ----

type event struct {
	subject string
	body    []byte // the event without its opening brace; ts is prepended at send time
}

// makeEvents pre-generates n events from a TraceSource (no ts), arms in
// turn, in the given shape: one of gen.Shapes, or "full" (the whole
// event). keyed sends each to rag.trace.<arm>.<key of its qid>, as
// publishers to a partitioned stream do (SPEC §10).
func makeEvents(n int, shape string, seed uint64, items int, arms []string, keyed bool) ([]event, error) {
	src := gen.NewTraceSource(genOptions(seed, items, arms))
	out := make([]event, n)
	for i := range out {
		arm := arms[i%len(arms)]
		ev := src.NextFor(arm)
		if shape != "full" {
			keys, ok := gen.Shapes[shape]
			if !ok {
				return nil, fmt.Errorf("unknown shape %q (small, compact or full)", shape)
			}
			var err error
			if ev, err = gen.Keep(ev, keys); err != nil {
				return nil, err
			}
		}
		if len(ev) < 2 || ev[0] != '{' || bytes.Contains(ev, []byte(`"ts":`)) {
			return nil, fmt.Errorf("unexpected event %q", ev)
		}
		out[i] = event{subject: keySubject("rag.trace."+arm, ev, keyed), body: ev[1:]}
	}
	return out, nil
}

// keySubject is subject, followed by the key token of ev's qid when keyed
// and ev has a qid (one without goes unkeyed, as `shadoweval replay`
// sends it).
func keySubject(subject string, ev []byte, keyed bool) string {
	if !keyed {
		return subject
	}
	if qid := wire.EventQID(ev); qid != "" {
		return subject + "." + stream.PartitionKey(qid)
	}
	return subject
}

func genOptions(seed uint64, items int, arms []string) gen.Options {
	return gen.Options{Seed: seed, Items: items, Awkward: 0.05, Arms: arms}
}

// ---- publish ----

type publishResult struct {
	Sent      int64   `json:"sent"`
	Bytes     int64   `json:"bytes"`
	Start     int64   `json:"start_unix_nano"` // first publish
	End       int64   `json:"end_unix_nano"`   // flushed to the server (with --jetstream: the last ack in)
	MeanBytes float64 `json:"mean_bytes"`
	CPU       int64   `json:"cpu_ns"` // user+system CPU of the process while sending
	// With --jetstream: the stream's acknowledgements, and the first
	// refusal (an error reply, or no stream for the subject).
	Acked     int64  `json:"acked,omitempty"`
	AckFailed int64  `json:"ack_failed,omitempty"`
	AckError  string `json:"ack_error,omitempty"`
}

func runPublish(args []string, stdout, stderr io.Writer) int {
	fs := cmdutil.NewFlags(prog, "publish", stderr)
	url := fs.String("url", "", "NATS URL")
	n := fs.Int64("n", 1_000_000, "messages to send")
	rate := fs.Float64("rate", 0, "messages per second (0: as fast as possible)")
	shape := fs.String("shape", "compact", "small, compact or full")
	seed := fs.Uint64("seed", 42, "generator seed")
	items := fs.Int("items", 1000, "gold items")
	arms := fs.String("arms", "live,canary", "arms, in turn")
	pool := fs.Int("pool", 1<<18, "distinct events pre-generated (sent in a cycle)")
	hostile := fs.Float64("hostile", 0, "share of hostile messages")
	partitionKey := fs.String("partition-key", "", `"qid": send to rag.trace.<arm>.<key of the qid>; "": to rag.trace.<arm>`)
	jetStream := fs.Bool("jetstream", false, fmt.Sprintf("publish into a JetStream stream and wait for its acks, at most %d outstanding", ackWindow))
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := stream.CheckPartitionKey(*partitionKey); err != nil {
		fmt.Fprintln(stderr, "publish: --partition-key:", err)
		return 2
	}
	keyed := *partitionKey == stream.PartitionKeyQID
	evs, err := makeEvents(int(min(*n, int64(*pool))), *shape, *seed, *items, strings.Split(*arms, ","), keyed)
	if err != nil {
		fmt.Fprintln(stderr, "publish:", err)
		return 1
	}
	mixHostile(evs, *hostile, keyed)
	if *rate > 0 {
		// Paced, with two Ps nats.go's flusher goroutine wakes on the other
		// P at each burst's first publish and writes the burst out in small
		// pieces while it is being appended (lock hand-offs, many small
		// writes the server must read). With one P it runs when the burst
		// is done and the pacer sleeps: one write per burst. Measured at
		// 220k msgs/s for 10 s: publisher 2.36 → 1.57 s of CPU, server
		// 3.9 → 3.1 s; the load tool's own cost is not the sidecar's. Flat
		// out, two Ps are faster (building overlaps writing), so floods and
		// the raw rate keep them.
		runtime.GOMAXPROCS(1)
	}
	nc, err := nats.Connect(*url, nats.Name("shadoweval-load publish"))
	if err != nil {
		fmt.Fprintln(stderr, "publish:", err)
		return 1
	}
	defer nc.Close()
	var acks *ackCounter
	if *jetStream {
		if acks, err = newAckCounter(nc); err != nil {
			fmt.Fprintln(stderr, "publish:", err)
			return 1
		}
	}
	var size int64
	for _, e := range evs {
		size += int64(len(e.body)) + int64(len(`{"ts":"`+gen.TSLayout+`",`))
	}
	fmt.Fprintln(stdout, "ready")
	if !waitGo() {
		return 1
	}
	cpu0 := selfCPU()
	res, err := publish(nc, evs, *n, *rate, acks)
	res.CPU = selfCPU() - cpu0
	if err != nil {
		fmt.Fprintln(stderr, "publish:", err)
		return 1
	}
	res.MeanBytes = float64(size) / float64(len(evs))
	b, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "result %s\n", b)
	return 0
}

// waitGo reads the parent's "go".
func waitGo() bool {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	return err == nil && strings.TrimSpace(line) == "go"
}

// ackWindow bounds the publishes a JetStream publisher has not had acked.
// A core NATS publish into a stream is dropped without a word once the
// stream's ingest queue holds 100,000 messages (nats-server's default
// limit), which a publisher flat out on the same host reaches: the loss
// would be the tool's, not the sidecar's. With acks and this window the
// queue stays far below that, every message is known stored, and the
// window is wide enough that the round trip never idles the publisher.
const ackWindow = 16384

// ackTimeout is how long a JetStream publisher waits for the window to
// open or the last acks to come in.
const ackTimeout = time.Minute

// ackCounter counts the acks of publishes sent with its one reply subject.
// One subscription and a count, instead of nats.go's future per message
// (a map entry, a reply subject and a timer each), keep the publisher's
// cost per message near a core publish's, so that it is not the
// bottleneck of the stream it measures.
type ackCounter struct {
	inbox    string
	done     atomic.Int64 // acks in, stored or refused
	failed   atomic.Int64
	firstErr atomic.Pointer[string]
	wake     chan struct{} // a token when acks came in
}

func newAckCounter(nc *nats.Conn) (*ackCounter, error) {
	a := &ackCounter{inbox: nc.NewInbox(), wake: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(a.inbox, a.ack)
	if err == nil {
		err = sub.SetPendingLimits(-1, 512<<20)
	}
	if err == nil {
		err = nc.FlushTimeout(10 * time.Second)
	}
	if err != nil {
		return nil, fmt.Errorf("ack subscription: %w", err)
	}
	return a, nil
}

// ack reads one reply: a PubAck, an error reply, or a status without
// body (503: no stream takes the subject).
func (a *ackCounter) ack(m *nats.Msg) {
	if bad := len(m.Data) == 0 || bytes.Contains(m.Data, []byte(`"error"`)); bad {
		a.failed.Add(1)
		msg := string(m.Data)
		if msg == "" {
			msg = "status " + m.Header.Get("Status") + " " + m.Header.Get("Description")
		}
		a.firstErr.CompareAndSwap(nil, &msg)
	}
	a.done.Add(1)
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// waitBelow waits until fewer than limit of sent are unacknowledged.
func (a *ackCounter) waitBelow(sent, limit int64) error {
	if sent-a.done.Load() < limit {
		return nil
	}
	t := time.NewTimer(ackTimeout)
	defer t.Stop()
	for sent-a.done.Load() >= limit {
		select {
		case <-a.wake:
		case <-t.C:
			return fmt.Errorf("jetstream: %d of %d publishes unacknowledged after %v", sent-a.done.Load(), sent, ackTimeout)
		}
	}
	return nil
}

// publish sends n messages, cycling through evs, each with ts = the time
// it is sent (refreshed every 32 messages when flooding, every burst when
// paced). With acks, each asks the stream for an ack and at most
// ackWindow are outstanding; the result's End is the last ack's arrival.
func publish(nc *nats.Conn, evs []event, n int64, rate float64, acks *ackCounter) (publishResult, error) {
	var res publishResult
	buf := make([]byte, 0, 4096)
	var ts []byte
	stamp := func(now time.Time) { ts = now.UTC().AppendFormat(ts[:0], gen.TSLayout) }
	var i int64
	send := func() error {
		e := &evs[i%int64(len(evs))]
		buf = append(append(append(append(buf[:0], `{"ts":"`...), ts...), `",`...), e.body...)
		res.Bytes += int64(len(buf))
		if acks == nil {
			return nc.Publish(e.subject, buf)
		}
		if err := acks.waitBelow(i, ackWindow); err != nil {
			return err
		}
		return nc.PublishRequest(e.subject, acks.inbox, buf)
	}
	start := time.Now()
	res.Start = start.UnixNano()
	if rate <= 0 {
		for ; i < n; i++ {
			if i%32 == 0 {
				stamp(time.Now())
			}
			if err := send(); err != nil {
				return res, err
			}
		}
	} else {
		// Paced: every tick, send what is due since start.
		deadline := start.Add(time.Duration(float64(n)/rate*float64(time.Second)) + time.Minute)
		for i < n {
			now := time.Now()
			if now.After(deadline) {
				return res, fmt.Errorf("paced sending fell behind: %d of %d sent", i, n)
			}
			due := min(n, int64(now.Sub(start).Seconds()*rate)+1)
			if due <= i {
				time.Sleep(500 * time.Microsecond)
				continue
			}
			stamp(now)
			for ; i < due; i++ {
				if err := send(); err != nil {
					return res, err
				}
			}
		}
	}
	if err := nc.FlushTimeout(time.Minute); err != nil {
		return res, err
	}
	res.Sent = i
	if acks != nil {
		if err := acks.waitBelow(i, 1); err != nil {
			return res, err
		}
		res.AckFailed = acks.failed.Load()
		res.Acked = acks.done.Load() - res.AckFailed
		if p := acks.firstErr.Load(); p != nil {
			res.AckError = *p
		}
	}
	res.End = time.Now().UnixNano()
	return res, nil
}

// ---- sink ----

type sinkResult struct {
	Received int64 `json:"received"`
	First    int64 `json:"first_unix_nano"`
	Last     int64 `json:"last_unix_nano"`
	Dropped  int64 `json:"dropped"`
	CPU      int64 `json:"cpu_ns"` // user+system CPU of the process from ready to the end
}

func selfCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func runSink(args []string, stdout, stderr io.Writer) int {
	fs := cmdutil.NewFlags(prog, "sink", stderr)
	url := fs.String("url", "", "NATS URL")
	subject := fs.String("subject", "rag.trace.>", "subject to count")
	n := fs.Int64("n", 1_000_000, "messages to wait for")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	nc, err := nats.Connect(*url, nats.Name("shadoweval-load sink"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		fmt.Fprintln(stderr, "sink:", err)
		return 1
	}
	defer nc.Close()
	var received, first, last atomic.Int64
	done := make(chan struct{})
	// The same subscription as the sidecar's (async handler, pending limits
	// -1 messages / 512 MiB), minus the work: count and note the time.
	sub, err := nc.Subscribe(*subject, func(*nats.Msg) {
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		last.Store(now)
		if received.Add(1) == *n {
			close(done)
		}
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, 512<<20)
	}
	if err == nil {
		err = nc.FlushTimeout(10 * time.Second)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sink:", err)
		return 1
	}
	cpu0 := selfCPU()
	fmt.Fprintln(stdout, "ready")
	select {
	case <-done:
	case <-time.After(*timeout):
	}
	var res sinkResult
	res.CPU = selfCPU() - cpu0
	if d, err := sub.Dropped(); err == nil {
		res.Dropped = int64(d)
	}
	sub.Unsubscribe() //nolint:errcheck // counting is over either way
	res.Received, res.First, res.Last = received.Load(), first.Load(), last.Load()
	b, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "result %s\n", b)
	return 0
}

// hostileBodies are what a broken or malicious producer sends; each follows
// the `{"ts":"…",` prefix the publisher writes. Every one must be rejected
// with a reason (or, for the arm flood, folded into the "_other" arm).
var hostileBodies = []struct{ subject, body string }{
	{"rag.trace.live", `"qid":5}`},                                                                                    // wrong type
	{"rag.trace.live", `"q":"where is the qid?"}`},                                                                    // missing qid
	{"rag.trace.live", `"qid":"","q_id":""}`},                                                                         // empty qid
	{"rag.trace.live", `"qid":"A1","answer_json":{"claim":"cut short`},                                                // invalid JSON
	{"rag.trace.live", `"qid":"A1","latency_ms":1e999}`},                                                              // number overflow
	{"rag.trace.live", "\"qid\":\"\xff\xfe\"}"},                                                                       // invalid UTF-8
	{"rag.trace.live", `"qid":"A1","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`},             // deep nesting
	{"rag.trace.live", `"qid":"A1","retrieved_ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 5000), ",") + `]}`}, // too many top-k items
	{"rag.trace.flood-%d", `"qid":"A0000001","retrieved_ids":["p1#1"]}`},                                              // arm flood: folded into _other
}

// mixHostile replaces one event in every 1/share with a hostile one,
// cycling through the kinds; arm-flood subjects get a fresh arm each time.
// keyed adds the key token as makeEvents does.
func mixHostile(evs []event, share float64, keyed bool) {
	if share <= 0 {
		return
	}
	every := max(1, int(1/share+0.5))
	k := 0
	for i := every - 1; i < len(evs); i += every {
		h := hostileBodies[k%len(hostileBodies)]
		subject := h.subject
		if strings.Contains(subject, "%d") {
			subject = fmt.Sprintf(subject, k)
		}
		evs[i] = event{subject: keySubject(subject, []byte("{"+h.body), keyed), body: []byte(h.body)}
		k++
	}
}
