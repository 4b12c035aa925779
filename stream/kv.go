package stream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KV is a NATS key-value bucket of small records whose names may hold
// characters KV keys refuse (':' in analysis ids): each name is stored
// under its unpadded base64url form.
type KV struct {
	kv       jetstream.KeyValue
	replicas int
}

// OpenKV opens bucket, creating it (file storage, one revision per key,
// replicas copies; 0: 1) when missing.
func OpenKV(ctx context.Context, nc *nats.Conn, bucket, description string, replicas int) (*KV, error) {
	kv, n, err := keyValue(ctx, nc, bucket, description, true, replicas)
	if err != nil {
		return nil, err
	}
	return &KV{kv: kv, replicas: n}, nil
}

// Replicas is the bucket's replica count (its own, when it existed).
func (k *KV) Replicas() int { return k.replicas }

// ErrBucketNotFound is the error of WatchKV for a bucket that does not
// exist when it may not create it.
var ErrBucketNotFound = jetstream.ErrBucketNotFound

// keyValue binds to bucket and says how many replicas it has; with
// create, a missing one is created (file storage, one revision per key,
// replicas copies; 0: 1).
func keyValue(ctx context.Context, nc *nats.Conn, bucket, description string, create bool, replicas int) (jetstream.KeyValue, int, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, 0, fmt.Errorf("kv %s: %w", bucket, err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if create && errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: bucket, Description: description, History: 1, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, bucket) // created meanwhile
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("kv %s: %w", bucket, err)
	}
	n, err := BucketReplicas(ctx, kv)
	if err != nil {
		return nil, 0, fmt.Errorf("kv %s: %w", bucket, err)
	}
	return kv, n, nil
}

// BucketReplicas is the replica count of kv's bucket.
func BucketReplicas(ctx context.Context, kv jetstream.KeyValue) (int, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, err
	}
	return max(st.Config().Replicas, 1), nil
}

func kvKey(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

// Put stores value under name.
func (k *KV) Put(ctx context.Context, name string, value []byte) error {
	if _, err := k.kv.Put(ctx, kvKey(name), value); err != nil {
		return fmt.Errorf("kv %s: put %q: %w", k.kv.Bucket(), name, err)
	}
	return nil
}

// Delete removes name; a missing one is no error.
func (k *KV) Delete(ctx context.Context, name string) error {
	if err := k.kv.Purge(ctx, kvKey(name)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("kv %s: delete %q: %w", k.kv.Bucket(), name, err)
	}
	return nil
}

// All returns every stored record by name. A key that is not the form Put
// writes is skipped and named in the error, with the others returned.
func (k *KV) All(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	lister, err := k.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("kv %s: list: %w", k.kv.Bucket(), err)
	}
	var errs []error
	for key := range lister.Keys() {
		name, err := base64.RawURLEncoding.DecodeString(key)
		if err != nil {
			errs = append(errs, fmt.Errorf("kv %s: key %q is not a shadoweval record", k.kv.Bucket(), key))
			continue
		}
		e, err := k.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return out, fmt.Errorf("kv %s: get %q: %w", k.kv.Bucket(), name, err)
		}
		out[string(name)] = e.Value()
	}
	return out, errors.Join(errs...)
}

// KVChange is the new state of one key of a watched bucket.
type KVChange struct {
	Key      string
	Value    []byte // nil when Deleted
	Deleted  bool   // deleted, purged or aged out
	Revision uint64
}

// KVWatch follows every key of a bucket that other programs write, under
// keys of their own choosing (unlike KV, which encodes its names).
type KVWatch struct {
	bucket   string
	replicas int
	w        jetstream.KeyWatcher
	cancel   context.CancelFunc
}

// ErrWatchEnded is the error of KVWatch.Next once the watch has stopped
// (Stop, or the connection closed).
var ErrWatchEnded = errors.New("kv watch ended")

// WatchKV binds to bucket and watches every key of it. A missing bucket is
// an error wrapping ErrBucketNotFound, unless create, which makes it (file
// storage, one revision per key, replicas copies; 0: 1). ctx bounds the set-up only: the watch
// lasts until Stop or until nc closes, and survives reconnections. Read
// Initial first, then Next.
func WatchKV(ctx context.Context, nc *nats.Conn, bucket, description string, create bool, replicas int) (*KVWatch, error) {
	kv, n, err := keyValue(ctx, nc, bucket, description, create, replicas)
	if err != nil {
		return nil, err
	}
	// The watcher's context is its lifetime (nats.go unsubscribes when it
	// ends), so it must outlive ctx; ctx still aborts the set-up.
	life, cancel := context.WithCancel(context.Background())
	detach := context.AfterFunc(ctx, cancel)
	kw, err := kv.WatchAll(life)
	if err != nil {
		detach()
		cancel()
		return nil, fmt.Errorf("kv %s: watch: %w", bucket, err)
	}
	w := &KVWatch{bucket: bucket, replicas: n, w: kw, cancel: cancel}
	if !detach() { // ctx ended while the watch started
		w.Stop()
		return nil, fmt.Errorf("kv %s: watch: %w", bucket, ctx.Err())
	}
	return w, nil
}

// Bucket is the watched bucket's name.
func (w *KVWatch) Bucket() string { return w.bucket }

// Replicas is the watched bucket's replica count.
func (w *KVWatch) Replicas() int { return w.replicas }

// Initial waits for the value of every key the bucket held when the watch
// started (and of any changed meanwhile) and returns them by key order;
// deleted keys are left out. Call it once, before Next.
func (w *KVWatch) Initial(ctx context.Context) ([]KVChange, error) {
	latest := map[string]KVChange{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kv %s: initial values: %w", w.bucket, ctx.Err())
		case e, ok := <-w.w.Updates():
			if !ok {
				return nil, fmt.Errorf("kv %s: initial values: %w", w.bucket, ErrWatchEnded)
			}
			if e == nil { // nats.go's end-of-initial-values marker
				out := make([]KVChange, 0, len(latest))
				for _, c := range latest {
					if !c.Deleted {
						out = append(out, c)
					}
				}
				sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
				return out, nil
			}
			latest[e.Key()] = change(e)
		}
	}
}

// Next waits for the next change after Initial and returns it with those
// already waiting behind it, up to max, in the order they happened, so a
// burst of puts is taken as one batch.
func (w *KVWatch) Next(ctx context.Context, max int) ([]KVChange, error) {
	var out []KVChange
	add := func(e jetstream.KeyValueEntry, ok bool) error {
		if !ok {
			return ErrWatchEnded
		}
		if e != nil {
			out = append(out, change(e))
		}
		return nil
	}
	for len(out) == 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.w.Updates():
			if err := add(e, ok); err != nil {
				return nil, err
			}
		}
	}
	for len(out) < max {
		select {
		case e, ok := <-w.w.Updates():
			if err := add(e, ok); err != nil {
				return out, nil // the end shows on the next call
			}
		default:
			return out, nil
		}
	}
	return out, nil
}

// Stop ends the watch.
func (w *KVWatch) Stop() {
	w.cancel()
	// nats.go delivers into the channel under a lock its close also takes:
	// a delivery blocked on a full channel would keep the subscription
	// from closing.
	go func() {
		for range w.w.Updates() {
		}
	}()
}

func change(e jetstream.KeyValueEntry) KVChange {
	c := KVChange{Key: e.Key(), Revision: e.Revision()}
	if e.Operation() == jetstream.KeyValuePut {
		c.Value = e.Value()
	} else {
		c.Deleted = true
	}
	return c
}
