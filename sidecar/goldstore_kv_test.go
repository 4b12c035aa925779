package sidecar_test

import (
	"fmt"
	"testing"

	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/stream"
)

// TestGoldStoreKV: the bucket's items overlay the file's, a qid keeps its
// λ group key whichever source holds it and across deletes, and the
// refusals come back with their key and reason.
func TestGoldStoreKV(t *testing.T) {
	path := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	s := sidecar.NewGoldStore(path)
	var changes []int
	s.OnChange = func(set *sidecar.GoldSet) { changes = append(changes, set.Len()) }
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	a1 := sidecar.GoldKey(s, "A1")

	put := func(key, value string) stream.KVChange { return stream.KVChange{Key: key, Value: []byte(value)} }
	del := func(key string) stream.KVChange { return stream.KVChange{Key: key, Deleted: true} }
	rejects := s.LoadKV([]stream.KVChange{
		put("A1", kvGold["A1"]), put("N2", kvGold["N2"]), put("Q", `{"qid":"R","answerable":true}`),
	})
	if len(rejects) != 1 || rejects[0].Key != "Q" || rejects[0].Reason != sidecar.ReasonQIDMismatch {
		t.Errorf("LoadKV refusals %+v, want Q for qid_mismatch", rejects)
	}
	if g, ok := s.Lookup("A1"); !ok || g.Answerable {
		t.Errorf("A1 = %+v, %v: want the bucket's (unanswerable)", g, ok)
	}
	if k := sidecar.GoldKey(s, "A1"); k != a1 {
		t.Errorf("A1's key %d from the bucket, %d from the file", k, a1)
	}
	n2 := sidecar.GoldKey(s, "N2")
	if n2 == 0 || n2 == a1 {
		t.Errorf("N2's key %d (A1's %d)", n2, a1)
	}
	if n := s.Current().Len(); n != 7 {
		t.Errorf("Len %d, want 7", n)
	}

	s.ApplyKV([]stream.KVChange{del("A1"), del("N2")})
	if g, ok := s.Lookup("A1"); !ok || !g.Answerable {
		t.Errorf("A1 = %+v, %v after its delete: want the file's (answerable)", g, ok)
	}
	if _, ok := s.Lookup("N2"); ok {
		t.Error("N2 still in force after its delete")
	}
	s.ApplyKV([]stream.KVChange{put("N2", kvGold["N2"])})
	if k := sidecar.GoldKey(s, "N2"); k != n2 {
		t.Errorf("N2's key %d when put again, %d at first", k, n2)
	}

	// A file reload keeps the bucket's items; a refused one keeps both.
	replaceFile(t, "testdata/gold_bad.jsonl", path)
	if err := s.Reload(); err == nil {
		t.Fatal("a bad file reloaded")
	}
	if _, ok := s.Lookup("N2"); !ok {
		t.Error("N2 lost with a refused file")
	}
	if want := []int{6, 7, 6, 7}; fmt.Sprint(changes) != fmt.Sprint(want) {
		t.Errorf("OnChange saw sets of %v, want %v", changes, want)
	}

	// Without a file the bucket is the whole gold; Reload keeps it.
	kvOnly := sidecar.NewGoldStore("")
	if err := kvOnly.Reload(); err != nil || kvOnly.Current() != nil {
		t.Errorf("Reload with nothing loaded: %v, set %v", err, kvOnly.Current())
	}
	kvOnly.LoadKV([]stream.KVChange{put("N2", kvGold["N2"])})
	if err := kvOnly.Reload(); err != nil {
		t.Fatal(err)
	}
	if set := kvOnly.Current(); set.Len() != 1 || set.Source != "" {
		t.Errorf("bucket-only set: %d items from %q", set.Len(), set.Source)
	}
}
