package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shadoweval/shadoweval/testenv"
)

// kvState is a test's summary of changes: "key=value" or "key deleted".
func kvState(cs []KVChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		if c.Deleted {
			out[i] = c.Key + " deleted"
		} else {
			out[i] = c.Key + "=" + string(c.Value)
		}
	}
	return out
}

// nextChanges reads changes from w until it has n of them.
func nextChanges(t *testing.T, ctx context.Context, w *KVWatch, n int) []string {
	t.Helper()
	var got []KVChange
	for len(got) < n {
		cs, err := w.Next(ctx, 64)
		if err != nil {
			t.Fatalf("Next after %v: %v", kvState(got), err)
		}
		got = append(got, cs...)
	}
	if len(got) != n {
		t.Fatalf("got changes %v, want %d", kvState(got), n)
	}
	return kvState(got)
}

func sameList(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestWatchKV: a bucket written by another program is read whole, then
// followed: puts, updates, deletes and purges arrive in order.
func TestWatchKV(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, testenv.Timeout)

	if _, err := WatchKV(ctx, nc, "GOLD", "", false, 1); !errors.Is(err, ErrBucketNotFound) {
		t.Fatalf("WatchKV of a missing bucket without create: %v, want ErrBucketNotFound", err)
	}

	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "GOLD", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string) {
		t.Helper()
		if _, err := kv.PutString(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	put("b", "1")
	put("a", "1")
	put("c", "1")
	put("b", "2")
	if err := kv.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	put("e", "1")
	if err := kv.Purge(ctx, "e"); err != nil {
		t.Fatal(err)
	}

	w, err := WatchKV(ctx, nc, "GOLD", "", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if w.Bucket() != "GOLD" {
		t.Errorf("Bucket() = %q", w.Bucket())
	}
	initial, err := w.Initial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kvState(initial), []string{"a=1", "b=2"}; !sameList(got, want) {
		t.Errorf("Initial = %v, want %v (the latest values, deleted and purged keys left out)", got, want)
	}

	put("d", "1")
	if got, want := nextChanges(t, ctx, w, 1), []string{"d=1"}; !sameList(got, want) {
		t.Errorf("after a put: %v, want %v", got, want)
	}
	put("a", "2")
	if err := kv.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	put("f", "1")
	if got, want := nextChanges(t, ctx, w, 4), []string{"a=2", "b deleted", "d deleted", "f=1"}; !sameList(got, want) {
		t.Errorf("after an update, a delete, a purge and a put: %v, want %v", got, want)
	}

	// max bounds a batch.
	put("g", "1")
	put("h", "1")
	for _, want := range []string{"g=1", "h=1"} {
		cs, err := w.Next(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := kvState(cs); !sameList(got, []string{want}) {
			t.Errorf("Next(1) = %v, want [%s]", got, want)
		}
	}

	// A second watch starts from the bucket as it now is.
	w2, err := WatchKV(ctx, nc, "GOLD", "", false, 1)
	if err != nil {
		t.Fatal(err)
	}
	initial, err = w2.Initial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kvState(initial), []string{"a=2", "f=1", "g=1", "h=1"}; !sameList(got, want) {
		t.Errorf("Initial of a second watch = %v, want %v", got, want)
	}

	w2.Stop()
	if _, err := w2.Next(ctx, 8); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("Next after Stop: %v, want ErrWatchEnded", err)
	}
}

// TestWatchKVCreate: with create, a missing bucket is made and is empty.
func TestWatchKVCreate(t *testing.T) {
	t.Parallel()
	nc, js := testenv.RunJetStreamConn(t)
	ctx := testenv.Context(t, testenv.Timeout)

	w, err := WatchKV(ctx, nc, "NEW", "test bucket", true, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	initial, err := w.Initial(ctx)
	if err != nil || len(initial) != 0 {
		t.Fatalf("Initial of a new bucket = %v, %v; want nothing", kvState(initial), err)
	}
	kv, err := js.KeyValue(ctx, "NEW")
	if err != nil {
		t.Fatalf("the bucket was not created: %v", err)
	}
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if got := nextChanges(t, ctx, w, 1); !sameList(got, []string{"k=v"}) {
		t.Errorf("after a put: %v", got)
	}
}

// TestWatchKVErrors: a server without JetStream and a connection that
// closes end the watch with an error, never a hang.
func TestWatchKVErrors(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t, testenv.Timeout)

	plain := testenv.Connect(t, testenv.RunBasic(t).ClientURL())
	if _, err := WatchKV(ctx, plain, "GOLD", "", false, 1); err == nil {
		t.Error("WatchKV on a server without JetStream: no error")
	}

	nc, _ := testenv.RunJetStreamConn(t)
	w, err := WatchKV(ctx, nc, "GOLD", "", true, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := w.Initial(ctx); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if _, err := w.Next(ctx, 8); !errors.Is(err, ErrWatchEnded) {
		t.Errorf("Next after the connection closed: %v, want ErrWatchEnded", err)
	}
}
