package checks

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// Evaluate takes shortcuts (retrievalAtKs, the inline Covered,
// lambdaStateOf, rankedIDs); each must agree with the function it stands
// in for.

func TestRetrievalAtKsMatchesPerK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Ids of every key path (under 4, 4 to 7 and 8 or more bytes). The
	// last two have the same idKey (length, first and last 8 bytes): only
	// the string comparison tells them apart.
	pool := []string{"a", "b", "c", "d", "e", "p81#5", "p18#5", "p81#50", "abcdefg", "sec-0001.aaaa.para-01", "sec-0001.bbbb.para-01"}
	if idKey(pool[9]) != idKey(pool[10]) {
		t.Fatal("the colliding ids do not collide")
	}
	list := func(max int) []string {
		n := r.IntN(max + 1)
		if n == 0 && r.IntN(2) == 0 {
			return nil
		}
		out := make([]string, n)
		for i := range out {
			out[i] = pool[r.IntN(len(pool))]
		}
		return out
	}
	kss := [][]int{{1, 3, 5, 10}, {1}, {2, 4}, {0, 1, 100}, {-1, 3}, {-5, 5}}
	for n := 0; n < 200000; n++ {
		gold, ids, ks := list(5), list(14), kss[r.IntN(len(kss))]
		if r.IntN(50) == 0 {
			ids = list(70)
		}
		var got, want window.Observation
		if !retrievalAtKs(gold, ids, ks, &got) {
			if len(ids) <= 64 && len(gold) <= smallSet {
				t.Fatalf("retrievalAtKs refused %v %v", gold, ids)
			}
			continue
		}
		retrievalPerK(gold, ids, ks, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("gold %q ids %q ks %v:\n got %+v\nwant %+v", gold, ids, ks, got, want)
		}
	}
}

func TestEvaluateCoveredMatchesCovered(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := []string{"a", "b", "c", "d"}
	secs := []string{"", "S.4", "S.4.2", "S.4.2.1", "S.5", "S.4.20"}
	for n := 0; n < 50000; n++ {
		pick := func(max int) []string {
			out := []string{}
			for i := r.IntN(max + 1); i > 0; i-- {
				out = append(out, ids[r.IntN(len(ids))])
			}
			return out
		}
		var topk []wire.TopKItem
		for _, id := range pick(4) {
			topk = append(topk, wire.TopKItem{ID: id, SectionID: secs[r.IntN(len(secs))]})
		}
		cited := pick(3)
		e := &wire.TraceEvent{QID: "q", TopK: topk, HasAnswer: true, Answer: wire.Answer{Citations: cited}}
		g := &wire.Gold{QID: "q", Answerable: true, GoldCitations: pick(2), AnchorSection: secs[r.IntN(len(secs))], Type: "prose"}
		var o window.Observation
		if err := Evaluate(e, NewGold(*g), true, Options{Ks: []int{5}, Tolerance: 30}, &o); err != nil {
			t.Fatal(err)
		}
		sectionOf := func(id string) (string, bool) {
			for i := range topk {
				if topk[i].ID == id && topk[i].SectionID != "" {
					return topk[i].SectionID, true
				}
			}
			return "", false
		}
		eligible := len(g.GoldCitations) > 0 || g.AnchorSection != ""
		if want := eligible && Covered(cited, g.GoldCitations, g.AnchorSection, sectionOf); o.CoverageEligible != eligible || o.Covered != want {
			t.Fatalf("cited %q gold %q anchor %q topk %+v: covered %v, Covered %v", cited, g.GoldCitations, g.AnchorSection, topk, o.Covered, want)
		}
	}
}

func TestLambdaStateOfMatchesParse(t *testing.T) {
	for _, s := range []string{"", "→", "←", "<>", "×", " → ", "Convergent", "chaotic", "x", "→→", "\u00a0←"} {
		got, gotErr := lambdaStateOf(s)
		want, wantErr := ParseLambdaState(s)
		if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("lambdaStateOf(%q) = %v, %v; ParseLambdaState = %v, %v", s, got, gotErr, want, wantErr)
		}
	}
}

func TestRankedIDsMatchesIDs(t *testing.T) {
	items := func(ids ...string) []wire.TopKItem {
		out := []wire.TopKItem{}
		for _, id := range ids {
			out = append(out, wire.TopKItem{ID: id})
		}
		return out
	}
	for _, e := range []wire.TraceEvent{
		{}, {RetrievedIDs: []string{}}, {RetrievedIDs: []string{"a"}},
		{TopK: items()}, {TopK: items(), RetrievedIDs: []string{}}, {TopK: items("a", "b"), RetrievedIDs: []string{"a", "b"}},
		{TopK: items("a", "b"), RetrievedIDs: []string{"b", "a"}}, {TopK: items("a"), RetrievedIDs: []string{"a", "b"}},
		{TopK: items("a", "b")},
	} {
		if got, want := rankedIDs(&e), e.IDs(); !reflect.DeepEqual(got, want) {
			t.Errorf("rankedIDs(%+v) = %#v, IDs() = %#v", e, got, want)
		}
	}
}
