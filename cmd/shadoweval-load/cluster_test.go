package main

import (
	"bytes"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

func TestParseBench(t *testing.T) {
	dir := t.TempDir()
	badSubjects := testenv.WriteFile(t, dir, "bad.yaml", []byte("subjects:\n  trace: rag.trace.*\n"))
	for _, tc := range []struct {
		name       string
		args       []string
		err        string // in stderr; "" for a valid command line
		replicas   int
		partitions int
		key        string
	}{
		{name: "single sidecar", args: nil},
		{name: "single sidecar, keyed", args: []string{"--partition-key", "qid"}, key: "qid"},
		{name: "replicas alone", args: []string{"--replicas", "3"}, replicas: 3, partitions: 3, key: "qid"},
		{name: "one member, three partitions", args: []string{"--replicas", "1", "--partitions", "3"}, replicas: 1, partitions: 3, key: "qid"},
		{name: "more partitions", args: []string{"--replicas", "2", "--partitions", "5", "--partition-key", "qid"}, replicas: 2, partitions: 5, key: "qid"},
		{name: "with a base config", args: []string{"--replicas", "2", "--sidecar-config", "testdata/soak-windows.yaml"}, replicas: 2, partitions: 2, key: "qid"},
		{name: "replicas 0 is one sidecar", args: []string{"--replicas", "0"}},
		{name: "fewer partitions", args: []string{"--replicas", "3", "--partitions", "2"}, err: "--partitions (2) must be at least --replicas (3)"},
		{name: "partitions alone", args: []string{"--partitions", "3"}, err: "--partitions goes with --replicas"},
		{name: "negative replicas", args: []string{"--replicas", "-1"}, err: "--replicas must not be negative"},
		{name: "unkeyed cluster", args: []string{"--replicas", "2", "--partition-key", ""}, err: "--replicas needs --partition-key qid"},
		{name: "unknown key", args: []string{"--partition-key", "event_id"}, err: `--partition-key: want "qid" or "", got "event_id"`},
		{name: "cluster soak", args: []string{"--replicas", "2", "--duration", "1m", "--rate", "10"}, err: "neither --duration nor --trials"},
		{name: "cluster trials", args: []string{"--replicas", "2", "--trials", "1"}, err: "neither --duration nor --trials"},
		{name: "too many partitions", args: []string{"--replicas", "2", "--partitions", "2000"}, err: "cluster.partitions: must be between 0 (one replica) and 1024"},
		{name: "base config the cluster refuses", args: []string{"--replicas", "2", "--sidecar-config", badSubjects}, err: `subjects.trace: "rag.trace.*"`},
		{name: "analyses on one sidecar", args: []string{"--analyses", "8"}},
		{name: "negative analyses", args: []string{"--analyses", "-1"}, err: "--analyses must not be negative"},
		{name: "analyses in a cluster", args: []string{"--replicas", "2", "--analyses", "1"}, err: "--analyses needs one sidecar"},
		{name: "analyses without a canary arm", args: []string{"--arms", "live,shadow", "--analyses", "1"}, err: "--arms with live and canary"},
		{name: "missing base config", args: []string{"--replicas", "2", "--sidecar-config", filepath.Join(dir, "none.yaml")}, err: "--sidecar-config: open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errs bytes.Buffer
			o, code := parseBench(tc.args, io.Discard, &errs)
			if tc.err != "" {
				if o != nil || code != 2 || !strings.Contains(errs.String(), tc.err) {
					t.Fatalf("exit %d, stderr %q: want exit 2 and %q", code, errs.String(), tc.err)
				}
				return
			}
			if o == nil {
				t.Fatalf("refused (exit %d): %s", code, errs.String())
			}
			if o.replicas != tc.replicas || o.partitions != tc.partitions || o.partitionKey != tc.key || o.clustered() != (tc.replicas > 0) {
				t.Fatalf("replicas %d, partitions %d, key %q; want %d, %d, %q", o.replicas, o.partitions, o.partitionKey, tc.replicas, tc.partitions, tc.key)
			}
		})
	}
}

// The config each replica is started with passes config.Load and Validate
// and says what the cluster needs; a base config keeps its own keys but
// for those the tool sets.
func TestClusterConfigLoads(t *testing.T) {
	dir := t.TempDir()
	base := testenv.WriteFile(t, dir, "base.yaml", []byte("nats:\n  url: nats://elsewhere:4222\n  stream: LOAD\nhttp:\n  listen: :1\nwindows:\n  - {length: 1m, resolution: 5s}\n"))
	for _, tc := range []struct {
		replicas, partitions int
		base                 string
		stream               string
		window               time.Duration
	}{
		{1, 3, "", "RAG", 5 * time.Minute},
		{3, 3, "", "RAG", 5 * time.Minute},
		{2, 5, base, "LOAD", time.Minute},
		{2, 2, "testdata/soak-windows.yaml", "RAG", time.Minute},
	} {
		o := &benchOpts{replicas: tc.replicas, partitions: tc.partitions, sidecarConfig: tc.base}
		for m := range tc.replicas {
			listen := "127.0.0.1:" + strconv.Itoa(19464+m)
			b, err := o.clusterConfig(m, "nats://127.0.0.1:4999", listen, "/tmp/gold.jsonl")
			if err != nil {
				t.Fatalf("%+v member %d: %v", tc, m, err)
			}
			path := testenv.WriteFile(t, dir, "member.yaml", b)
			c, err := config.Load(path)
			if err != nil {
				t.Fatalf("%+v member %d: config.Load: %v\n%s", tc, m, err, b)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("%+v member %d: Validate: %v", tc, m, err)
			}
			name, err := c.Cluster.MemberName()
			if err != nil {
				t.Fatal(err)
			}
			if !c.Cluster.Clustered() || c.Cluster.Partitions != tc.partitions || c.Cluster.MemberCount() != tc.replicas || name != strconv.Itoa(m) {
				t.Errorf("%+v member %d: cluster %+v", tc, m, c.Cluster)
			}
			if c.NATS.URL != "nats://127.0.0.1:4999" || !c.NATS.JetStream || c.NATS.Stream != tc.stream || c.HTTP.Listen != listen || c.Gold.File != "/tmp/gold.jsonl" {
				t.Errorf("%+v member %d: nats %+v, http %+v, gold %+v", tc, m, c.NATS, c.HTTP, c.Gold)
			}
			if l, _, ok := c.WindowNamed(config.FormatDuration(tc.window)); !ok || l != tc.window || len(c.Windows) == 0 || time.Duration(c.Windows[0].Length) != tc.window {
				t.Errorf("%+v member %d: windows %+v, want the first %v", tc, m, c.Windows, tc.window)
			}
		}
	}
}

// Keyed events go to rag.trace.<arm>.<key> with the key of the qid the
// sidecar reads (alias included), the arms in turn; unkeyed ones keep
// rag.trace.<arm>.
func TestMakeEventsKeyed(t *testing.T) {
	arms := []string{"live", "canary"}
	plain, err := makeEvents(2000, "compact", 7, 200, arms, false)
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := makeEvents(2000, "compact", 7, 200, arms, true)
	if err != nil {
		t.Fatal(err)
	}
	hashed := 0
	for i, e := range keyed {
		ev := append([]byte("{"), e.body...)
		if !bytes.Equal(e.body, plain[i].body) || plain[i].subject != "rag.trace."+arms[i%2] {
			t.Fatalf("event %d: keyed %s %s, plain %s %s", i, e.subject, e.body, plain[i].subject, plain[i].body)
		}
		tr, err := wire.DecodeTrace(ev)
		if err != nil {
			t.Fatalf("event %d: %v: %s", i, err, ev)
		}
		key := stream.PartitionKey(tr.QID)
		if want := "rag.trace." + arms[i%2] + "." + key; e.subject != want {
			t.Fatalf("event %d: subject %s, want %s (qid %q)", i, e.subject, want, tr.QID)
		}
		if key != tr.QID {
			hashed++
		}
	}
	t.Logf("%d of %d qids hashed", hashed, len(keyed))

	hostile := make([]event, len(hostileBodies))
	mixHostile(hostile, 1, true)
	want := []string{"rag.trace.live", "rag.trace.live", "rag.trace.live", "rag.trace.live.A1", "rag.trace.live.A1"}
	for i, w := range want {
		if hostile[i].subject != w {
			t.Errorf("hostile %d %s: subject %s, want %s", i, hostile[i].body, hostile[i].subject, w)
		}
	}
}

// The JetStream publisher: every message is acknowledged by the stream
// and stored under its keyed subject, past the ack window; without a
// stream for the subject the refusals are counted and one is kept.
func TestPublishJetStream(t *testing.T) {
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, 30*time.Second)
	str, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAG", Subjects: []string{"rag.trace.>"}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := makeEvents(500, "small", 3, 100, []string{"live", "canary"}, true)
	if err != nil {
		t.Fatal(err)
	}
	acks, err := newAckCounter(nc)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(ackWindow + 1000)
	res, err := publish(nc, evs, n, 0, acks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != n || res.Acked != n || res.AckFailed != 0 || res.End < res.Start {
		t.Fatalf("result %+v, want %d sent and acked", res, n)
	}
	info, err := str.Info(ctx, jetstream.WithSubjectFilter("rag.trace.>"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(n) {
		t.Fatalf("stream holds %d messages, want %d", info.State.Msgs, n)
	}
	for subject := range info.State.Subjects {
		if strings.Count(subject, ".") != 3 {
			t.Fatalf("stored on %s, want rag.trace.<arm>.<key>", subject)
		}
	}
	if len(info.State.Subjects) < 2 {
		t.Fatalf("subjects %v: want the keys of many qids", info.State.Subjects)
	}

	other := []event{{subject: "not.in.a.stream", body: []byte(`"qid":"A1"}`)}}
	acks2, err := newAckCounter(nc)
	if err != nil {
		t.Fatal(err)
	}
	res, err = publish(nc, other, 10, 0, acks2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 10 || res.Acked != 0 || res.AckFailed != 10 || !strings.Contains(res.AckError, "503") {
		t.Fatalf("result %+v: want 10 refused with status 503", res)
	}
}

// The cluster's totals add every replica's counters, lag buckets by bound.
func TestAddScrape(t *testing.T) {
	at := time.Unix(100, 0)
	a := scrape{at: at, events: 10, outcomes: map[string]float64{"scored": 9, "rejected": 1}, dropped: 1,
		lag: []bucket{{0.1, 8}, {1, 10}, {posInf(), 10}}}
	b := scrape{at: at.Add(time.Second), events: 30, outcomes: map[string]float64{"scored": 30}, rejected: map[string]float64{"invalid_json": 2},
		lag: []bucket{{0.1, 0}, {1, 20}, {posInf(), 30}}}
	s := addScrape(addScrape(scrape{}, a), b)
	if s.events != 40 || s.dropped != 1 || s.outcomes["scored"] != 39 || s.outcomes["rejected"] != 1 || s.rejected["invalid_json"] != 2 || !s.at.Equal(b.at) {
		t.Fatalf("sum %+v", s)
	}
	want := []bucket{{0.1, 8}, {1, 30}, {posInf(), 40}}
	if len(s.lag) != len(want) {
		t.Fatalf("lag %v, want %v", s.lag, want)
	}
	for i := range want {
		if s.lag[i] != want[i] {
			t.Fatalf("lag %v, want %v", s.lag, want)
		}
	}
	// 8 of 40 under 0.1 s, 30 more under 1 s, 2 beyond: the p50 is in the
	// second bucket, the p99 beyond the last bound.
	if v, n, inf := lagQuantile(scrape{}, s, 0.5); n != 40 || inf || v <= 0.1 || v >= 1 {
		t.Errorf("p50 %v of %v (inf %v)", v, n, inf)
	}
	if _, _, inf := lagQuantile(scrape{}, s, 0.99); !inf {
		t.Errorf("p99 not beyond the last finite bound")
	}
}

func posInf() float64 { return math.Inf(1) }

func TestOwnedShare(t *testing.T) {
	for _, tc := range []struct {
		p, m int
		want string
	}{{3, 1, "3"}, {3, 3, "1"}, {5, 2, "2 or 3"}} {
		if got := ownedShare(tc.p, tc.m); got != tc.want {
			t.Errorf("ownedShare(%d, %d) = %q, want %q", tc.p, tc.m, got, tc.want)
		}
	}
}
