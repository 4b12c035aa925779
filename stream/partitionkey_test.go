package stream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

func TestPartitionKey(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	for _, tc := range []struct{ qid, want string }{
		{"A0001", "A0001"},
		{"q-1_2:3=4+5", "q-1_2:3=4+5"},
		{long64, long64},
		{"h0123456789abcdef", "h0123456789abcdef"},
		// Known FNV-1a 64 values: of "" the offset basis, of "a" the
		// published test vector.
		{"", "hcbf29ce484222325"},
		{"a.b", "h" + fnv64a("a.b")},
		{long64 + "a", "h" + fnv64a(long64+"a")},
		{"q 1", "h" + fnv64a("q 1")},
		{"q*", "h" + fnv64a("q*")},
		{"q>", "h" + fnv64a("q>")},
		{"q\t1", "h" + fnv64a("q\t1")},
		{"q\x001", "h" + fnv64a("q\x001")},
		{"q\x7f", "h" + fnv64a("q\x7f")},
		{"qé", "h" + fnv64a("qé")},
		{"q/1", "h" + fnv64a("q/1")},
	} {
		if got := PartitionKey(tc.qid); got != tc.want {
			t.Errorf("PartitionKey(%q) = %q, want %q", tc.qid, got, tc.want)
		}
	}
	if got := PartitionKey("a\x80"); got == PartitionKey("a\x81") {
		t.Errorf("two qids share the key %q", got)
	}
	if got, want := "h"+fnv64a("a"), "haf63dc4c8601ec8c"; got != want {
		t.Fatalf("FNV-1a 64 of \"a\" = %s, want %s", got, want)
	}
}

// fnv64a is FNV-1a 64 spelled out (offset basis, then xor and multiply
// byte by byte), in 16 lower-case hex digits.
func fnv64a(s string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}

// FuzzPartitionKey: whatever the qid, the key is one valid subject token,
// the same on every call, and the qid itself exactly when the qid is safe.
func FuzzPartitionKey(f *testing.F) {
	for _, s := range []string{"A0001", "", "a.b", "q 1", "qé", strings.Repeat("x", 65), "h0123456789abcdef"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, qid string) {
		key := PartitionKey(qid)
		if key != PartitionKey(qid) {
			t.Fatalf("PartitionKey(%q) is not deterministic", qid)
		}
		if key == "" || len(key) > MaxKeyToken {
			t.Fatalf("PartitionKey(%q) = %q: empty or longer than %d", qid, key, MaxKeyToken)
		}
		for i := 0; i < len(key); i++ {
			if c := key[i]; c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' {
				t.Fatalf("PartitionKey(%q) = %q holds %q", qid, key, c)
			}
		}
		if !server.IsValidLiteralSubject("rag.trace.live." + key) {
			t.Fatalf("PartitionKey(%q) = %q: rag.trace.live.%s is not a literal subject", qid, key, key)
		}
		if safe := oracleSafe(qid); safe != (key == qid) {
			t.Fatalf("PartitionKey(%q) = %q; the qid is safe: %v", qid, key, safe)
		}
		if key != qid && key != "h"+fnv64a(qid) {
			t.Fatalf("PartitionKey(%q) = %q, want the hash form h%s", qid, key, fnv64a(qid))
		}
	})
}

// oracleSafe is the rule for a qid used as its own key, spelled out apart
// from the implementation's.
func oracleSafe(qid string) bool {
	if qid == "" || len(qid) > 64 {
		return false
	}
	return strings.Trim(qid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:=+") == ""
}
