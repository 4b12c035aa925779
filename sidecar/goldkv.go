package sidecar

// Gold from a NATS KV bucket (gold.kv_bucket, SPEC §2.1): each key is a
// qid and its value that qid's gold item, the JSON object of one gold file
// line. Start reads the whole bucket before subscribing, then goldKVLoop
// applies every change as it happens. The bucket's items win over the gold
// file's of the same qid; a file reload leaves them in force.
//
// The bucket is the operators' and must exist: creating an empty one would
// start the sidecar with no gold and every event unlabeled. Only on the
// embedded server, which nobody else can have written to before it started,
// is a missing bucket created.

import (
	"context"
	"errors"
	"fmt"

	"github.com/shadoweval/shadoweval/stream"
)

// goldKVBatch caps the bucket changes applied as one new gold set: a bulk
// load costs one copy of the bucket's items per batch, not per key.
const goldKVBatch = 4096

// openGoldKV binds to gold.kv_bucket and puts its content in force; the
// watch is left for goldKVLoop.
func (a *App) openGoldKV(ctx context.Context) error {
	bucket := a.cfg.Gold.KVBucket
	w, err := stream.WatchKV(ctx, a.nc, bucket, "shadoweval gold items, one per qid", a.embedded != nil, a.cfg.NATS.Replicas)
	if errors.Is(err, stream.ErrBucketNotFound) {
		return fmt.Errorf("gold.kv_bucket %q: no such KV bucket on the NATS server; create it (nats kv add %s) and put one gold item per qid in it: %w", bucket, bucket, err)
	}
	if err != nil {
		return fmt.Errorf("gold.kv_bucket %q: %w", bucket, err)
	}
	initial, err := w.Initial(ctx)
	if err != nil {
		w.Stop()
		return fmt.Errorf("gold.kv_bucket %q: %w", bucket, err)
	}
	a.goldKV = w
	a.stores.note("gold_bucket", bucket, w.Replicas())
	rejects := a.gold.LoadKV(initial)
	a.goldKVRejected(rejects)
	set := a.gold.Current()
	a.log.Info("gold KV bucket loaded", "kv_bucket", bucket, "kv_items", len(set.KV), "refused", len(rejects), "file", set.Source, "items", set.Len())
	return nil
}

// goldKVLoop applies the bucket's changes until ctx ends or the
// connection closes.
func (a *App) goldKVLoop(ctx context.Context) {
	w := a.goldKV
	defer w.Stop()
	for {
		changes, err := w.Next(ctx, goldKVBatch)
		if err != nil {
			if ctx.Err() == nil && !a.stopping.Load() {
				a.log.Error("gold KV bucket no longer watched: its changes are not applied until a restart", "kv_bucket", w.Bucket(), "err", err)
			}
			return
		}
		rejects := a.gold.ApplyKV(changes)
		a.goldKVRejected(rejects)
		deleted := 0
		for _, c := range changes {
			if c.Deleted {
				deleted++
			}
		}
		a.log.Info("gold KV bucket changed", "kv_bucket", w.Bucket(), "puts", len(changes)-deleted, "deletes", deleted, "refused", len(rejects), "items", a.gold.Current().Len())
	}
}

// goldKVRejected counts and logs refused bucket values.
func (a *App) goldKVRejected(rejects []GoldReject) {
	for _, r := range rejects {
		a.metrics.goldKVRejected.WithLabelValues(r.Reason).Inc()
		a.log.Warn("gold KV value refused; the key has no gold item from the bucket", "kv_bucket", a.cfg.Gold.KVBucket, "key", r.Key, "reason", r.Reason, "err", r.Err)
	}
}
