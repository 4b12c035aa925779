package stream

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

// collector records what one instance applied.
type collector struct {
	mu   sync.Mutex
	seqs map[uint64]string // stream sequence → subject handed over
	unk  []string
}

func (c *collector) handle(m *Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seqs == nil {
		c.seqs = map[uint64]string{}
	}
	if _, dup := c.seqs[m.Seq]; dup {
		panic(fmt.Sprintf("sequence %d applied twice", m.Seq))
	}
	c.seqs[m.Seq] = m.Subject
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seqs)
}

func (c *collector) unkeyed(m *Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unk = append(c.unk, m.Subject)
}

func partitionedOptions(member string) PartitionedOptions {
	return PartitionedOptions{
		Stream: "RAG", Group: "shadoweval", Partitions: 3, Members: []string{"0", "1", "2"}, Member: member,
		Subjects:  map[wire.Kind]string{wire.KindTrace: "rag.trace.>", wire.KindAnswer: "rag.answer.>"},
		StartTime: time.Now().Add(-time.Hour), AckWait: 2 * time.Second,
	}
}

func publishKeyed(t *testing.T, nc *nats.Conn, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := nc.Publish(fmt.Sprintf("rag.trace.live.%s", PartitionKey(fmt.Sprintf("q%d", i))), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionedMembers: three members share the stream, each applies
// its partitions' messages only, once, and the partitions match the
// Partitioner's; a message without a key goes to OnUnkeyed once.
func TestPartitionedMembers(t *testing.T) {
	srv := testenv.RunJetStream(t)
	nc := testenv.Connect(t, srv.ClientURL())
	ctx := context.Background()
	var cs [3]collector
	for i := range cs {
		opt := partitionedOptions(fmt.Sprint(i))
		opt.OnUnkeyed = cs[i].unkeyed
		sub, err := ConsumePartitioned(ctx, testenv.Connect(t, srv.ClientURL()), opt, cs[i].handle)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Stop)
		if got := sub.Partitions(); !slices.Equal(got, []int{i}) {
			t.Fatalf("member %d partitions %v", i, got)
		}
	}
	const n = 300
	publishKeyed(t, nc, 0, n)
	if err := nc.Publish("rag.trace.live", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "every message applied", func() bool {
		return cs[0].len()+cs[1].len()+cs[2].len() == n
	})
	p, err := NewPartitioner(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		if cs[i].len() == 0 || cs[i].len() == n {
			t.Errorf("member %d applied %d of %d messages", i, cs[i].len(), n)
		}
	}
	for i := 0; i < n; i++ {
		key := PartitionKey(fmt.Sprintf("q%d", i))
		want := p.Partition(key)
		found := -1
		for m := range cs {
			if _, ok := cs[m].seqs[uint64(i+1)]; ok {
				found = m
			}
		}
		if found != want {
			t.Fatalf("q%d (key %s) applied by member %d, partition %d", i, key, found, want)
		}
	}
	for m := range cs {
		for _, subj := range cs[m].seqs {
			if subj != "rag.trace.live" {
				t.Fatalf("subject handed over %q, want rag.trace.live", subj)
			}
		}
	}
	testenv.Eventually(t, 10*time.Second, "the unkeyed message", func() bool {
		total := 0
		for i := range cs {
			cs[i].mu.Lock()
			total += len(cs[i].unk)
			cs[i].mu.Unlock()
		}
		return total == 1
	})
}

// TestPartitionedStandby: two instances of one member; the pinned one
// applies, and when it stops the standby catches up on what it missed and
// goes on, so that together with the replay on joining every message is
// applied by the standby exactly once.
func TestPartitionedStandby(t *testing.T) {
	srv := testenv.RunJetStream(t)
	nc := testenv.Connect(t, srv.ClientURL())
	ctx := context.Background()
	one := func(c *collector) *PartitionedSubscription {
		opt := partitionedOptions("0")
		opt.Partitions, opt.Members = 1, []string{"0"}
		sub, err := ConsumePartitioned(ctx, testenv.Connect(t, srv.ClientURL()), opt, c.handle)
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	var a, b collector
	subA := one(&a) // creates the stream; pinned
	publishKeyed(t, nc, 0, 50)
	testenv.Eventually(t, 10*time.Second, "the first instance applies", func() bool { return a.len() == 50 })
	subB := one(&b) // a standby, replaying on joining
	t.Cleanup(subB.Stop)
	if b.len() != 50 {
		t.Fatalf("joining replayed %d messages, want 50", b.len())
	}
	publishKeyed(t, nc, 50, 100)
	testenv.Eventually(t, 10*time.Second, "one instance applies the new messages", func() bool {
		return a.len() == 100 || b.len() == 100
	})
	active, standby, subActive := &a, &b, subA
	if b.len() == 100 {
		active, standby, subActive = &b, &a, subB
	}
	if standby.len() != 50 {
		t.Fatalf("the standby applied %d messages, want the 50 of its join", standby.len())
	}
	subActive.Stop()
	publishKeyed(t, nc, 100, 150)
	testenv.Eventually(t, 30*time.Second, "the standby takes over", func() bool { return standby.len() == 150 })
	if active.len() != 100 {
		t.Fatalf("the stopped instance applied %d messages, want 100", active.len())
	}
}

// TestReadGoldFileKeeping: only the rows keep takes are decoded and handed
// over; a row of another qid is skipped even when invalid, and a row whose
// qid cannot be read is decoded and refuses the file.
func TestReadGoldFileKeeping(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := dir + "/" + name
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("gold.jsonl", `{"qid":"q1","question":"a?","answerable":true,"gold_citations":["p1#1"]}
{"qid":"q2","question":"b?","answerable":true,"gold_citations":"not a list"}
{"qid":"q3","question":"c?","answerable":true,"gold_citations":["p3#1"]}
`)
	keep := func(qid string) bool { return qid != "q2" }
	var got []string
	if err := wire.ReadGoldFileKeeping(good, keep, func(g wire.Gold) string { return g.QID }, func(q string) { got = append(got, q) }); err != nil {
		t.Fatalf("the invalid row of a qid not kept refused the file: %v", err)
	}
	if !slices.Equal(got, []string{"q1", "q3"}) {
		t.Fatalf("kept %v, want [q1 q3]", got)
	}
	if err := wire.ReadGoldFile(good, func(g wire.Gold) string { return g.QID }, func(string) {}); err == nil {
		t.Fatal("without keep the invalid row must refuse the file")
	}
	bad := write("bad.jsonl", `{"qid":"q1","question":"a?","answerable":true,"gold_citations":["p1#1"]}
{"question":"no qid","answerable":true,"gold_citations":[]}
`)
	err := wire.ReadGoldFileKeeping(bad, keep, func(g wire.Gold) string { return g.QID }, func(string) {})
	if err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a row without a qid: %v, want an error naming line 2", err)
	}
}
