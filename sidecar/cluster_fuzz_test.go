package sidecar

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/window"
)

// FuzzParsePart: a part read from the cluster bucket, whatever it holds,
// is refused or merges into a report without a panic.
func FuzzParsePart(f *testing.F) {
	w, err := window.New(window.Config{Windows: []window.Spec{{Name: "5m", Length: 5 * time.Minute, Resolution: 10 * time.Second}}, Ks: []int{1, 5}, LambdaMinRuns: 2})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	o := window.Observation{Arm: "live", QID: "q1", HasAnswer: true, Answerable: true, Shipped: true, Contained: true, Hit: true,
		HasDeltaSCited: true, DeltaSCited: 0.3, DeltaSRetrieved: []float64{0.2, 0.7}}
	if err := w.Add(&o, now); err != nil {
		f.Fatal(err)
	}
	acc, _ := w.Part("live", "5m", "", now)
	b, err := json.Marshal(acc)
	if err != nil {
		f.Fatal(err)
	}
	seed, err := json.Marshal(memberPart{Member: "0", Instance: "i", Applied: 7, Windows: []windowPart{{Arm: "live", Window: "5m", Events: map[string]int64{"scored": 1}, Acc: b}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"member":"1","windows":[{"arm":"live","window":"5m","acc":{"ks":[1,5],"min_runs":2,"counts":[],"sums":[]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePart(data)
		if err != nil {
			return
		}
		merged := window.NewCumulative([]int{1, 5}, 2)
		for _, wp := range p.Windows {
			var cu window.Cumulative
			if err := json.Unmarshal(wp.Acc, &cu); err != nil {
				t.Fatalf("parsePart took a window that does not decode: %v", err)
			}
			_ = merged.Merge(&cu) // other cut-offs are refused, not merged
			_ = cu.Metrics()
		}
		_ = merged.Metrics()
	})
}
