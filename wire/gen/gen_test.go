package gen

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

func gold(t testing.TB, o Options) []byte   { return written(t, WriteGold, o) }
func traces(t testing.TB, o Options) []byte { return written(t, WriteTraces, o) }

// written is what write (WriteGold, WriteTraces) writes for o.
func written(t testing.TB, write func(io.Writer, Options) error, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterministic(t *testing.T) {
	for _, o := range []Options{
		{Seed: 1, Items: 3000},
		{Seed: 7, Items: 500, Awkward: 1, Quality: 0.5},
		{Seed: 9, Items: 300, Awkward: -1, InOrder: true, Arms: []string{"live", "shadow"}},
	} {
		g1, g2 := gold(t, o), gold(t, o)
		t1, t2 := traces(t, o), traces(t, o)
		if !bytes.Equal(g1, g2) || !bytes.Equal(t1, t2) {
			t.Errorf("%+v: two runs differ", o)
		}
		o2 := o
		o2.Seed++
		if bytes.Equal(g1, gold(t, o2)) || bytes.Equal(t1, traces(t, o2)) {
			t.Errorf("%+v: seed %d and %d give the same output", o, o.Seed, o2.Seed)
		}
		// a prefix of items is a prefix of the gold file
		o3 := o
		o3.Items = o.Items / 2
		if g3 := gold(t, o3); !bytes.HasPrefix(g1, bytes.TrimRight(g3, "\r\n \t")) {
			t.Errorf("%+v: gold of the first %d items is not a prefix", o, o3.Items)
		}
	}
	// the base content does not depend on Awkward
	a := gold(t, Options{Seed: 3, Items: 200, Awkward: -1})
	b := gold(t, Options{Seed: 3, Items: 200, Awkward: 0.3})
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if la[0] == "" || len(la) != 201 {
		t.Fatalf("clean gold has %d lines", len(la))
	}
	same := 0
	for _, l := range la {
		if slices.Contains(lb, l) {
			same++
		}
	}
	if same < 120 {
		t.Errorf("only %d of 200 clean rows survive Awkward=0.3", same)
	}

	s1, s2 := NewTraceSource(Options{Seed: 5, Items: 50}), NewTraceSource(Options{Seed: 5, Items: 50})
	s3 := NewTraceSource(Options{Seed: 6, Items: 50})
	differ := false
	for i := 0; i < 200; i++ {
		e1, e2, e3 := s1.Next(), s2.Next(), s3.Next()
		if !bytes.Equal(e1, e2) {
			t.Fatalf("event %d differs between equal sources:\n%s\n%s", i, e1, e2)
		}
		differ = differ || !bytes.Equal(e1, e3)
	}
	if !differ {
		t.Error("seeds 5 and 6 give the same events")
	}
}

func TestEmpty(t *testing.T) {
	if g := gold(t, Options{Seed: 1}); len(g) != 0 {
		t.Errorf("Items=0 gold = %q", g)
	}
	if tr := traces(t, Options{Seed: 1}); len(tr) != 0 {
		t.Errorf("Items=0 traces = %q", tr)
	}
}

// parse checks every line of gold and traces and returns them decoded.
func parse(t *testing.T, g, tr []byte) (golds, trs []map[string]any) {
	t.Helper()
	err := pyLines(g, func(n int, line []byte) error {
		m, err := checkGold(line)
		golds = append(golds, m)
		return err
	})
	if err != nil {
		t.Fatalf("gold: %v", err)
	}
	err = pyLines(tr, func(n int, line []byte) error {
		m, err := checkTrace(line)
		trs = append(trs, m)
		return err
	})
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	// a raw \r only ends a line (CRLF) or sits in a blank line
	for _, data := range [][]byte{g, tr} {
		for _, l := range bytes.Split(data, []byte("\n")) {
			l = bytes.TrimSuffix(l, []byte("\r"))
			if i := bytes.IndexByte(l, '\r'); i >= 0 && len(bytes.TrimFunc(l, pycompat.IsSpace)) > 0 {
				t.Fatalf("raw \\r inside a record line: %q", l)
			}
		}
	}
	return golds, trs
}

func TestLinesValid(t *testing.T) {
	for _, o := range []Options{
		{Seed: 11, Items: 4000, Awkward: 1},
		{Seed: 12, Items: 4000},
		{Seed: 13, Items: 1000, Awkward: -1, Quality: -1, Answerable: 0.5, Rich: 1, Arms: []string{"live", "canary"}},
	} {
		var gs, ts Stats
		o.Stats = &gs
		g := gold(t, o)
		o.Stats = &ts
		tr := traces(t, o)
		golds, trs := parse(t, g, tr)
		if len(golds) != o.Items || gs.Records != o.Items || gs.Items != o.Items {
			t.Errorf("%d gold rows, stats %+v, want %d", len(golds), gs, o.Items)
		}
		if len(trs) != ts.Records {
			t.Errorf("%d traces, stats say %d", len(trs), ts.Records)
		}
		if n := bytes.Count(g, []byte("\n")); n != gs.Lines && n != gs.Lines-1 {
			t.Errorf("gold has %d newlines, stats say %d lines", n, gs.Lines)
		}
		if n := bytes.Count(tr, []byte("\n")); n != ts.Lines && n != ts.Lines-1 {
			t.Errorf("traces have %d newlines, stats say %d lines", n, ts.Lines)
		}
		seen := map[string]bool{}
		for _, m := range golds {
			q := m["qid"].(string)
			if seen[q] {
				t.Fatalf("duplicate gold qid %q", q)
			}
			seen[q] = true
		}
		for _, m := range trs {
			if len(o.Arms) > 0 && !slices.Contains(o.Arms, m["arm"].(string)) {
				t.Fatalf("trace arm %v not in %v", m["arm"], o.Arms)
			}
		}
	}
}

// TestAwkwardRates checks the awkward share, that every category occurs,
// and that the structural ones are what the files really hold.
func TestAwkwardRates(t *testing.T) {
	const n = 20000
	for _, p := range []float64{0.2, 0.05, 0.6} {
		var gs, ts Stats
		gold(t, Options{Seed: 21, Items: n, Awkward: p, Stats: &gs})
		traces(t, Options{Seed: 21, Items: n, Awkward: p, Stats: &ts})
		tol := 4 * math.Sqrt(p*(1-p)/n)
		for name, s := range map[string]Stats{"gold": gs, "trace": ts} {
			got := float64(s.AwkwardItems) / float64(s.Items)
			if s.Items != n || math.Abs(got-p) > tol {
				t.Errorf("Awkward=%v: %s awkward share %.4f over %d items", p, name, got, s.Items)
			}
		}
	}
	var gs, ts Stats
	gold(t, Options{Seed: 22, Items: 3000, Stats: &gs})
	if got := float64(gs.AwkwardItems) / 3000; math.Abs(got-0.2) > 0.04 {
		t.Errorf("default Awkward: share %.3f, want 0.2", got)
	}
	gs = Stats{}
	g := gold(t, Options{Seed: 22, Items: 3000, Awkward: -1, Stats: &gs})
	tr := traces(t, Options{Seed: 22, Items: 3000, Awkward: -1, Stats: &ts})
	if gs.AwkwardItems != 0 || ts.AwkwardItems != 0 || bytes.Contains(g, []byte("\r")) || bytes.Contains(tr, []byte("\n\n")) {
		t.Errorf("Awkward=-1 still awkward: gold %+v traces %+v", gs, ts)
	}

	// with Awkward=1 every category shows up
	const m = 6000
	gs, ts = Stats{}, Stats{}
	o := Options{Seed: 23, Items: m, Awkward: 1, Stats: &gs}
	g = gold(t, o)
	o.Stats = &ts
	tr = traces(t, o)
	if gs.AwkwardItems != m || ts.AwkwardItems != m {
		t.Errorf("Awkward=1: %d / %d awkward items", gs.AwkwardItems, ts.AwkwardItems)
	}
	for _, c := range GoldCategories() {
		if gs.Categories[c] < 20 {
			t.Errorf("gold category %s: %d items", c, gs.Categories[c])
		}
	}
	for _, c := range TraceCategories() {
		if ts.Categories[c] < 20 {
			t.Errorf("trace category %s: %d items", c, ts.Categories[c])
		}
	}

	golds, trs := parse(t, g, tr)
	gq := map[string]map[string]any{}
	for _, m := range golds {
		gq[m["qid"].(string)] = m
	}
	count := map[string]int{}
	orphans := 0
	for _, m := range trs {
		q := traceQID(m)
		if gq[q] == nil {
			orphans++
		}
		count[q]++
	}
	missing, dups := 0, 0
	for q := range gq {
		switch {
		case count[q] == 0:
			missing++
		case count[q] > 1:
			dups++
		}
	}
	if missing != ts.Categories["missing"] || dups != ts.Categories["duplicate"] || orphans != ts.Categories["orphan"] {
		t.Errorf("files: %d missing, %d duplicated, %d orphans; stats: %v", missing, dups, orphans, ts.Categories)
	}
	// member-level categories, counted in the output
	countKey := func(list []map[string]any, pred func(map[string]any) bool) int {
		n := 0
		for _, m := range list {
			if pred(m) {
				n++
			}
		}
		return n
	}
	checks := []struct {
		cat   string
		stats *Stats
		list  []map[string]any
		pred  func(map[string]any) bool
	}{
		{"substr_missing", &gs, golds, func(m map[string]any) bool { _, ok := m["gold_claim_substr"]; return !ok }},
		{"citations_null", &gs, golds, func(m map[string]any) bool { v, ok := m["gold_citations"]; return ok && v == nil }},
		{"q_id", &ts, trs, func(m map[string]any) bool { _, ok := m["q_id"]; _, ok2 := m["qid"]; return ok && !ok2 }},
		{"answer_null", &ts, trs, func(m map[string]any) bool { v, ok := m["answer_json"]; return ok && v == nil }},
		{"citations_string", &ts, trs, func(m map[string]any) bool {
			aj, _ := m["answer_json"].(map[string]any)
			s, ok := aj["citations"].(string)
			return ok && s != ""
		}},
	}
	for _, c := range checks {
		got := countKey(c.list, c.pred)
		want := c.stats.Categories[c.cat]
		// traces of duplicated items repeat the category, orphans add one;
		// missing items drop it
		if got < want/2 || got > 3*want {
			t.Errorf("category %s: %d matching lines for %d items", c.cat, got, want)
		}
	}
	crlf := bytes.Count(tr, []byte("}\r\n")) + bytes.Count(tr, []byte("} \r\n")) + bytes.Count(tr, []byte("}\t\r\n")) +
		bytes.Count(tr, []byte("}   \r\n")) + bytes.Count(tr, []byte("}\t \r\n"))
	if crlf < ts.Categories["crlf"] {
		t.Errorf("%d CRLF records for %d crlf items", crlf, ts.Categories["crlf"])
	}
	blank := 0
	pyLinesAll(tr, func(line []byte) {
		if len(bytes.TrimFunc(line, pycompat.IsSpace)) == 0 {
			blank++
		}
	})
	if blank < ts.Categories["blank_lines"] {
		t.Errorf("%d blank lines for %d blank_lines items", blank, ts.Categories["blank_lines"])
	}
}

func pyLinesAll(data []byte, f func(line []byte)) {
	for len(data) > 0 {
		end, next := len(data), len(data)
		if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
			end, next = i, i+1
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				next = i + 2
			}
		}
		f(data[:end])
		data = data[next:]
	}
}

// outcome is the reference's verdict on one item, for ASCII data only
// (strings.ToLower is Python's lower() there).
type outcome struct{ answerable, shipped, contained, hit bool }

func judge(g, tr map[string]any) outcome {
	o := outcome{answerable: g["answerable"] == true}
	var aj map[string]any
	if tr != nil {
		aj, _ = tr["answer_json"].(map[string]any)
	}
	claim, _ := aj["claim"].(string)
	claim = strings.TrimFunc(claim, pycompat.IsSpace)
	o.shipped = strings.ToLower(claim) != refusalToken
	subs, hasSubs := g["gold_claim_substr"].([]any)
	for _, s := range subs {
		s := strings.ToLower(s.(string))
		if len(s) >= 5 && strings.Contains(strings.ToLower(claim), s) {
			o.contained = true
		}
	}
	if hasSubs && len(subs) == 0 {
		o.contained = true
	}
	var ret []any
	if tr != nil {
		ret, _ = tr["retrieved_ids"].([]any)
	}
	cits, isList := aj["citations"].([]any)
	if aj["citations"] == nil || aj["citations"] == "" {
		cits, isList = nil, true
	}
	goldCites, _ := g["gold_citations"].([]any)
	if isList {
		sub := true
		for _, c := range cits {
			sub = sub && slices.Contains(ret, c)
		}
		inter := false
		for _, c := range cits {
			inter = inter || slices.Contains(goldCites, c)
		}
		o.hit = sub && (inter || len(goldCites) == 0 && len(cits) == 0)
	}
	return o
}

func lastTraces(trs []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range trs {
		out[traceQID(m)] = m
	}
	return out
}

func TestQuality(t *testing.T) {
	for _, q := range []float64{1, 0.7, -1} {
		want := math.Max(q, 0)
		o := Options{Seed: 31, Items: 6000, Awkward: -1, Quality: q}
		golds, trs := parse(t, gold(t, o), traces(t, o))
		last := lastTraces(trs)
		var ans, right, unans, refused int
		for _, g := range golds {
			v := judge(g, last[g["qid"].(string)])
			if v.answerable {
				ans++
				if v.shipped && v.contained && v.hit {
					right++
				}
			} else {
				unans++
				if !v.shipped {
					refused++
				}
			}
		}
		for name, got := range map[string]float64{"answered right": float64(right) / float64(ans), "refused": float64(refused) / float64(unans)} {
			if math.Abs(got-want) > 0.03 {
				t.Errorf("Quality=%v: %s share %.3f", q, name, got)
			}
		}
		if share := float64(ans) / float64(len(golds)); math.Abs(share-0.8) > 0.03 {
			t.Errorf("answerable share %.3f, want 0.8", share)
		}
	}
}

// goldByQID is the gold set of o, checked and decoded, by qid: what a
// TraceSource's events are judged against.
func goldByQID(t *testing.T, o Options) map[string]map[string]any {
	t.Helper()
	golds, _ := parse(t, gold(t, o), nil)
	gq := make(map[string]map[string]any, len(golds))
	for _, g := range golds {
		gq[g["qid"].(string)] = g
	}
	return gq
}

func TestTraceSource(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	o := Options{Seed: 41, Items: 300, Arms: []string{"live", "canary"}, Awkward: -1,
		Now: func() time.Time { now = now.Add(10 * time.Millisecond); return now }}
	gq := goldByQID(t, o)
	src := NewTraceSource(o)
	src.SetQuality("canary", 0.3)
	type tally struct{ n, ans, right, unans, refused int }
	per := map[string]*tally{}
	ids := map[string]bool{}
	for i := 0; i < 12000; i++ {
		ev := src.Next()
		m, err := checkTrace(ev)
		if err != nil || bytes.ContainsAny(ev, "\n") {
			t.Fatalf("event %d: %v\n%s", i, err, ev)
		}
		for _, k := range []string{"arm", "event_id", "request_id", "ts", "topk", "delta_s", "lambda_state", "paraphrase"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("event without %s: %s", k, ev)
			}
		}
		if ids[m["event_id"].(string)] {
			t.Fatalf("event_id repeated: %s", ev)
		}
		ids[m["event_id"].(string)] = true
		arm := m["arm"].(string)
		if per[arm] == nil {
			per[arm] = &tally{}
		}
		p := per[arm]
		p.n++
		g := gq[traceQID(m)]
		if g == nil {
			t.Fatalf("event for unknown qid with Awkward<0: %s", ev)
		}
		if v := judge(g, m); v.answerable {
			p.ans++
			if v.shipped && v.contained && v.hit {
				p.right++
			}
		} else {
			p.unans++
			if !v.shipped {
				p.refused++
			}
		}
	}
	for arm, want := range map[string]float64{"live": 0.9, "canary": 0.3} {
		p := per[arm]
		got := float64(p.right) / float64(p.ans)
		if p.n < 5000 || math.Abs(got-want) > 0.04 {
			t.Errorf("arm %s: %d events, right share %.3f, want %.2f", arm, p.n, got, want)
		}
		// a wrong group gets a second chance to refuse
		refused, wantRefused := float64(p.refused)/float64(p.unans), 1-(1-want)*(1-want)
		if math.Abs(refused-wantRefused) > 0.06 {
			t.Errorf("arm %s: %d unanswerable events, refused share %.3f, want %.2f", arm, p.unans, refused, wantRefused)
		}
	}

	// awkward events are valid too, and orphans / redeliveries happen
	src = NewTraceSource(Options{Seed: 42, Items: 100, Awkward: 1})
	var redelivered, orphans int
	ids = map[string]bool{}
	for i := 0; i < 5000; i++ {
		ev := src.Next()
		m, err := checkTrace(ev)
		if err != nil {
			t.Fatalf("event %d: %v\n%s", i, err, ev)
		}
		if ids[m["event_id"].(string)] {
			redelivered++
		}
		ids[m["event_id"].(string)] = true
		if !strings.HasPrefix(traceQID(m), "A") || len(traceQID(m)) != 7 {
			orphans++
		}
	}
	if redelivered == 0 || orphans == 0 {
		t.Errorf("%d redeliveries, %d odd qids in 5000 awkward events", redelivered, orphans)
	}
}

// TestTraceSourceEvidence: the top-k texts of a TraceSource event are the
// evidence seed 004's triage reads. A right answer is grounded in them (its
// claim is in a retrieved gold snippet), so a healthy arm triages ok, while
// a wrong one mostly is not; and every item has offsets, as a live
// retriever knows where its chunks are.
func TestTraceSourceEvidence(t *testing.T) {
	o := Options{Seed: 43, Items: 400, Arms: []string{"live", "canary"}, Awkward: -1, Quality: 1}
	gq := goldByQID(t, o)
	src := NewTraceSource(o)
	src.SetQuality("canary", 0)
	shipped, grounded := map[string]int{}, map[string]int{}
	for i := 0; i < 6000; i++ {
		m, err := checkTrace(src.Next())
		if err != nil {
			t.Fatal(err)
		}
		arm := m["arm"].(string)
		var evidence strings.Builder
		topk, _ := m["topk"].([]any)
		for _, x := range topk {
			item := x.(map[string]any)
			text, ok := item["text"].(string)
			if _, has := item["offsets"]; !has || !ok || text == "" {
				t.Fatalf("top-k item without offsets or text: %v", item)
			}
			evidence.WriteString(strings.ToLower(text) + "\n\n")
		}
		v := judge(gq[traceQID(m)], m)
		if !v.answerable || !v.shipped {
			continue
		}
		claim, _ := m["answer_json"].(map[string]any)["claim"].(string)
		shipped[arm]++
		if claim != "" && strings.Contains(evidence.String(), strings.ToLower(claim)) {
			grounded[arm]++
		}
	}
	live := float64(grounded["live"]) / float64(shipped["live"])
	canary := float64(grounded["canary"]) / float64(shipped["canary"])
	t.Logf("claims found in the evidence: live %.3f of %d, canary %.3f of %d", live, shipped["live"], canary, shipped["canary"])
	if live < 0.99 || canary > 0.5 || shipped["canary"] < 1000 {
		t.Errorf("grounded share: live %.3f (want >= 0.99), canary %.3f over %d (want <= 0.5)", live, canary, shipped["canary"])
	}
}

func TestSizes(t *testing.T) {
	o := Options{Seed: 51, Items: 20000}
	g, tr := gold(t, o), traces(t, o)
	for name, b := range map[string][]byte{"gold": g, "trace": tr} {
		avg := float64(len(b)) / float64(o.Items)
		t.Logf("%s: %.0f bytes per item", name, avg)
		if avg < 100 || avg > 250 {
			t.Errorf("%s: %.0f bytes per item, want 100..250", name, avg)
		}
	}
}

// python3 checks of the hand-made Unicode expectations.
func TestUnicodeBankAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	type c struct {
		Subs  []string `json:"subs"`
		Claim string   `json:"claim"`
		Match bool     `json:"match"`
	}
	var cases []c
	for _, tp := range uniTopics {
		for _, cl := range tp.claims {
			cases = append(cases, c{tp.subs, cl.text, cl.match})
		}
	}
	var refs []c
	for _, r := range refusals {
		refs = append(refs, c{nil, r.text, r.refusal})
	}
	in, _ := json.Marshal(map[string]any{"contain": cases, "refusal": refs})
	script := `
import json, sys
d = json.load(sys.stdin)
def contains(claim, subs):
    c = (claim or "").lower()
    for s in subs or []:
        s = s.lower()
        if len(s) >= 5 and s in c:
            return True
    return subs == []
bad = []
for x in d["contain"]:
    if contains(x["claim"], x["subs"]) != x["match"]:
        bad.append(x)
for x in d["refusal"]:
    if ((x["claim"] or "").strip().lower() == "not in context") != x["match"]:
        bad.append(x)
print(json.dumps(bad))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(out)); s != "[]" {
		t.Errorf("expectations Python disagrees with: %s", s)
	}
}

// TestReferenceAccepts runs the reference scorer over awkward output.
func TestReferenceAccepts(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	o := Options{Seed: 61, Items: 3000, Awkward: 1}
	gp, tp := filepath.Join(dir, "gold.jsonl"), filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(gp, gold(t, o), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tp, traces(t, o), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, referenceScript, "--gold", gp, "--trace", tp).CombinedOutput()
	if err != nil {
		t.Fatalf("reference scorer: %v\n%s", err, out)
	}
	var rep map[string]any
	if err := json.Unmarshal(out, &rep); err != nil || rep["answerable"].(float64)+rep["unanswerable"].(float64) != 3000 {
		t.Errorf("reference output %s (%v)", out, err)
	}
}

func BenchmarkWrite100k(b *testing.B) {
	o := Options{Seed: 1, Items: 100000}
	var n int64
	for b.Loop() {
		c := &countWriter{}
		if err := WriteGold(c, o); err != nil {
			b.Fatal(err)
		}
		if err := WriteTraces(c, o); err != nil {
			b.Fatal(err)
		}
		n = c.n
	}
	b.SetBytes(n)
	b.ReportMetric(float64(n)/200000, "bytes/row")
}

func BenchmarkTraceSource(b *testing.B) {
	s := NewTraceSource(Options{Seed: 1, Items: 10000, Arms: []string{"live", "canary"}})
	for b.Loop() {
		s.Next()
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
