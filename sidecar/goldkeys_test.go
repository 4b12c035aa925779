package sidecar_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shadoweval/shadoweval/sidecar"
)

// TestGoldKeysAcrossReloads: a qid keeps its λ group key when the gold file
// is reloaded (a window may still hold runs of it from before), and a qid
// new to the store gets a key no other qid has had.
func TestGoldKeysAcrossReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gold.jsonl")
	copyFile := func(src string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := sidecar.NewGoldStore(path)
	seen := map[uint32]string{}
	keysOf := func() map[string]uint32 {
		t.Helper()
		keys := map[string]uint32{}
		for qid := range s.Current().Items {
			k := sidecar.GoldKey(s, qid)
			if k == 0 {
				t.Fatalf("%s: no key", qid)
			}
			if other, ok := seen[k]; ok && other != qid {
				t.Fatalf("%s and %s share key %d", qid, other, k)
			}
			seen[k] = qid
			keys[qid] = k
		}
		return keys
	}
	copyFile("testdata/gold_v1.jsonl")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	v1 := keysOf()
	copyFile("testdata/gold_v2.jsonl")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	v2 := keysOf()
	copyFile("testdata/gold_v1.jsonl")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	again := keysOf()
	kept, added := 0, 0
	for qid, k := range v2 {
		if k1, ok := v1[qid]; ok {
			kept++
			if k1 != k {
				t.Errorf("%s: key %d after the reload, %d before", qid, k, k1)
			}
		} else {
			added++
		}
	}
	if kept == 0 || added == 0 {
		t.Fatalf("the two files share %d qids and the second adds %d: the test needs both", kept, added)
	}
	for qid, k := range again {
		if v1[qid] != k {
			t.Errorf("%s: key %d when its file came back, %d at first", qid, k, v1[qid])
		}
	}
}
