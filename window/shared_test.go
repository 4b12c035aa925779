package window

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestSharedMatchesOwn: accumulators attached to one Shared at different
// points, excluding some events and detaching, restored from a checkpoint
// while attached, end with the same checkpoint as accumulators of their own
// that were given exactly the events each took. Visit sums aside: an
// attached accumulator's visits are the arm's (TestVisitSums).
func TestSharedMatchesOwn(t *testing.T) {
	const n = 6000
	rng := rand.New(rand.NewPCG(7, 8))
	ks := DefaultKs
	sh := NewShared(ks)
	type acc struct {
		attachAt, detachAt int
		excludeOdd         bool // refuses the odd events for a while, as late ones
		restoreAt          int
		att, own           *Cumulative
	}
	accs := []*acc{
		{attachAt: 0, detachAt: n},
		{attachAt: 1000, detachAt: n, excludeOdd: true},
		{attachAt: 1500, detachAt: 4000},
		{attachAt: 2500, detachAt: n, restoreAt: 3500},
		{attachAt: 5000, detachAt: 5600},
	}
	for _, a := range accs {
		a.att, a.own = NewCumulative(ks, 3), NewCumulative(ks, 3)
	}
	var o Observation
	var p Prepared
	for i := range n {
		for _, a := range accs {
			switch i {
			case a.attachAt:
				a.att.AttachTo(sh)
			case a.detachAt:
				a.att.Detach()
			case a.restoreAt:
				if a.restoreAt == 0 {
					break
				}
				data, err := json.Marshal(a.att)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, a.att); err != nil {
					t.Fatal(err)
				}
			}
		}
		randomObservation(rng, len(ks), &o)
		q, _ := strconv.Atoi(o.QID[1:])
		o.QIDKey = uint32(q + 1) // one key per qid, as the gold store numbers them
		if err := Prepare(&o, len(ks), &p); err != nil {
			t.Fatal(err)
		}
		var take []*Cumulative
		excluded := false
		for _, a := range accs {
			if i < a.attachAt || i >= a.detachAt {
				continue
			}
			if a.excludeOdd && i%2 == 1 && i < 3000 {
				a.att.Exclude(&p)
				excluded = true
				continue
			}
			take = append(take, a.att)
			a.own.AddPrepared(&p)
		}
		// Every attached accumulator takes it: AddAll and AddAllAccepted,
		// each on one event in three, must do what Add and AddRuns do.
		switch {
		case !excluded && i%3 == 1:
			sh.AddAll(&p)
		case !excluded && i%3 == 2:
			sh.AddAllAccepted(&o, o.Time.UnixNano())
		default:
			sh.Add(&p)
			AddRuns(take, &p)
		}
		if i%997 == 0 { // reads fold in the middle of the stream
			for _, a := range take {
				a.Metrics()
			}
		}
	}
	for _, a := range accs {
		a.att.Detach()
		a.att.clearVisits()
		a.own.clearVisits()
	}
	for j, a := range accs {
		got, err := json.Marshal(a.att)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(a.own)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("accumulator %d (attached at %d): checkpoint\n%s\nwant\n%s", j, a.attachAt, got, want)
		}
		if g, w := a.att.Events(), a.own.Events(); g != w || w == 0 {
			t.Errorf("accumulator %d: %d events, want %d (not 0)", j, g, w)
		}
		if g, w := a.att.CitedQuantile(0.9), a.own.CitedQuantile(0.9); g != w {
			t.Errorf("accumulator %d: cited p90 %v, want %v", j, g, w)
		}
	}
	if used := sh.used; len(used) == 0 || slices.Contains(used, true) {
		t.Errorf("columns in use after every accumulator detached: %v", used)
	}
}
