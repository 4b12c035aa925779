package window

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestPartsMergeToSnapshot: events split by qid over three Windows give
// parts whose merge, through their JSON, has the metrics of one Windows
// that took every event.
func TestPartsMergeToSnapshot(t *testing.T) {
	tb := testing.TB(t)
	cfg := Config{Windows: []Spec{{Name: "5m", Length: 5 * time.Minute, Resolution: 10 * time.Second}}, Ks: []int{1, 3, 5, 10}, LambdaMinRuns: 2, MaxLateness: 5 * time.Minute}
	whole, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var split [3]*Windows
	for i := range split {
		if split[i], err = New(cfg); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1_700_000_000, 0)
	obs, again := realistic(3000, 97, 1), realistic(3000, 97, 1)
	for i := range obs {
		t := now.Add(-time.Duration(i%250) * time.Second)
		obs[i].Time, again[i].Time = t, t
		mustAdd(tb, whole, &obs[i], now)
		q, _ := strconv.Atoi(again[i].QID[1:])
		mustAdd(tb, split[q%3], &again[i], now) // a qid's events in one part
	}
	for _, typ := range []string{"", "code"} {
		want, ok := whole.Snapshot("live", "5m", typ, now)
		if !ok {
			t.Fatal("no snapshot")
		}
		merged := NewCumulative(cfg.Ks, cfg.LambdaMinRuns)
		for _, w := range split {
			p, ok := w.Part("live", "5m", typ, now)
			if !ok {
				t.Fatal("no part")
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var back Cumulative
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if err := merged.Merge(&back); err != nil {
				t.Fatal(err)
			}
		}
		got := merged.Metrics()
		for name, w := range want.Metrics {
			if g := got[name]; fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("type %q %s: merged %+v, whole %+v", typ, name, g, w)
			}
		}
	}
}
