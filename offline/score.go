// Package offline holds the offline commands that reproduce the reference
// scorers of the seed pages exactly: score (seed 002), agreement (seed 003)
// and triage (seed 004).
package offline

import (
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/wire"
)

// DefaultScoreGates is the --gates default of the seed 002 scorer.
const DefaultScoreGates = "precision=0.80,chr=0.75,under=0.05,over=0.10"

// ScoreOptions are the arguments of `shadoweval score`.
type ScoreOptions struct {
	Gold, Trace string
	K           int
	Gates       string // name=value,... as the reference takes it
}

// ScoreReport is the seed 002 report.
type ScoreReport struct {
	Answered, Refused, Answerable, Unanswerable int
	Precision, CHR, UnderRefusal, OverRefusal   float64
	RecallAtK                                   float64
	K                                           int
	Gates                                       pycompat.Object // name → value string, in the order given
	Pass                                        bool
}

// JSON renders the report exactly as the reference prints it.
func (r *ScoreReport) JSON() []byte {
	return pycompat.Dumps(pycompat.Object{
		{Key: "answered", Value: r.Answered},
		{Key: "refused", Value: r.Refused},
		{Key: "answerable", Value: r.Answerable},
		{Key: "unanswerable", Value: r.Unanswerable},
		{Key: "precision", Value: pycompat.Round(r.Precision, 4)},
		{Key: "chr", Value: pycompat.Round(r.CHR, 4)},
		{Key: "under_refusal", Value: pycompat.Round(r.UnderRefusal, 4)},
		{Key: "over_refusal", Value: pycompat.Round(r.OverRefusal, 4)},
		{Key: "recall@k", Value: pycompat.Round(r.RecallAtK, 4)},
		{Key: "k", Value: r.K},
		{Key: "gates", Value: r.Gates},
		{Key: "pass", Value: r.Pass},
	}, pycompat.DumpOptions{Indent: 2, EnsureASCII: true})
}

// scoreGold is what scoring needs of a gold item.
type scoreGold struct {
	answerable bool
	substrs    []string
	citations  []string
}

type traceResult struct {
	traced bool
	result itemResult
}

// itemResult is the outcome of one gold item against its (last) trace.
type itemResult struct {
	shipped, contained, hit, recalled bool
}

// Score runs the seed 002 scorer: the last trace of a qid wins, a gold item
// without a trace is scored as a shipped answer with an empty claim, and
// only gold_citations and retrieved_ids are read, as the reference does.
// Of each line only the fields the reference reads are type-checked (plus
// JSON well-formedness); `shadoweval run` validates whole events.
func Score(opt ScoreOptions) (*ScoreReport, error) {
	gates, err := parseGates(opt.Gates)
	if err != nil {
		return nil, err
	}
	// Gold rows are collected in file order; the qid index is built after,
	// in parallel shards (the serial map inserts of a million rows would
	// otherwise cost as much as decoding them).
	capacity := 0
	if fi, err := os.Stat(opt.Gold); err == nil {
		capacity = int(min(fi.Size()/128, 1<<26))
	}
	golds := make([]scoreGold, 0, capacity)
	qids := make([]string, 0, capacity)
	decoders := sync.Pool{New: func() any { return wire.NewLiteDecoder() }}
	// Trace strings are used only while the line is scored, so they may
	// borrow the decoder's memory.
	borrowing := sync.Pool{New: func() any {
		d := wire.NewLiteDecoder()
		d.Borrow = true
		return d
	}}
	decodeGold := func(line []byte) (wire.GoldLite, error) {
		d := decoders.Get().(*wire.LiteDecoder)
		defer decoders.Put(d)
		var g wire.GoldLite
		return g, d.Gold(line, &g)
	}
	err = wire.ReadFileLines(opt.Gold, decodeGold, func(_ int, g wire.GoldLite) error {
		golds = append(golds, scoreGold{answerable: g.Answerable, substrs: g.GoldClaimSubstr, citations: g.GoldCitations})
		qids = append(qids, g.QID)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gold %w", err)
	}
	index := newQIDIndex(qids)

	type traced struct {
		gold   int32
		result itemResult
	}
	// Decoding and scoring run on every core; the gold table is only read.
	decode := func(line []byte) (traced, error) {
		d := borrowing.Get().(*wire.LiteDecoder)
		defer borrowing.Put(d)
		var e wire.TraceLite
		if err := d.Trace(line, &e); err != nil {
			return traced{}, err
		}
		i, ok := index.get(e.QID)
		if !ok {
			return traced{gold: -1}, nil
		}
		cits := checks.Citations{IDs: e.Citations, NotList: e.CitationsNotList}
		return traced{gold: i, result: scoreItem(&golds[i], e.Claim, cits, e.RetrievedIDs, opt.K)}, nil
	}
	// The last trace of each gold row, apart from golds so that the serial
	// "last wins" pass touches one compact array.
	results := make([]traceResult, len(golds))
	err = wire.ReadFileLines(opt.Trace, decode, func(_ int, t traced) error {
		if t.gold >= 0 {
			results[t.gold] = traceResult{traced: true, result: t.result}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("trace %w", err)
	}

	var s, r, a, u, tp, chrHit, under, over, recall, recallDen int
	for i := range golds {
		if !index.last(i) {
			continue // a later row of the same qid wins, as in a dict
		}
		g := &golds[i]
		res := results[i].result
		if !results[i].traced {
			res = scoreItem(g, "", checks.Citations{IDs: []string{}}, nil, opt.K)
		}
		if g.answerable {
			a++
		} else {
			u++
		}
		if res.shipped {
			s++
			if !g.answerable {
				under++
			} else {
				if res.hit {
					chrHit++
				}
				if res.contained && res.hit {
					tp++
				}
			}
		} else {
			r++
			if g.answerable {
				over++
			}
		}
		if g.answerable {
			recallDen++
			if res.recalled {
				recall++
			}
		}
	}
	rep := &ScoreReport{
		Answered: s, Refused: r, Answerable: a, Unanswerable: u,
		Precision: ratio(tp, s, 1), CHR: ratio(chrHit, s, 1),
		UnderRefusal: ratio(under, u, 0), OverRefusal: ratio(over, a, 0),
		RecallAtK: ratio(recall, recallDen, 0),
		K:         opt.K, Gates: gates,
	}
	rep.Pass, err = passes(gates, rep)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// scoreItem applies the per-item checks of the reference to one gold item
// and one answer.
func scoreItem(g *scoreGold, claim string, cits checks.Citations, retrieved []string, k int) itemResult {
	claim = pycompat.Strip(claim)
	res := itemResult{shipped: !checks.IsRefusal(claim)}
	if res.shipped {
		res.contained = checks.Containment(claim, g.substrs)
		res.hit = checks.CitationHit(cits, g.citations, retrieved)
	}
	if g.answerable {
		res.recalled = checks.RecallStrict(g.citations, retrieved, k)
	}
	return res
}

func ratio(num, den int, empty float64) float64 {
	if den == 0 {
		return empty
	}
	return float64(num) / float64(den)
}

// parseGates reads "name=value,..." into an ordered dict the way
// dict(x.split("=") for x in s.split(",")) does: every item needs exactly
// one "=", and a repeated name keeps its first position with the last value.
func parseGates(s string) (pycompat.Object, error) {
	var gates pycompat.Object
	for _, item := range strings.Split(s, ",") {
		parts := strings.Split(item, "=")
		if len(parts) != 2 {
			return nil, fmt.Errorf("--gates: item %q: want name=value", item)
		}
		found := false
		for i := range gates {
			if gates[i].Key == parts[0] {
				gates[i].Value, found = parts[1], true
			}
		}
		if !found {
			gates = append(gates, pycompat.Member{Key: parts[0], Value: parts[1]})
		}
	}
	return gates, nil
}

// passes evaluates the four ship gates in the reference's order and with
// its short-circuit: a gate name missing from --gates, or a value that is
// not a number, is an error only when the evaluation reaches it.
func passes(gates pycompat.Object, r *ScoreReport) (bool, error) {
	checks := []struct {
		name  string
		value float64
		ge    bool
	}{
		{"precision", r.Precision, true},
		{"chr", r.CHR, true},
		{"under", r.UnderRefusal, false},
		{"over", r.OverRefusal, false},
	}
	for _, c := range checks {
		raw, ok := gateValue(gates, c.name)
		if !ok {
			return false, fmt.Errorf("--gates: no %q gate", c.name)
		}
		thr, err := pycompat.ParseFloat(raw)
		if err != nil {
			return false, fmt.Errorf("--gates: %s=%q: not a number", c.name, raw)
		}
		if c.ge && !(c.value >= thr) || !c.ge && !(c.value <= thr) {
			return false, nil
		}
	}
	return true, nil
}

func gateValue(gates pycompat.Object, name string) (string, bool) {
	for _, m := range gates {
		if m.Key == name {
			return m.Value.(string), true
		}
	}
	return "", false
}

// qidIndex maps a qid to its last gold row. It is sharded by hash so the
// shards can be built in parallel; a qid's shard is fixed, so "last row
// wins" holds within it.
type qidIndex struct {
	seed   maphash.Seed
	shards []map[string]int32
	isLast []bool // per row: no later row has its qid
}

func newQIDIndex(qids []string) *qidIndex {
	n := runtime.GOMAXPROCS(0)
	x := &qidIndex{seed: maphash.MakeSeed(), shards: make([]map[string]int32, n), isLast: make([]bool, len(qids))}
	var wg sync.WaitGroup
	for s := range x.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := make(map[string]int32, len(qids)/n+1)
			for i, q := range qids {
				if x.shard(q) == s {
					m[q] = int32(i)
				}
			}
			for _, i := range m {
				x.isLast[i] = true // distinct rows per shard: no write overlaps
			}
			x.shards[s] = m
		}()
	}
	wg.Wait()
	return x
}

func (x *qidIndex) shard(qid string) int {
	return int(maphash.String(x.seed, qid) % uint64(len(x.shards)))
}

func (x *qidIndex) get(qid string) (int32, bool) {
	i, ok := x.shards[x.shard(qid)][qid]
	return i, ok
}

func (x *qidIndex) last(row int) bool { return x.isLast[row] }
