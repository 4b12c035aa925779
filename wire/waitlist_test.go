package wire

import (
	"testing"
	"time"
)

// TestWaitlist: replacing restarts a wait, overflow drops the oldest,
// Expire returns the old ones oldest first, a time that goes back counts
// as the newest value's, and Take forgets.
func TestWaitlist(t *testing.T) {
	w := NewWaitlist[string, int](10*time.Second, 3)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if r, o := w.Put("a", 1, at(0)); r != nil || o != nil {
		t.Fatalf("first put: %v %v", r, o)
	}
	w.Put("b", 2, at(1))
	if r, _ := w.Put("a", 10, at(2)); r == nil || r.Value != 1 || !r.Since.Equal(at(0)) {
		t.Fatalf("replace: %+v", r)
	}
	if v, since, ok := w.Get("a"); !ok || v != 10 || !since.Equal(at(2)) {
		t.Fatalf("get a: %v %v %v", v, since, ok)
	}
	w.Put("c", 3, at(3))
	// Over the maximum of 3: b is now the oldest.
	if _, o := w.Put("d", 4, at(4)); len(o) != 1 || o[0].Key != "b" || o[0].Value != 2 {
		t.Fatalf("overflow: %+v", o)
	}
	// A time before the newest (d at 4 s) counts as 4 s.
	w.Take("a")
	w.Put("e", 5, at(1))
	if _, since, _ := w.Get("e"); !since.Equal(at(4)) {
		t.Fatalf("e waits from %v, want %v", since, at(4))
	}
	if next, ok := w.NextExpiry(); !ok || !next.Equal(at(13)) {
		t.Fatalf("next expiry %v %v, want c's at 13 s", next, ok)
	}
	if g := w.Expire(at(13)); len(g) != 0 {
		t.Fatalf("expired at exactly the TTL: %+v", g)
	}
	g := w.Expire(at(15))
	if len(g) != 3 || g[0].Key != "c" || g[1].Key != "d" || g[2].Key != "e" || w.Len() != 0 {
		t.Fatalf("expire: %+v, %d left", g, w.Len())
	}
	if _, _, ok := w.Take("c"); ok {
		t.Fatal("took an expired value")
	}
	if _, ok := w.NextExpiry(); ok {
		t.Fatal("next expiry with nothing waiting")
	}
}
