package gen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Score fixtures for `shadoweval score` (the Go port of the seed 002
// reference scorer): data sets under offline/testdata/score/<name>/
// (gold.jsonl, trace.jsonl) and the reference's stdout for several --k and
// --gates (want_<k>_<gates>.json), listed in score/cases.json.
//
//	go test ./wire/gen -run TestRegenerateScoreFixtures -update
//
// rewrites all of it (python3 required). Without -update,
// TestScoreFixturesUpToDate checks that the committed data sets are still
// what the generator makes.

var update = flag.Bool("update", false, "rewrite the score fixtures (needs python3)")

const (
	fixturesDir     = "../../offline/testdata/score"
	referenceScript = "../../offline/testdata/reference/score_eval.py"
)

type dataset struct {
	name string
	opt  *Options // generated; else gold and trace below
	gold string
	tr   string
	note string
}

var datasets = []dataset{
	{name: "seed_example", gold: seedGold, tr: seedTrace, note: "the 3-item worked example of seed 002 §3, verbatim"},
	{name: "edges", gold: edgesGold, tr: edgesTrace, note: "one hand-written item per corner case; qids name the case"},
	{name: "empty", note: "empty gold and trace files"},
	{name: "no_traces", gold: noTracesGold, note: "gold only: every item counts as shipped with an empty claim"},
	{name: "g001", opt: &Options{Seed: 1, Items: 1}},
	{name: "g002_awk", opt: &Options{Seed: 2, Items: 2, Awkward: 1}},
	{name: "g003", opt: &Options{Seed: 3, Items: 3}},
	{name: "g005_awk", opt: &Options{Seed: 5, Items: 5, Awkward: 1}},
	{name: "g008", opt: &Options{Seed: 8, Items: 8}},
	{name: "g013_awk_q50", opt: &Options{Seed: 13, Items: 13, Awkward: 1, Quality: 0.5}},
	{name: "g021_clean_q100", opt: &Options{Seed: 21, Items: 21, Awkward: -1, Quality: 1}},
	{name: "g034", opt: &Options{Seed: 34, Items: 34}},
	{name: "g050_answerable", opt: &Options{Seed: 51, Items: 50, Answerable: 1}},
	{name: "g050_unanswerable", opt: &Options{Seed: 50, Items: 50, Answerable: -1}},
	{name: "g055_awk", opt: &Options{Seed: 55, Items: 55, Awkward: 1}},
	{name: "g089_clean_q95", opt: &Options{Seed: 89, Items: 89, Awkward: -1, Quality: 0.95}},
	{name: "g100_inorder", opt: &Options{Seed: 100, Items: 100, InOrder: true}},
	{name: "g144_awk50_q70", opt: &Options{Seed: 144, Items: 144, Awkward: 0.5, Quality: 0.7}},
	{name: "g200_arms", opt: &Options{Seed: 200, Items: 200, Rich: 0.5, Arms: []string{"live", "canary"}}},
	{name: "g233_awk_ans50", opt: &Options{Seed: 233, Items: 233, Awkward: 1, Answerable: 0.5}},
	{name: "g250_q99", opt: &Options{Seed: 250, Items: 250, Awkward: 0.05, Quality: 0.99}},
	{name: "g300_clean_q85", opt: &Options{Seed: 300, Items: 300, Awkward: -1, Quality: 0.85}},
	{name: "g400_awk", opt: &Options{Seed: 400, Items: 400, Awkward: 1}},
	{name: "g400_q0", opt: &Options{Seed: 401, Items: 400, Quality: -1}},
}

// --k values ("" = flag left out: the default 5) and --gates strings.
var kArgs = []struct{ name, k string }{{"k5", ""}, {"k1", "1"}, {"k10", "10"}, {"k0", "0"}, {"km1", "-1"}}

var gateArgs = []struct {
	name, gates string
	allK        bool
}{
	{"default", "", true},
	{"strict", "precision=0.99,chr=0.99,under=0.0,over=0.0", true},
	{"extra", "precision=0.80,chr=0.75,under=0.05,over=0.10,recall=0.90", true},
	// reordered, other float spellings, a repeated key (the last value
	// wins, the first position stays)
	{"odd", "over=1e-1,under=.05,chr=0.75,precision=0.5,precision=0.80", false},
	// under and over missing: the reference fails with KeyError unless
	// precision or chr already failed (Python's `and` short-circuits)
	{"missing", "precision=0.80,chr=0.75", false},
}

type genOptions struct {
	Seed       uint64   `json:"seed"`
	Items      int      `json:"items"`
	Awkward    float64  `json:"awkward,omitempty"`
	Quality    float64  `json:"quality,omitempty"`
	Answerable float64  `json:"answerable,omitempty"`
	Rich       float64  `json:"rich,omitempty"`
	Arms       []string `json:"arms,omitempty"`
	InOrder    bool     `json:"in_order,omitempty"`
}

type manifestDataset struct {
	Name      string      `json:"name"`
	Gold      string      `json:"gold"`
	Trace     string      `json:"trace"`
	Generated *genOptions `json:"generated,omitempty"`
	Note      string      `json:"note,omitempty"`
}

type manifestCase struct {
	Name    string   `json:"name"`
	Dataset string   `json:"dataset"`
	Gold    string   `json:"gold"`
	Trace   string   `json:"trace"`
	Args    []string `json:"args"`
	Want    string   `json:"want,omitempty"`
	Exit    int      `json:"exit"`
	Error   string   `json:"error,omitempty"`
}

type manifest struct {
	Comment   []string          `json:"comment"`
	Reference string            `json:"reference"`
	Datasets  []manifestDataset `json:"datasets"`
	Cases     []manifestCase    `json:"cases"`
}

func (d dataset) files() (gold, trace []byte) {
	if d.opt == nil {
		return []byte(d.gold), []byte(d.tr)
	}
	var g, t bytes.Buffer
	if err := WriteGold(&g, *d.opt); err != nil {
		panic(err)
	}
	if err := WriteTraces(&t, *d.opt); err != nil {
		panic(err)
	}
	return g.Bytes(), t.Bytes()
}

func (d dataset) cases() []manifestCase {
	var out []manifestCase
	for _, g := range gateArgs {
		for _, k := range kArgs {
			if !g.allK && k.k != "" {
				continue
			}
			args := []string{}
			if k.k != "" {
				args = append(args, "--k", k.k)
			}
			if g.gates != "" {
				args = append(args, "--gates", g.gates)
			}
			name := k.name + "_" + g.name
			out = append(out, manifestCase{
				Name: d.name + "/" + name, Dataset: d.name,
				Gold: d.name + "/gold.jsonl", Trace: d.name + "/trace.jsonl",
				Args: args, Want: d.name + "/want_" + name + ".json",
			})
		}
	}
	return out
}

func TestRegenerateScoreFixtures(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite " + fixturesDir)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("-update needs python3")
	}
	if err := os.RemoveAll(fixturesDir); err != nil {
		t.Fatal(err)
	}
	m := manifest{
		Comment: []string{
			"Each case: python3 ../reference/score_eval.py --gold <gold> --trace <trace> <args...>, paths relative to this directory.",
			"want is its stdout; exit is its exit status; when exit != 0 there is no want and error is the last line of stderr.",
			"Regenerate: go test ./wire/gen -run TestRegenerateScoreFixtures -update (data sets come from package wire/gen).",
		},
		Reference: "../reference/score_eval.py",
	}
	for _, d := range datasets {
		dir := filepath.Join(fixturesDir, d.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		g, tr := d.files()
		if err := os.WriteFile(filepath.Join(dir, "gold.jsonl"), g, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), tr, 0o644); err != nil {
			t.Fatal(err)
		}
		md := manifestDataset{Name: d.name, Gold: d.name + "/gold.jsonl", Trace: d.name + "/trace.jsonl", Note: d.note}
		if o := d.opt; o != nil {
			md.Generated = &genOptions{o.Seed, o.Items, o.Awkward, o.Quality, o.Answerable, o.Rich, o.Arms, o.InOrder}
		}
		m.Datasets = append(m.Datasets, md)
		m.Cases = append(m.Cases, d.cases()...)
	}

	// Run the reference: one python3 process runs the script afresh
	// (runpy, as __main__) for every case, with the case's argv, and
	// reports stdout, the exit status Python would have given and the
	// last line of the traceback.
	type req struct {
		Argv []string `json:"argv"`
	}
	type resp struct {
		Stdout string `json:"stdout"`
		Exit   int    `json:"exit"`
		Error  string `json:"error"`
	}
	reqs := make([]req, len(m.Cases))
	for i, c := range m.Cases {
		reqs[i].Argv = append([]string{referenceScript, "--gold", filepath.Join(fixturesDir, c.Gold), "--trace", filepath.Join(fixturesDir, c.Trace)}, c.Args...)
	}
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", pyDriver)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 driver: %v", err)
	}
	var resps []resp
	if err := json.Unmarshal(out, &resps); err != nil || len(resps) != len(m.Cases) {
		t.Fatalf("python3 driver: %d answers for %d cases (%v)", len(resps), len(m.Cases), err)
	}
	for i := range m.Cases {
		c, r := &m.Cases[i], resps[i]
		c.Exit = r.Exit
		if r.Exit != 0 {
			c.Want, c.Error = "", r.Error
			if r.Stdout != "" {
				t.Fatalf("%s: exit %d with stdout %q", c.Name, r.Exit, r.Stdout)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(fixturesDir, c.Want), []byte(r.Stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// spot-check the driver against a real run of the script
	for _, i := range []int{0, len(m.Cases) - 1} {
		c := m.Cases[i]
		got, err := exec.Command(py, reqs[i].Argv...).Output()
		if c.Exit == 0 && (err != nil || string(got) != resps[i].Stdout) {
			t.Fatalf("%s: the driver and a plain run differ (%v)", c.Name, err)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixturesDir, "cases.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range m.Cases {
		if c.Exit != 0 {
			failed++
		}
	}
	t.Logf("%d data sets, %d cases (%d where the reference exits non-zero)", len(datasets), len(m.Cases), failed)
}

// TestScoreFixturesUpToDate checks that the committed data sets are what
// the generator makes today and that the manifest lists what exists.
func TestScoreFixturesUpToDate(t *testing.T) {
	if *update {
		t.Skip("regenerating")
	}
	raw, err := os.ReadFile(filepath.Join(fixturesDir, "cases.json"))
	if os.IsNotExist(err) {
		t.Skip("no fixtures")
	}
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Datasets) != len(datasets) {
		t.Fatalf("manifest has %d data sets, the generator %d: regenerate (-update)", len(m.Datasets), len(datasets))
	}
	stale := func(format string, args ...any) {
		t.Errorf(format+"; regenerate: go test ./wire/gen -run TestRegenerateScoreFixtures -update", args...)
	}
	want := map[string]bool{}
	for _, d := range datasets {
		g, tr := d.files()
		for name, data := range map[string][]byte{"gold.jsonl": g, "trace.jsonl": tr} {
			got, err := os.ReadFile(filepath.Join(fixturesDir, d.name, name))
			if err != nil || !bytes.Equal(got, data) {
				stale("%s/%s differs from the generator (%v)", d.name, name, err)
			}
		}
		for _, c := range d.cases() {
			want[c.Name] = true
		}
	}
	total := int64(0)
	for _, c := range m.Cases {
		if !want[c.Name] {
			stale("case %s is not made any more", c.Name)
		}
		delete(want, c.Name)
		if c.Exit == 0 {
			fi, err := os.Stat(filepath.Join(fixturesDir, c.Want))
			if err != nil {
				t.Errorf("case %s: %v", c.Name, err)
				continue
			}
			total += fi.Size()
		} else if c.Error == "" {
			t.Errorf("case %s: exit %d without error", c.Name, c.Exit)
		}
	}
	for name := range want {
		stale("case %s is missing from the manifest", name)
	}
	_ = filepath.Walk(fixturesDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			total += fi.Size()
		}
		return nil
	})
	if total > 2<<20 {
		t.Errorf("fixtures take %d bytes, keep them under 2 MiB", total)
	}
}

// pyDriver reads a JSON list of {"argv": [script, args...]} and prints a
// JSON list of {"stdout", "exit", "error"}, running the script as __main__
// each time like `python3 script args...` would.
const pyDriver = `
import contextlib, io, json, runpy, sys, traceback
out = []
for case in json.load(sys.stdin):
    sys.argv = case["argv"]
    buf = io.StringIO()
    code, err = 0, ""
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(case["argv"][0], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        err = "SystemExit: %s" % e.code
    except BaseException as e:
        code = 1
        err = traceback.format_exception_only(type(e), e)[-1].strip()
    out.append({"stdout": buf.getvalue(), "exit": code, "error": err})
json.dump(out, sys.__stdout__)
`

// The seed 002 worked example (§1.1, §1.2).
const seedGold = `{"qid":"A0001","question":"Does X support null keys?","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"],"constraints":["X rejects null keys."]}
{"qid":"A0002","question":"Explain Z.","answerable":false,"gold_claim_substr":[],"gold_citations":[]}
{"qid":"A0003","question":"What domain is allowed?","answerable":true,"gold_claim_substr":["only domain example.com"],"gold_citations":["pB#1"]}
`

const seedTrace = `{"qid":"A0001","q":"Does X support null keys?","retrieved_ids":["p1#1","p1#2","p2#1"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}
{"qid":"A0002","q":"Explain Z.","retrieved_ids":["p1#1","p2#1"],"answer_json":{"claim":"not in context","citations":[]}}
{"qid":"A0003","q":"What domain is allowed?","retrieved_ids":["pB#1","p1#2"],"answer_json":{"claim":"Only domain example.com is allowed.","citations":["pB#1"]}}
`

const noTracesGold = `{"qid":"N1","question":"Does X support null keys?","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}
{"qid":"N2","question":"Explain Z.","answerable":false,"gold_claim_substr":[],"gold_citations":[]}
{"qid":"N3","question":"Anything with no gold text?","answerable":true,"gold_claim_substr":[],"gold_citations":[]}
{"qid":"N4","question":"Missing lists?","answerable":true}
`

// edges: one item per corner case. The comment after each pair says what
// the reference makes of it.
var edgesGold = strings.Join([]string{
	`{"qid":"E01-case","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,         // TP: containment ignores case
	`{"qid":"E02-final-sigma","answerable":true,"gold_claim_substr":["ΟΔΟΣ ΕΡΜΟΥ"],"gold_citations":["p1#2"]}`,         // TP: lower() gives final ς on both sides
	`{"qid":"E03-nonfinal-sigma","answerable":true,"gold_claim_substr":["ΟΔΟΣ ΕΡΜΟΥ"],"gold_citations":["p1#2"]}`,      // H only: claim spells σ at the end
	`{"qid":"E04-dotted-I","answerable":true,"gold_claim_substr":["İstanbul"],"gold_citations":["p1#2"]}`,              // H only: İ lowers to i + U+0307
	`{"qid":"E05-len-after-lower","answerable":true,"gold_claim_substr":["İnce"],"gold_citations":["p1#2"]}`,           // TP: 4 code points, 5 after lower()
	`{"qid":"E06-kelvin","answerable":true,"gold_claim_substr":["300 kelvin"],"gold_citations":["p1#2"]}`,              // TP: U+212A lowers to k
	`{"qid":"E07-nfd","answerable":true,"gold_claim_substr":["café crème"],"gold_citations":["p1#2"]}`,                 // H only: no normalisation
	`{"qid":"E08-cjk-short","answerable":true,"gold_claim_substr":["日本語"],"gold_citations":["p1#2"]}`,                  // H only: 9 bytes, 3 code points
	`{"qid":"E09-substr-empty","answerable":true,"gold_claim_substr":[]}`,                                              // TP: [] is vacuous, no gold cites and no citations
	`{"qid":"E10-substr-missing","answerable":true,"gold_citations":["p1#2"]}`,                                         // H only: missing list is not []
	`{"qid":"E11-refusal-x1c","answerable":false,"gold_claim_substr":[],"gold_citations":[]}`,                          // refusal: strip() removes U+001C
	`{"qid":"E12-refusal-nbsp-inside","answerable":false,"gold_claim_substr":[],"gold_citations":[]}`,                  // under-refusal
	`{"qid":"E13-refusal-period","answerable":false,"gold_claim_substr":[],"gold_citations":[]}`,                       // under-refusal
	`{"qid":"E14-over-refusal","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`, // over-refusal
	`{"qid":"E15-citations-string","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E16-citations-empty-string","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":[]}`,
	`{"qid":"E17-citations-outside","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E18-last-wins","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E19-q_id","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E20-no-trace","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E22-qid-wins","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E23-answer-null","answerable":false,"gold_claim_substr":[],"gold_citations":[]}`,
	`{"qid":"E24-retrieved-null","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E25-k-slice","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p9#2"]}`,
	`{"qid":"E26-citations-true","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E27-citations-zero","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":[]}`,
	`{"qid":"E28-topk-only","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"Ω-E29","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid":"E30","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"\u0071id":"\u00e9-E31-escaped","\u0061nswerable":true,"gold_claim_substr":["caf\u00e9 cr\u00e8me"],"gold_citations":["p1\/2"]}`,
	`{"qid":"E32-relevant-alias","answerable":true,"gold_claim_substr":["rejects null keys"],"relevant":["p1#2"]}`,
	`{"qid":"E33-ids-case","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
	`{"qid": "E34-spaced", "answerable": true, "gold_claim_substr": ["rejects null keys"], "gold_citations": ["p1#2"], "type": "code", "anchor_section": "S.4.2"}`,
	`{"qid":"E35-ds-substring-only-short","answerable":true,"gold_claim_substr":["null","keys"],"gold_citations":["p1#2"]}`,
}, "\n") + "\r\n \t\n\u3000\n\x1c\n\n"

var edgesTrace = strings.Join([]string{
	`{"qid":"E01-case","retrieved_ids":["p1#1","p1#2"],"answer_json":{"claim":"X REJECTS NULL KEYS.","citations":["p1#2"]}}`,
	`{"qid":"E02-final-sigma","retrieved_ids":["p1#2"],"answer_json":{"claim":"Η οδος ερμου είναι κλειστή.","citations":["p1#2"]}}`,
	`{"qid":"E03-nonfinal-sigma","retrieved_ids":["p1#2"],"answer_json":{"claim":"Η οδοσ ερμου είναι κλειστή.","citations":["p1#2"]}}`,
	`{"qid":"E04-dotted-I","retrieved_ids":["p1#2"],"answer_json":{"claim":"Merkez ISTANBUL'da.","citations":["p1#2"]}}`,
	`{"qid":"E05-len-after-lower","retrieved_ids":["p1#2"],"answer_json":{"claim":"Ayar İNCE yapılır.","citations":["p1#2"]}}`,
	`{"qid":"E06-kelvin","retrieved_ids":["p1#2"],"answer_json":{"claim":"Below 300 \u212aELVIN.","citations":["p1#2"]}}`,
	`{"qid":"E07-nfd","retrieved_ids":["p1#2"],"answer_json":{"claim":"We serve cafe\u0301 cre\u0300me.","citations":["p1#2"]}}`,
	`{"qid":"E08-cjk-short","retrieved_ids":["p1#2"],"answer_json":{"claim":"ドキュメントは日本語です。","citations":["p1#2"]}}`,
	`{"qid":"E09-substr-empty","retrieved_ids":["p1#2"],"answer_json":{"claim":"Anything at all.","citations":[]}}`,
	`{"qid":"E10-substr-missing","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E11-refusal-x1c","retrieved_ids":[],"answer_json":{"claim":"\u001cnot in context","citations":[]}}`,
	`{"qid":"E12-refusal-nbsp-inside","retrieved_ids":[],"answer_json":{"claim":"not\u00a0in context","citations":[]}}`,
	`{"qid":"E13-refusal-period","retrieved_ids":[],"answer_json":{"claim":"Not in context.","citations":[]}}`,
	`{"qid":"E14-over-refusal","retrieved_ids":["p1#2"],"answer_json":{"claim":"  NOT IN CONTEXT\n","citations":[]}}`,
	`{"qid":"E15-citations-string","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":"p1#2"}}`,
	`{"qid":"E16-citations-empty-string","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":""}}`,
	`{"qid":"E17-citations-outside","retrieved_ids":["p1#1"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E18-last-wins","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"q_id":"E19-q_id","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E21-orphan","retrieved_ids":["p1#2"],"answer_json":{"claim":"not in context","citations":[]}}`,
	`{"qid":"E22-qid-wins","q_id":"E20-no-trace","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E23-answer-null","retrieved_ids":["p1#2"],"answer_json":null}`,
	`{"qid":"E24-retrieved-null","retrieved_ids":null,"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E25-k-slice","retrieved_ids":["p9#1","p9#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p9#2"]}}`,
	`{"qid":"E26-citations-true","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":true}}`,
	`{"qid":"E27-citations-zero","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":0}}`,
	`{"qid":"E28-topk-only","topk":[{"id":"p1#2","score":0.9,"section_id":"S.1"}],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"ω-E29","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E30 ","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"é-E31-escaped","retrieved_ids":["p1/2"],"answer_json":{"claim":"CAFÉ CRÈME","citations":["p1/2"]}}`,
	`{"qid":"E32-relevant-alias","retrieved_ids":["p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{"qid":"E33-ids-case","retrieved_ids":["P1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["P1#2"]}}`,
	`  {"qid":"E34-spaced","retrieved_ids":["p1#2"],"answer_json":{"citations":["p1#2"],"claim":"x rejects null keys"}}	`,
	`{"qid":"E35-ds-substring-only-short","retrieved_ids":["p1#2"],"answer_json":{"claim":"null keys","citations":["p1#2"]}}`,
	`{"qid":"E18-last-wins","retrieved_ids":["p1#2"],"answer_json":{"claim":"not in context","citations":[]}}`,
}, "\r\n") + "\n\n \n"
