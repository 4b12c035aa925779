package sidecar_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
)

// kvGold are bucket values, one gold item each, keyed by qid. A1 here is
// unanswerable, unlike gold_v1's, so which of the two is in force shows in
// under_refusal.
var kvGold = map[string]string{
	"A1":          `{"qid":"A1","answerable":false,"gold_claim_substr":[],"gold_citations":[]}`,
	"A2":          `{"qid":"A2","answerable":true,"gold_claim_substr":["gamma listens on 8443"],"gold_citations":["p2#1","p2#2"],"type":"code"}`,
	"N1":          `{"qid":"N1","answerable":true,"gold_claim_substr":["epsilon is new"],"gold_citations":["p4#1"]}`,
	"N2":          `{"qid":"N2","answerable":true,"gold_claim_substr":["zeta is fast"],"gold_citations":["p5#1"]}`,
	"A1.answered": `{"qid":"A1","answerable":true,"gold_claim_substr":["alpha rejects null keys"],"gold_citations":["p1#1"]}`,
}

// n2Trace is a right answer for N2.
var n2Trace = event{QID: "N2", RetrievedIDs: []string{"p5#1"}, DeltaS: []float64{0.1},
	Answer: &answer{Claim: "Zeta is fast.", Citations: []string{"p5#1"}}}

// goldBucket is a gold.kv_bucket on a JetStream server of the test, as an
// operator would have created it before starting the sidecar.
type goldBucket struct {
	t   testing.TB
	url string
	kv  jetstream.KeyValue
}

func newGoldBucket(t testing.TB, name string) *goldBucket {
	t.Helper()
	srv := testenv.RunJetStream(t)
	nc := testenv.Connect(t, srv.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name})
	if err != nil {
		t.Fatal(err)
	}
	return &goldBucket{t: t, url: srv.ClientURL(), kv: kv}
}

func (b *goldBucket) put(key, value string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := b.kv.PutString(ctx, key, value); err != nil {
		b.t.Fatalf("put %s: %v", key, err)
	}
}

func (b *goldBucket) delete(key string, purge bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	del := b.kv.Delete
	if purge {
		del = b.kv.Purge
	}
	if err := del(ctx, key); err != nil {
		b.t.Fatalf("delete %s: %v", key, err)
	}
}

// startWithBucket runs a sidecar on b's server with gold.kv_bucket set and
// gold.file set to goldFile ("" for none); its NATS client is on that
// server too.
func startWithBucket(t testing.TB, b *goldBucket, goldFile string, logs *syncBuffer) *testApp {
	t.Helper()
	h := startApp(t, appOptions{goldFile: goldFile, logs: logs, configure: func(c *config.Config) {
		c.NATS.URL = b.url
		c.Gold.KVBucket = b.kv.Bucket()
		if goldFile == "" {
			c.Gold.File = ""
		}
	}})
	h.NC = testenv.Connect(t, b.url)
	return h
}

// logHas tells whether one line of the log holds every part.
func logHas(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

const kvRejected = "shadoweval_gold_kv_rejected_values_total"

// TestGoldKV: with gold.kv_bucket alone, the bucket is the gold: read
// whole at start (its bad values refused, counted and logged, the rest in
// force), then followed: a put adds or replaces an item, a delete or purge
// removes it, a bad value put over a good one removes it too.
func TestGoldKV(t *testing.T) {
	t.Parallel()
	b := newGoldBucket(t, "GOLD")
	b.put("A2", kvGold["A2"])
	b.put("N1", kvGold["N1"])
	b.put("BAD", `{"qid":"BAD",`)
	b.put("X1", `{"qid":"Y1","answerable":true}`)
	b.put("F1", `{"qid":"F1"}`)
	logs := &syncBuffer{}
	h := startWithBucket(t, b, "", logs)

	if code, body := h.Get("/-/ready"); code != http.StatusOK {
		t.Errorf("GET /-/ready: %d %s", code, body)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 2)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 1)
	for reason, key := range map[string]string{"invalid_json": "BAD", "qid_mismatch": "X1", "bad_field": "F1"} {
		h.CheckMetric(kvRejected, map[string]string{"reason": reason}, 1)
		if !logHas(logs.String(), "gold KV value refused", "key="+key, "reason="+reason) {
			t.Errorf("no log line of the refused key %s (%s):\n%s", key, reason, logs.String())
		}
	}

	// Whole events and split halves of qids only the bucket has are scored;
	// A1 is in no gold.
	h.PublishJSON("rag.trace.k", goodTrace("N1"))
	h.PublishJSON("rag.trace.k", goodTrace("A1"))
	ret := goodTrace("A2")
	ret.RequestID, ret.Answer = "r1", nil
	h.PublishJSON("rag.retrieval.k", ret)
	h.PublishJSON("rag.answer.k", event{QID: "A2", RequestID: "r1", Answer: goodTrace("A2").Answer})
	h.waitEvents("k", map[string]int64{"scored": 2, "unlabeled": 1})

	// A put while running: N2 joins from then on.
	h.PublishJSON("rag.trace.k", n2Trace)
	h.waitEvents("k", map[string]int64{"scored": 2, "unlabeled": 2})
	b.put("N2", kvGold["N2"])
	h.WaitMetric("shadoweval_gold_items", nil, 3)
	h.PublishJSON("rag.trace.k", n2Trace)
	h.waitEvents("k", map[string]int64{"scored": 3, "unlabeled": 2})

	// A delete and a purge: N1 and N2 are unlabeled again.
	b.delete("N1", false)
	b.delete("N2", true)
	h.WaitMetric("shadoweval_gold_items", nil, 1)
	h.PublishJSON("rag.trace.k", goodTrace("N1"))
	h.PublishJSON("rag.trace.k", n2Trace)
	h.waitEvents("k", map[string]int64{"scored": 3, "unlabeled": 4})

	// A bad value over a good one: counted, logged, and the key has no item
	// (as after a restart, which would read only the bad value).
	b.put("A2", `{"qid":"A2","answerable":"yes"}`)
	h.WaitMetric(kvRejected, map[string]string{"reason": "bad_field"}, 2)
	h.WaitMetric("shadoweval_gold_items", nil, 0)
	if !logHas(logs.String(), "gold KV value refused", "key=A2", "reason=bad_field", "answerable") {
		t.Errorf("no log line of the refused key A2:\n%s", logs.String())
	}
	h.PublishJSON("rag.trace.k", goodTrace("A2"))
	h.waitEvents("k", map[string]int64{"scored": 3, "unlabeled": 5})

	// Fixed: A2 is back.
	b.put("A2", kvGold["A2"])
	h.WaitMetric("shadoweval_gold_items", nil, 1)
	h.PublishJSON("rag.trace.k", goodTrace("A2"))
	h.waitEvents("k", map[string]int64{"scored": 4, "unlabeled": 5})

	// POST /-/reload with no file has nothing to read and keeps the set.
	if code, body := h.Post("/-/reload"); code != http.StatusOK {
		t.Errorf("POST /-/reload without a gold file: %d %s", code, body)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 1)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 2)
}

// TestGoldKVWithFile: the bucket's items join the file's and win over the
// file's item of the same qid; a delete brings the file's item back, and a
// file reload keeps the bucket's items.
func TestGoldKVWithFile(t *testing.T) {
	t.Parallel()
	b := newGoldBucket(t, "GOLD")
	b.put("A1", kvGold["A1"]) // unanswerable: overrides gold_v1's A1
	b.put("N1", kvGold["N1"]) // only in the bucket
	h := startWithBucket(t, b, "testdata/gold_v1.jsonl", nil)
	h.CheckMetric("shadoweval_gold_items", nil, 7) // gold_v1's six and N1

	h.PublishJSON("rag.trace.f", goodTrace("N1"))
	h.PublishJSON("rag.trace.f", goodTrace("A1"))
	rep := h.waitEvents("f", map[string]int64{"scored": 2})
	if n := samples(t, rep, "under_refusal"); n != 1 {
		t.Errorf("under_refusal samples %d, want 1: the bucket's A1 (unanswerable) must be in force", n)
	}

	// The bucket's A1 goes (and N2 comes, to know when): the file's A1,
	// answerable, is in force again.
	b.delete("A1", false)
	b.put("N2", kvGold["N2"])
	h.WaitMetric("shadoweval_gold_items", nil, 8)
	h.PublishJSON("rag.trace.f", goodTrace("A1"))
	h.PublishJSON("rag.trace.f", n2Trace)
	rep = h.waitEvents("f", map[string]int64{"scored": 4})
	if n := samples(t, rep, "under_refusal"); n != 1 {
		t.Errorf("under_refusal samples %d, want still 1: the file's A1 (answerable) must be back", n)
	}

	// A new file: its items and the bucket's (N1 is in both now).
	replaceFile(t, "testdata/gold_v2.jsonl", h.GoldPath)
	if code, body := h.Post("/-/reload"); code != http.StatusOK {
		t.Fatalf("POST /-/reload: %d %s", code, body)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 8) // gold_v2's seven and N2
	h.PublishJSON("rag.trace.f", n2Trace)
	h.waitEvents("f", map[string]int64{"scored": 5})

	// A refused file keeps the bucket's items too.
	replaceFile(t, "testdata/gold_bad.jsonl", h.GoldPath)
	if code, _ := h.Post("/-/reload"); code < 400 {
		t.Errorf("POST /-/reload with a bad file: %d, want an error", code)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 8)
	b.put("A1", kvGold["A1.answered"])
	h.WaitMetric("shadoweval_gold_items", nil, 8)
}

// TestGoldKVEmbedded: the embedded server starts empty, so there the
// bucket is created; items put later join.
func TestGoldKVEmbedded(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{embedded: true, configure: func(c *config.Config) {
		c.Gold.File = ""
		c.Gold.KVBucket = "GOLD"
	}})
	h.CheckMetric("shadoweval_gold_items", nil, 0)
	if code, body := h.Get("/-/ready"); code != http.StatusOK {
		t.Errorf("GET /-/ready with an empty bucket: %d %s", code, body)
	}
	js, err := jetstream.New(h.NC)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	kv, err := js.KeyValue(ctx, "GOLD")
	if err != nil {
		t.Fatalf("the embedded server has no bucket GOLD: %v", err)
	}
	if _, err := kv.PutString(ctx, "N2", kvGold["N2"]); err != nil {
		t.Fatal(err)
	}
	h.WaitMetric("shadoweval_gold_items", nil, 1)
	h.PublishJSON("rag.trace.e", n2Trace)
	h.waitEvents("e", map[string]int64{"scored": 1})
}

// TestGoldKVStartErrors: a bucket that cannot be read stops the start with
// an error naming gold.kv_bucket, with or without a gold file; a missing
// default gold file says how to use the bucket alone.
func TestGoldKVStartErrors(t *testing.T) {
	t.Parallel()
	jsURL := testenv.RunJetStream(t).ClientURL()
	plainURL := testenv.RunBasic(t).ClientURL()
	dir := t.TempDir()
	file := copyFile(t, "testdata/gold_v1.jsonl", dir, "gold.jsonl")
	cases := []struct {
		name, url, file string
		want            []string
	}{
		{"missing bucket", jsURL, "", []string{`gold.kv_bucket "NOPE"`, "no such KV bucket", "nats kv add NOPE"}},
		{"missing bucket with a file", jsURL, file, []string{`gold.kv_bucket "NOPE"`, "no such KV bucket"}},
		{"no JetStream", plainURL, "", []string{`gold.kv_bucket "NOPE"`}},
		{"missing file", jsURL, dir + "/none.jsonl", []string{"none.jsonl", `set gold.file to ""`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.url, tc.file)
			cfg.Gold.KVBucket = "NOPE"
			app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			err = app.Start(ctx)
			if err == nil {
				app.Stop(ctx) //nolint:errcheck
				t.Fatal("Start succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start: %v\nwant it to say %q", err, w)
				}
			}
			if app.Ready() == nil {
				t.Error("Ready after a failed start")
			}
		})
	}
}
