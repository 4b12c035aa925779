package offline

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func defaultOptions() AgreementOptions {
	return AgreementOptions{PAGate: DefaultPAGate, KappaGate: DefaultKappaGate, AbstainGate: DefaultAbstainGate, TSVPath: DefaultTSVPath}
}

const onePairDisagreeing = `{"qid":"q1","scholar":{"label":"VALID"},"auditor":{"label":"REJECT"}}` + "\n"

func TestAgreementDefaults(t *testing.T) {
	if DefaultPAGate != 0.90 || DefaultKappaGate != 0.75 || DefaultAbstainGate != 0.02 ||
		DefaultTSVPath != "runs/consistency_disagreements.tsv" {
		t.Error("defaults differ from the reference scorer")
	}
}

func TestAgreementPassFlag(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i, l := range []string{"VALID", "REJECT", "NOT_IN_CONTEXT", "VALID", "REJECT"} {
		b.WriteString(`{"qid":"q` + string(rune('0'+i)) + `","scholar":{"label":"` + l + `"},"auditor":{"label":"` + l + `"}}` + "\n")
	}
	writeFile(t, filepath.Join(dir, "p.jsonl"), b.String())
	opt := defaultOptions()
	opt.Pairs = filepath.Join(dir, "p.jsonl")
	opt.TSVPath = filepath.Join(dir, "runs", "d.tsv")
	var out bytes.Buffer
	pass, err := RunAgreement(&out, opt)
	if err != nil || !pass {
		t.Fatalf("pass=%v err=%v\n%s", pass, err, out.String())
	}
	if !strings.HasSuffix(out.String(), "  \"pass\": true\n}\n") {
		t.Errorf("report:\n%s", out.String())
	}
	opt.AbstainGate = -1
	out.Reset()
	if pass, err := RunAgreement(&out, opt); err != nil || pass {
		t.Fatalf("with a negative abstain gate: pass=%v err=%v", pass, err)
	}
	if _, err := os.Stat(opt.TSVPath); !os.IsNotExist(err) {
		t.Errorf("TSV written without disagreements: %v", err)
	}
}

func TestAgreementTSVDirectoryCreatedAndModeKept(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.jsonl"), onePairDisagreeing)
	opt := defaultOptions()
	opt.Pairs = filepath.Join(dir, "p.jsonl")
	opt.TSVPath = filepath.Join(dir, "a", "b", "d.tsv")
	var out bytes.Buffer
	if _, err := RunAgreement(&out, opt); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(opt.TSVPath)
	if err != nil {
		t.Fatal(err)
	}
	want := "qid\tscholar\tauditor\tfinal\twhy\nq1\tVALID\tREJECT\tREJECT\tauditor_veto\n"
	if string(got) != want {
		t.Errorf("TSV = %q, want %q", got, want)
	}
	if err := os.Chmod(opt.TSVPath, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := RunAgreement(&out, opt); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(opt.TSVPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(opt.TSVPath))
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

func TestAgreementTSVThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.jsonl"), onePairDisagreeing)
	writeFile(t, filepath.Join(dir, "real", "d.tsv"), "old\n")
	if err := os.Symlink(filepath.Join(dir, "real", "d.tsv"), filepath.Join(dir, "link.tsv")); err != nil {
		t.Skip(err)
	}
	opt := defaultOptions()
	opt.Pairs = filepath.Join(dir, "p.jsonl")
	opt.TSVPath = filepath.Join(dir, "link.tsv")
	if _, err := RunAgreement(&bytes.Buffer{}, opt); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(opt.TSVPath); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symbolic link replaced: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real", "d.tsv")); !strings.HasPrefix(string(b), "qid\t") {
		t.Errorf("link target not written: %q", b)
	}
}

func TestAgreementTSVWriteError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.jsonl"), onePairDisagreeing)
	writeFile(t, filepath.Join(dir, "file"), "")
	opt := defaultOptions()
	opt.Pairs = filepath.Join(dir, "p.jsonl")
	opt.TSVPath = filepath.Join(dir, "file", "d.tsv") // parent is a file
	var out bytes.Buffer
	if _, err := RunAgreement(&out, opt); err == nil {
		t.Fatal("no error")
	}
	if out.Len() != 0 {
		t.Errorf("report printed although the TSV failed (the reference crashes first):\n%s", out.String())
	}
}

func TestAgreementNeedsInputs(t *testing.T) {
	for _, opt := range []AgreementOptions{{}, {Scholar: "s"}, {Auditor: "a"}} {
		if _, err := RunAgreement(&bytes.Buffer{}, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
	opt := defaultOptions()
	opt.Pairs = filepath.Join(t.TempDir(), "missing.jsonl")
	if _, err := RunAgreement(&bytes.Buffer{}, opt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestAgreementErrorLeavesOldTSV(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.jsonl"), onePairDisagreeing+`{"qid":"q2","scholar":{"label":"VALID"},"auditor":{"label":"REJECT"},"flags":null}`+"\n")
	tsv := filepath.Join(dir, "d.tsv")
	writeFile(t, tsv, "old\n")
	opt := defaultOptions()
	opt.Pairs = filepath.Join(dir, "p.jsonl")
	opt.TSVPath = tsv
	var out bytes.Buffer
	_, err := RunAgreement(&out, opt)
	if err == nil || !strings.Contains(err.Error(), `p.jsonl:2: field "flags": want an object, got null`) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(tsv); string(b) != "old\n" {
		t.Errorf("TSV touched: %q", b)
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out.String())
	}
}

func TestCheckPythonLimits(t *testing.T) {
	tests := []struct {
		doc   string
		depth int
		ok    bool
	}{
		{`{}`, 1, true},
		{`{"a":[]}`, 1, false},
		{`{"a":"[[[[{{{{"}`, 1, true},
		{`{"a\"[":"\\"}`, 1, true},
		{`[[1],[2],{"a":[3]}]`, 3, true},
		{`[[1],[2],{"a":[[3]]}]`, 3, false},
		{`[` + strings.Repeat("1", 4300) + `]`, 1, true},
		{`[-` + strings.Repeat("1", 4300) + `]`, 1, true},
		{`[` + strings.Repeat("1", 4301) + `]`, 1, false},
		{`[` + strings.Repeat("1", 4301) + `.0]`, 1, true},
		{`[` + strings.Repeat("1", 4301) + `e1]`, 1, true},
		{`[1e` + strings.Repeat("1", 5000) + `]`, 1, true},
		{`["` + strings.Repeat("1", 5000) + `"]`, 1, true},
	}
	for _, tt := range tests {
		err := checkPythonLimits([]byte(tt.doc), tt.depth)
		if (err == nil) != tt.ok {
			doc := tt.doc
			if len(doc) > 40 {
				doc = doc[:40] + "…"
			}
			t.Errorf("checkPythonLimits(%q, %d) = %v", doc, tt.depth, err)
		}
	}
}

// TestAgreementMatchesPythonRandom compares RunAgreement with the reference
// on seeded random files in both modes (skipped without python3).
func TestAgreementMatchesPythonRandom(t *testing.T) {
	py := python(t)
	if py == "" {
		t.Skip("no CPython 3.11 to compare with")
	}
	labels := []string{`"VALID"`, `"VALID"`, `"VALID"`, `"NOT_IN_CONTEXT"`, `"REJECT"`, `"ABSTAIN"`, `"valid"`, `""`, `"VALID "`, `"ＶＡＬＩＤ"`}
	qids := []string{`"a"`, `"b"`, `"Z"`, `"é"`, `"e\u0301"`, `"中"`, `"😀"`, `"\uff5e"`, `"a b"`, `"A0001"`, `"ı"`}
	truthy := []string{`true`, `false`, `null`, `0`, `1`, `-0.0`, `1e-400`, `1e400`, `""`, `"0"`, `[]`, `[0]`, `{}`, `{"a":null}`}
	ids := []string{`"p1"`, `"p2"`, `"p3"`, `"é"`, `"e\u0301"`}
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
		idList := func() string {
			var parts []string
			for n := r.IntN(4); n > 0; n-- {
				parts = append(parts, pick(ids))
			}
			return "[" + strings.Join(parts, ",") + "]"
		}
		dir := t.TempDir()
		var pairs, sch, aud strings.Builder
		for i := 0; i < 150+r.IntN(100); i++ {
			s, a := pick(labels), pick(labels)
			if r.IntN(3) == 0 {
				a = s
			}
			q := pick(qids)
			fmt.Fprintf(&pairs, `{"qid":%s,"scholar":{"label":%s,"reason":"x"},"auditor":{"label":%s}`, q, s, a)
			if r.IntN(2) == 0 {
				fmt.Fprintf(&pairs, `,"flags":{"provenance_violation":%s,"constraints_mismatch":%s}`, pick(truthy), pick(truthy))
			}
			switch r.IntN(4) {
			case 0:
				fmt.Fprintf(&pairs, `,"answer_json":{"claim":"c","citations":%s}`, idList())
			case 1:
				pairs.WriteString(`,"answer_json":null`)
			case 2:
				pairs.WriteString(`,"answer_json":{"citations":null}`)
			}
			if r.IntN(3) > 0 {
				fmt.Fprintf(&pairs, `,"retrieved_ids":%s`, idList())
			}
			pairs.WriteString("}" + pick([]string{"\n", "\r\n", "\r", "\x0b\n", "\n\u3000\n"}))
			if r.IntN(4) > 0 {
				fmt.Fprintf(&sch, `{"qid":%s,"label":%s}`+"\n", q, s)
			}
			if r.IntN(4) > 0 {
				fmt.Fprintf(&aud, `{"qid":%s,"label":%s}`+"\n", pick(qids), a)
			}
		}
		writeFile(t, filepath.Join(dir, "pairs.jsonl"), pairs.String())
		writeFile(t, filepath.Join(dir, "scholar.jsonl"), sch.String())
		writeFile(t, filepath.Join(dir, "auditor.jsonl"), aud.String())
		for _, mode := range []string{"pairs", "join"} {
			t.Run(fmt.Sprintf("seed%d/%s", seed, mode), func(t *testing.T) {
				work := t.TempDir()
				pyWork := t.TempDir()
				if err := os.MkdirAll(filepath.Join(pyWork, "runs"), 0o755); err != nil {
					t.Fatal(err)
				}
				opt := defaultOptions()
				opt.TSVPath = filepath.Join(work, DefaultTSVPath)
				script, _ := filepath.Abs(filepath.Join(refDir, "cross_agent_consistency.py"))
				args := []string{script}
				if mode == "pairs" {
					opt.Pairs = filepath.Join(dir, "pairs.jsonl")
					args = append(args, "--pairs", opt.Pairs)
				} else {
					opt.Scholar, opt.Auditor = filepath.Join(dir, "scholar.jsonl"), filepath.Join(dir, "auditor.jsonl")
					args = append(args, "--scholar", opt.Scholar, "--auditor", opt.Auditor)
				}
				var out bytes.Buffer
				_, err := RunAgreement(&out, opt)
				if err != nil {
					t.Fatal(err)
				}
				goRes := runResult{stdout: out.Bytes()}
				collectTSV(t, work, &goRes)
				pyRes := runPython(t, py, pyWork, args...)
				if pyRes.err != nil {
					t.Fatalf("reference failed: %v\n%s", pyRes.err, pyRes.stderr)
				}
				collectTSV(t, pyWork, &pyRes)
				compare(t, "reference", goRes, pyRes)
			})
		}
	}
}
