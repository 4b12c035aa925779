package sidecar_test

// End-to-end tests of JetStream mode (SPEC §9) with the sidecar in child
// processes, so that it can be killed with SIGKILL: the test binary runs
// itself again with TestHelperSidecarProcess selected and the child's
// config in the environment. The NATS server runs in the test, with
// JetStream stored in a temp dir, so that it can be stopped and started
// again on the same port and store while the sidecars run. Nothing sleeps
// to let time pass: every wait polls a condition.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
)

const (
	childConfigEnv = "SHADOWEVAL_TEST_CHILD_CONFIG"
	childAddrEnv   = "SHADOWEVAL_TEST_CHILD_ADDR"
)

// TestHelperSidecarProcess is not a test: it is the sidecar of a child
// process started by startSidecarProcess (it skips otherwise). It runs the
// App on the real clock with the config file named in the environment,
// writes its HTTP address to a file once started and stops on SIGTERM.
func TestHelperSidecarProcess(t *testing.T) {
	cfgPath := os.Getenv(childConfigEnv)
	if cfgPath == "" {
		t.Skip("the sidecar child process of the JetStream tests")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	app, err := sidecar.New(sidecar.Options{
		Config: cfg,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	err = app.Start(startCtx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: start:", err)
		os.Exit(2)
	}
	addrFile := os.Getenv(childAddrEnv)
	if err := os.WriteFile(addrFile+".tmp", []byte(app.Addr()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := app.Stop(stopCtx); err != nil {
		fmt.Fprintln(os.Stderr, "child: stop:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// sidecarProcess is a sidecar running in a child process.
type sidecarProcess struct {
	*testApp // HTTP helpers only: Sidecar and NC are nil
	cmd      *exec.Cmd
	logs     *syncBuffer
	done     chan struct{}
}

// startSidecarProcess runs the sidecar with the config at cfgPath in a
// child process and waits until it serves HTTP. The child is stopped when
// the test ends; its output is logged if the test failed.
func startSidecarProcess(t *testing.T, name, cfgPath string) *sidecarProcess {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSidecarProcess$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), childConfigEnv+"="+cfgPath, childAddrEnv+"="+addrFile)
	p := &sidecarProcess{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.terminate()
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", name, cmd.Process.Pid, p.logs.String())
		}
	})
	var addr []byte
	poll(t, name+" to serve HTTP", func() string {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", name, cmd.ProcessState, p.logs.String())
		default:
		}
		var err error
		if addr, err = os.ReadFile(addrFile); err != nil {
			return err.Error()
		}
		return ""
	})
	p.testApp = &testApp{&apptest.App{T: t, Base: "http://" + string(addr), Timeout: waitTimeout}}
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *sidecarProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate asks the child to stop (SIGTERM) and kills it if it does not.
func (p *sidecarProcess) terminate() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.kill()
	}
}

// writeJetStreamConfig writes a sidecar config in JetStream mode with the
// durable name given.
func writeJetStreamConfig(t *testing.T, url, durable, goldPath string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), durable+".yaml")
	data := fmt.Sprintf("nats:\n  url: %q\n  jetstream: true\n  stream: RAG\n  durable: %s\ngold:\n  file: %q\nhttp:\n  listen: 127.0.0.1:0\nlog:\n  level: info\n", url, durable, goldPath)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// jsPub is one message to publish and the outcome it must have in its arm.
type jsPub struct {
	subject, msgID string
	data           []byte
	arm, outcome   string // outcome "": none (the server drops it)
}

// jsTraffic builds n steps of mixed traffic from event number first on,
// with event times from t0: traces with event_id; traces with a
// Nats-Msg-Id only, published twice (the server keeps one); producer
// duplicates (an earlier event_id again, without a Nats-Msg-Id, so the
// server keeps it and the sidecar must count it once); split halves;
// judgement pairs; malformed messages; and one event too old for any
// window.
func jsTraffic(first, n int, t0 time.Time) []jsPub {
	qids := []string{"A1", "A2", "U1", "L1", "L2", "L3", "Z9"} // Z9: no gold item
	var out []jsPub
	ts := func(i int) string {
		return t0.Add(time.Duration(i) * 10 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	}
	trace := func(i int, arm string) map[string]any {
		qid := qids[i%len(qids)]
		ev := map[string]any{"qid": qid, "ts": ts(i), "retrieved_ids": []string{"p1#1", "p2#1", "p3#1"}, "delta_s": []float64{0.1 + float64(i%7)/10, 0.5, 0.9}}
		claim := "alpha rejects null keys; gamma listens on 8443; lambda one converges"
		switch {
		case qid == "U1" && i%3 == 0:
			claim = "not in context"
		case i%5 == 0:
			claim = "something else"
		}
		cites := []string{"p1#1"}
		if i%4 == 1 {
			cites = []string{"p2#1"}
		}
		ev["answer_json"] = map[string]any{"claim": claim, "citations": cites}
		ev["delta_s_cited"] = float64(i%9) / 10
		if strings.HasPrefix(qid, "L") {
			ev["lambda_state"] = []string{"→", "→", "←", "<>"}[i%4]
		}
		return ev
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	for i := first; i < first+n; i++ {
		arm := []string{"live", "canary"}[i%2]
		outcome := "scored"
		if qids[i%len(qids)] == "Z9" {
			outcome = "unlabeled"
		}
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5:
			ev := trace(i, arm)
			ev["event_id"] = "e" + strconv.Itoa(i)
			if i%50 == 13 {
				ev["ts"] = t0.Add(-3 * time.Hour).UTC().Format(time.RFC3339Nano) // older than any window
				if outcome == "scored" {
					outcome = "late" // an unknown qid is unlabeled before its time is judged
				}
			}
			out = append(out, jsPub{subject: "rag.trace." + arm, data: mustJSON(ev), arm: arm, outcome: outcome})
		case 6:
			ev := trace(i, arm)
			data := mustJSON(ev)
			id := "m" + strconv.Itoa(i)
			out = append(out,
				jsPub{subject: "rag.trace." + arm, msgID: id, data: data, arm: arm, outcome: outcome},
				jsPub{subject: "rag.trace." + arm, msgID: id, data: data}) // the server drops it
		case 7:
			// The event of i-7 again (its arm is i-7's), without a
			// Nats-Msg-Id: a producer retry.
			j := i - 7
			darm := []string{"live", "canary"}[j%2]
			ev := trace(j, darm)
			ev["event_id"] = "e" + strconv.Itoa(j)
			if j%50 == 13 {
				continue // a retry of the late event would be late too
			}
			out = append(out, jsPub{subject: "rag.trace." + darm, data: mustJSON(ev), arm: darm, outcome: "duplicate"})
		case 8:
			ev := trace(i, arm)
			rid := "r" + strconv.Itoa(i)
			ret := map[string]any{"qid": ev["qid"], "request_id": rid, "ts": ev["ts"], "retrieved_ids": ev["retrieved_ids"], "delta_s": ev["delta_s"], "event_id": "e" + strconv.Itoa(i) + "r"}
			ans := map[string]any{"qid": ev["qid"], "request_id": rid, "ts": ev["ts"], "answer_json": ev["answer_json"], "event_id": "e" + strconv.Itoa(i) + "a"}
			out = append(out,
				jsPub{subject: "rag.retrieval." + arm, data: mustJSON(ret)},
				jsPub{subject: "rag.answer." + arm, data: mustJSON(ans), arm: arm, outcome: outcome}) // one outcome per joined pair
		case 9:
			if i%20 == 9 {
				out = append(out, jsPub{subject: "rag.trace." + arm, data: []byte(`{"qid":"A1","ts":` + strconv.Itoa(i)), arm: arm, outcome: "rejected"})
				continue
			}
			qid := qids[i%6]
			rid := "j" + strconv.Itoa(i)
			labels := []string{"VALID", "REJECT", "NOT_IN_CONTEXT", "ABSTAIN"}
			for k, agent := range []string{"scholar", "auditor"} {
				j := map[string]any{"qid": qid, "request_id": rid, "agent": agent, "label": labels[(i/10+k*(i/20))%4]}
				out = append(out, jsPub{subject: "rag.judgement." + arm, data: mustJSON(j), arm: arm, outcome: "scored"}) // a pair counts scored twice
			}
		}
	}
	return out
}

// expectedEvents sums the outcomes of pubs by arm.
func expectedEvents(pubs []jsPub) map[string]map[string]int64 {
	want := map[string]map[string]int64{}
	for _, p := range pubs {
		if p.outcome == "" {
			continue
		}
		if want[p.arm] == nil {
			want[p.arm] = map[string]int64{}
		}
		want[p.arm][p.outcome]++
	}
	return want
}

// publishAll publishes pubs through JetStream, one at a time (each waits
// for its PubAck: a steady pace set by the server), counting in published.
func publishAll(ctx context.Context, js jetstream.JetStream, pubs []jsPub, published *atomic.Int64) error {
	for _, p := range pubs {
		msg := &nats.Msg{Subject: p.subject, Data: p.data, Header: nats.Header{}}
		if p.msgID != "" {
			msg.Header.Set(nats.MsgIdHdr, p.msgID)
		}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			return fmt.Errorf("publish %s: %w", p.subject, err)
		}
		if ack.Duplicate != (p.msgID != "" && p.outcome == "") {
			return fmt.Errorf("publish %s %s: the server said duplicate=%v", p.subject, p.msgID, ack.Duplicate)
		}
		published.Add(1)
	}
	return nil
}

// allWindows is every report of GET /api/v1/windows (all content types
// together, then per type), keyed by arm/window/type.
func (h *testApp) allWindows(types ...string) map[string]sidecar.WindowReport {
	h.T.Helper()
	out := map[string]sidecar.WindowReport{}
	for _, typ := range append([]string{""}, types...) {
		code, body := h.Get("/api/v1/windows?type=" + typ)
		if code != http.StatusOK {
			h.T.Fatalf("GET /api/v1/windows?type=%s: %d %s", typ, code, body)
		}
		var list []sidecar.WindowReport
		if err := json.Unmarshal(body, &list); err != nil {
			h.T.Fatalf("GET /api/v1/windows: %v", err)
		}
		for _, r := range list {
			out[r.Arm+"/"+r.Window+"/"+r.Type] = r
		}
	}
	return out
}

// eventsSeen sums every outcome over the arms' 1h windows.
func (h *testApp) eventsSeen() int64 {
	var n int64
	for _, r := range h.allWindows() {
		if r.Window == "1h" {
			for _, v := range r.Events {
				n += v
			}
		}
	}
	return n
}

// waitExpected waits until both windows of every arm count exactly want.
func (h *testApp) waitExpected(name string, want map[string]map[string]int64) {
	h.T.Helper()
	poll(h.T, name+" to count "+fmt.Sprint(want), func() string { return h.expectedDiffer(want) })
}

// expectedDiffer is waitExpected's condition: "" once both windows of
// every arm count exactly want.
func (h *testApp) expectedDiffer(want map[string]map[string]int64) string {
	got := h.allWindows()
	for arm, w := range want {
		for _, win := range []string{"5m", "1h"} {
			r, ok := got[arm+"/"+win+"/"]
			if !ok {
				return "no window " + arm + "/" + win
			}
			for _, o := range outcomes {
				if r.Events[o] != w[o] {
					return fmt.Sprintf("%s/%s: %v", arm, win, r.Events)
				}
			}
		}
	}
	return ""
}

// sameWindows fails unless a and b report the same windows, every event
// count and every metric value and sample count equal.
func sameWindows(t *testing.T, what string, a, b map[string]sidecar.WindowReport) {
	t.Helper()
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ra, oka := a[k]
		rb, okb := b[k]
		if !oka || !okb {
			t.Errorf("%s: window %s only in one run (%v, %v)", what, k, oka, okb)
			continue
		}
		for _, o := range outcomes {
			if ra.Events[o] != rb.Events[o] {
				t.Errorf("%s: %s events %v vs %v", what, k, ra.Events, rb.Events)
				break
			}
		}
		if d := diffMetrics(ra, rb); len(d) > 0 {
			t.Errorf("%s: %s metrics differ:\n%s", what, k, strings.Join(d, "\n"))
		}
	}
	if len(keys) < 8 {
		t.Errorf("%s: only %d windows compared: %v", what, len(keys), keys)
	}
}

// waitReady polls GET /-/ready until it answers want.
func (h *testApp) waitReady(name string, want int) {
	h.T.Helper()
	poll(h.T, fmt.Sprintf("%s /-/ready to answer %d", name, want), func() string {
		if code, body := h.Get("/-/ready"); code != want {
			return fmt.Sprintf("%d %s", code, body)
		}
		return ""
	})
}

// TestJetStreamKillRestart: a sidecar killed with SIGKILL mid-stream and
// started again ends with exactly the windows of a sidecar that ran
// throughout (every event count, metric value and sample count, per arm,
// window and content type), and both count every published event once:
// none lost, none counted twice, producer retries counted as duplicates.
// Then the NATS server restarts under both: readiness goes false and true
// again, and the windows stay equal and complete. A last restart, once A
// acked everything, replays without sending the dead letters again.
func TestJetStreamKillRestart(t *testing.T) {
	t.Parallel()
	ns := testenv.RunRestartable(t)
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	cfgA := writeJetStreamConfig(t, ns.URL(), "killed", gold)
	cfgB := writeJetStreamConfig(t, ns.URL(), "steady", gold)

	a := startSidecarProcess(t, "sidecar A", cfgA)
	b := startSidecarProcess(t, "sidecar B", cfgB)
	a.waitReady("A", http.StatusOK)
	b.waitReady("B", http.StatusOK)

	_, js := testenv.ConnectJetStream(t, ns.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	ctx := testenv.Context(t, waitTimeout)

	// The events are stamped 20 s back. A window read at now leaves out
	// the buckets that begin after now, so events stamped ahead of the
	// clock would make two reads a moment apart differ; and an event more
	// than window.max_lateness (1 minute) behind the clock is late, so
	// events stamped a minute back turned late in A's replay after the
	// restart, and not in B. 20 s leaves A 40 s to replay.
	t0 := time.Now().Add(-20 * time.Second)
	pubs := jsTraffic(0, 400, t0)
	want := expectedEvents(pubs)
	var published atomic.Int64
	pubErr := make(chan error, 1)
	go func() { pubErr <- publishAll(ctx, js, pubs, &published) }()

	// Kill A once it has applied some of the stream, while the publisher
	// goes on; start it again when more has been published meanwhile.
	poll(t, "A to apply 60 events", func() string {
		if n := a.eventsSeen(); n < 60 {
			return fmt.Sprintf("%d applied", n)
		}
		return ""
	})
	var killedAt int64
	a, killedAt = killWhilePublishing(t, a, cfgA, &published, len(pubs), pubErr)
	t.Logf("A killed after %d of %d messages were published", killedAt, len(pubs))

	a.waitExpected("A", want)
	b.waitExpected("B", want)
	sameWindows(t, "after kill -9", a.allWindows("prose", "code"), b.allWindows("prose", "code"))
	a.CheckMetric("shadoweval_jetstream_consumer_pending", nil, 0)
	if _, ok := a.MetricValue("shadoweval_jetstream_redeliveries_total", nil); !ok {
		t.Error("/metrics: no shadoweval_jetstream_redeliveries_total")
	}
	if n, _ := b.MetricValue("shadoweval_dedupe_keys", nil); n == 0 {
		t.Error("/metrics: shadoweval_dedupe_keys is 0")
	}

	// The NATS server goes away and comes back on the same port and store.
	ns.Stop()
	a.waitReady("A", http.StatusServiceUnavailable)
	b.waitReady("B", http.StatusServiceUnavailable)
	ns.Start()
	a.waitReady("A", http.StatusOK)
	b.waitReady("B", http.StatusOK)

	more := jsTraffic(400, 100, t0)
	// A producer retry of an event published before the restart.
	more = append(more, jsPub{subject: pubs[0].subject, data: pubs[0].data, arm: pubs[0].arm, outcome: "duplicate"})
	if err := publishAll(ctx, js, more, &published); err != nil {
		t.Fatal(err)
	}
	want = expectedEvents(append(pubs, more...))
	a.waitExpected("A", want)
	b.waitExpected("B", want)
	sameWindows(t, "after the NATS restart", a.allWindows("prose", "code"), b.allWindows("prose", "code"))
	b.CheckMetric("shadoweval_jetstream_consumer_pending", nil, 0)
	b.CheckMetric("shadoweval_nats_disconnects_total", nil, 1)

	// Once A has acked everything, another restart replays the stream
	// without dead-lettering the rejected messages a second time.
	rejected := 0.0
	for _, w := range want {
		rejected += float64(w["rejected"])
	}
	b.CheckMetric("shadoweval_deadletter_messages_total", map[string]string{"result": "success"}, rejected)
	poll(t, "A to have acked the whole stream", func() string {
		str, err := js.Stream(ctx, "RAG")
		if err != nil {
			return err.Error()
		}
		cons, err := str.Consumer(ctx, "killed")
		if err != nil {
			return err.Error()
		}
		ci, last := cons.CachedInfo(), str.CachedInfo().State.LastSeq
		if ci.AckFloor.Stream != last || ci.NumAckPending != 0 {
			return fmt.Sprintf("ack floor %d, ack pending %d, last sequence %d", ci.AckFloor.Stream, ci.NumAckPending, last)
		}
		return ""
	})
	a.kill()
	a = startSidecarProcess(t, "sidecar A (restarted again)", cfgA)
	a.waitExpected("A", want)
	sameWindows(t, "after a restart with everything acked", a.allWindows("prose", "code"), b.allWindows("prose", "code"))
	a.CheckMetric("shadoweval_deadletter_messages_total", map[string]string{"result": "success"}, 0)
	var counted float64
	for _, m := range a.Scrape()["shadoweval_rejected_events_total"].GetMetric() {
		counted += testenv.SampleValue(m)
	}
	if counted != rejected {
		t.Errorf("A counted %v rejected events, want %v", counted, rejected)
	}
}

// killWhilePublishing kills sidecar a (kill -9) while a publisher goes on,
// waits until a fifth more of the total messages are published (or all),
// starts a again from cfgPath and waits for the publisher to finish. It
// returns the new process and how many messages were published at the
// kill.
func killWhilePublishing(t *testing.T, a *sidecarProcess, cfgPath string, published *atomic.Int64, total int, pubErr <-chan error) (*sidecarProcess, int64) {
	t.Helper()
	a.kill()
	killedAt := published.Load()
	poll(t, "more events published while A is dead", func() string {
		if n := published.Load(); n < killedAt+int64(total)/5 && n < int64(total) {
			return fmt.Sprintf("%d published", n)
		}
		return ""
	})
	a = startSidecarProcess(t, "sidecar A (restarted)", cfgPath)
	if err := <-pubErr; err != nil {
		t.Fatal(err)
	}
	return a, killedAt
}
