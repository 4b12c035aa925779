package stream

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KV is a NATS key-value bucket of small records whose names may hold
// characters KV keys refuse (':' in analysis ids): each name is stored
// under its unpadded base64url form.
type KV struct {
	kv jetstream.KeyValue
}

// OpenKV opens bucket, creating it (file storage, one revision per key)
// when missing.
func OpenKV(ctx context.Context, nc *nats.Conn, bucket, description string) (*KV, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("kv %s: %w", bucket, err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Description: description, History: 1, Storage: jetstream.FileStorage})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, bucket) // created meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kv %s: %w", bucket, err)
	}
	return &KV{kv: kv}, nil
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
