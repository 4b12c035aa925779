package sidecar_test

// End-to-end test of scale-out (SPEC §10): three replicas in child
// processes share one partitioned stream as two members (member 0 with a
// pinned instance and a hot standby, member 1 alone), next to a single
// replica that owns every partition in a consumer group of its own. Each
// replica's merged answers must equal the single replica's, through a
// kill -9 of member 0's pinned instance and a kill -9 and restart of
// member 1.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

// writeClusterConfig writes the config of one replica: member member of a
// consumer group durable of members members over 3 partitions.
func writeClusterConfig(t *testing.T, url, durable, bucket, goldPath string, members int, member string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), durable+"-"+member+".yaml")
	data := fmt.Sprintf(`nats:
  url: %q
  jetstream: true
  stream: RAG
  durable: %s
gold:
  file: %q
http:
  listen: 127.0.0.1:0
cluster:
  partitions: 3
  members: %d
  member: %q
  kv_bucket: %s
  publish_interval: 500ms
  stale_after: 20s
`, url, durable, goldPath, members, member, bucket)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// keyed gives each message the key token of its qid (PREFIX.<arm>.<key>);
// a message whose qid cannot be read gets a fixed key.
func keyed(pubs []jsPub) []jsPub {
	out := make([]jsPub, len(pubs))
	for i, p := range pubs {
		key := "k0"
		if q := wire.EventQID(p.data); q != "" {
			key = stream.PartitionKey(q)
		}
		p.subject += "." + key
		out[i] = p
	}
	return out
}

func (h *testApp) counter(name string) float64 {
	v, _ := h.MetricValue(name, nil)
	return v
}

// analysisResult is GET /api/v1/analyses/{id}.
func (h *testApp) analysisResult(id string) analysis.Result {
	h.T.Helper()
	var r analysis.Result
	h.GetJSON("/api/v1/analyses/"+id, http.StatusOK, &r)
	return r
}

func TestClusterMergedAnswers(t *testing.T) {
	t.Parallel()
	srv := testenv.RunJetStream(t)
	url := srv.ClientURL()
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")

	single := startSidecarProcess(t, "single replica", writeClusterConfig(t, url, "single", "single_parts", gold, 1, "0"))
	cfg := []string{
		writeClusterConfig(t, url, "shadoweval", "cluster_parts", gold, 2, "0"),
		writeClusterConfig(t, url, "shadoweval", "cluster_parts", gold, 2, "1"),
		writeClusterConfig(t, url, "shadoweval", "cluster_parts", gold, 2, "0"),
	}
	r := make([]*sidecarProcess, 3)
	for i := range r {
		r[i] = startSidecarProcess(t, fmt.Sprintf("replica %d (member %d)", i, []int{0, 1, 0}[i]), cfg[i])
	}
	for i, p := range append([]*sidecarProcess{single}, r...) {
		p.waitReady(fmt.Sprint("replica ", i), http.StatusOK)
	}

	// The analysis is started on member 1's replica, which is killed
	// later: every member keeps it from the analysis bucket.
	started := r[1].startAnalysis("rollout-1")
	for i, p := range append([]*sidecarProcess{single}, r...) {
		poll(t, fmt.Sprint("replica ", i, " to know the analysis"), func() string {
			if code, body := p.Get("/api/v1/analyses/rollout-1"); code != http.StatusOK {
				return fmt.Sprint(code, string(body))
			}
			return ""
		})
	}

	nc, js := testenv.ConnectJetStream(t, url, nats.MaxReconnects(-1))
	ctx := testenv.Context(t, waitTimeout)
	pubs := keyed(jsTraffic(0, 800, started.Since))
	want := expectedEvents(pubs)
	var published atomic.Int64
	phase := func(from, to int) {
		t.Helper()
		if err := publishAll(ctx, js, pubs[from:to], &published); err != nil {
			t.Fatal(err)
		}
	}
	quarter := len(pubs) / 4

	// Kill member 0's pinned instance once it has applied part of the
	// stream: its standby takes over.
	phase(0, quarter)
	var pinned, standby int
	poll(t, "member 0's pinned instance to apply messages", func() string {
		for _, i := range []int{0, 2} {
			if r[i].counter("shadoweval_cluster_deliveries_total") > 0 {
				pinned, standby = i, 2-i
				return ""
			}
		}
		return "no deliveries yet"
	})
	if n := r[standby].counter("shadoweval_cluster_deliveries_total"); n != 0 {
		t.Fatalf("the standby of member 0 was delivered %v messages while the other instance was pinned", n)
	}
	r[pinned].kill()
	t.Logf("member 0's pinned instance (replica %d) killed after %d of %d messages", pinned, published.Load(), len(pubs))
	phase(quarter, 2*quarter)

	// Kill member 1, which has no standby, mid-stream, and start it again.
	r[1].kill()
	// The replica that started the analysis is gone; the others answer.
	if got := r[standby].analysisResult("rollout-1"); got.Analysis != "rollout-1" || got.Since != started.Since {
		t.Fatalf("with replica 1 dead, replica %d answers %+v", standby, got)
	}
	phase(2*quarter, 3*quarter)
	r[1] = startSidecarProcess(t, "replica 1 (member 1, restarted)", cfg[1])
	phase(3*quarter, len(pubs))

	live := []*sidecarProcess{r[standby], r[1]}

	// A message without a key token: one replica of the cluster (and the
	// single replica, in its own group) rejects and dead-letters it.
	deadLetters := subscribe(t, nc, "shadoweval.deadletter")
	testenv.Flush(t, nc)
	if _, err := js.Publish(ctx, "rag.trace.live", []byte(`{"qid":"A1"}`)); err != nil {
		t.Fatal(err)
	}
	unkeyed := func() float64 {
		n := 0.0
		for _, p := range live {
			v, _ := p.MetricValue("shadoweval_rejected_events_total", map[string]string{"reason": sidecar.ReasonNoPartitionKey})
			n += v
		}
		return n
	}
	poll(t, "the unkeyed message to be rejected once by the cluster", func() string {
		if n := unkeyed(); n != 1 {
			return fmt.Sprint(n, " rejections")
		}
		return ""
	})
	seen := 0
	for seen < 2 { // the cluster's and the single replica's
		m := testenv.Next(t, deadLetters)
		if m.Header.Get(stream.HeaderReason) == "" || !strings.HasPrefix(m.Header.Get(stream.HeaderReason), sidecar.ReasonNoPartitionKey) {
			continue // the traffic's malformed events
		}
		seen++
	}
	single.waitExpected("single replica", want)
	for i, p := range live {
		p.waitExpected(fmt.Sprint("live replica ", i), want)
	}
	poll(t, "member 0's standby to be pinned", func() string {
		if n := r[standby].counter("shadoweval_cluster_deliveries_total"); n == 0 {
			return "no delivery to the standby"
		}
		return ""
	})
	// Events carry times up to 8 s after the analysis start, ahead of the
	// clock while they are published, and a window leaves out buckets
	// ahead of the time it is read at: compare once every member's part
	// was written after the last event's time, as the single replica is
	// read after it.
	last := started.Since.Add(time.Duration(800) * 10 * time.Millisecond)
	for i, p := range live {
		poll(t, fmt.Sprint("replica ", i, "'s parts to be written after the last event's time"), func() string {
			code, body := p.Get("/api/v1/windows?arm=live&window=5m")
			var rep sidecar.WindowReport
			if code != http.StatusOK || json.Unmarshal(body, &rep) != nil {
				return fmt.Sprint(code, string(body))
			}
			for _, m := range rep.Members {
				if written := time.Now().Add(-time.Duration(m.AgeSeconds * float64(time.Second))); !written.After(last) {
					return fmt.Sprintf("member %s written %s, last event %s", m.Member, written.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
				}
			}
			return ""
		})
	}
	ref := single.allWindows("prose", "code")
	for i, p := range live {
		got := p.allWindows("prose", "code")
		sameWindows(t, fmt.Sprint("replica ", i, " merged vs the single replica"), got, ref)
		for k, rep := range got {
			if len(rep.Members) != 2 {
				t.Fatalf("replica %d: %s lists %d members, want 2: %+v", i, k, len(rep.Members), rep.Members)
			}
			for _, m := range rep.Members {
				if m.Stale || m.Missing {
					t.Errorf("replica %d: %s: member %s stale or missing: %+v", i, k, m.Member, m)
				}
			}
		}
	}

	// The analysis: every replica's merged verdict and counts are the
	// single replica's, and its checks read the same values.
	want1 := single.analysisResult("rollout-1")
	if want1.Events.Arm == 0 || want1.Events.Baseline == 0 {
		t.Fatalf("the single replica's analysis took no events: %+v", want1.Events)
	}
	for i, p := range live {
		poll(t, fmt.Sprint("replica ", i, "'s analysis to count the single replica's events"), func() string {
			got := p.analysisResult("rollout-1")
			if got.Events != want1.Events {
				return fmt.Sprintf("%+v, single %+v", got.Events, want1.Events)
			}
			return ""
		})
		got := p.analysisResult("rollout-1")
		if got.Verdict != want1.Verdict {
			t.Errorf("replica %d: verdict %s (%s), single replica %s (%s)", i, got.Verdict, got.Reason, want1.Verdict, want1.Reason)
		}
		for j, c := range got.Checks {
			w := want1.Checks[j]
			if fmt.Sprint(deref(c.ArmValue), deref(c.BaselineValue), c.Samples) != fmt.Sprint(deref(w.ArmValue), deref(w.BaselineValue), w.Samples) {
				t.Errorf("replica %d: check %s reads %v/%v %+v, single replica %v/%v %+v", i, c.Name, deref(c.ArmValue), deref(c.BaselineValue), c.Samples, deref(w.ArmValue), deref(w.BaselineValue), w.Samples)
			}
		}
		if len(got.Members) != 2 {
			t.Errorf("replica %d: the analysis lists %d members, want 2", i, len(got.Members))
		}
	}
	b, _ := json.Marshal(want1.Events)
	t.Logf("analysis events %s, verdict %s", b, want1.Verdict)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
