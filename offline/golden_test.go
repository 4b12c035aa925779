package offline

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// Golden cases live in testdata/agreement/<case> and testdata/triage/<case>.
//
// Inputs: pairs.jsonl or scholar.jsonl + auditor.jsonl (agreement), with an
// optional args file (reference command-line gates, one --name=value per
// line) and an optional old.tsv placed at runs/consistency_disagreements.tsv
// before the run; trace.jsonl + chunks.json (triage).
//
// Expectations: want.stdout and, for agreement, want.tsv (the TSV after the
// run; absent: no TSV) — both produced by the Python reference scripts in
// testdata/reference (go test -run Golden -update rewrites them). Or
// want.err: a substring of the error the Go port must return; the reference
// must then crash, unless a file named divergent says that Python accepts
// the input and the port refuses it on purpose (SPEC-invalid input).
//
// When python3 is on PATH every case is also re-run against the reference.

var update = flag.Bool("update", false, "rewrite want.stdout/want.tsv from the Python reference")

const refDir = "testdata/reference"

func python(t *testing.T) string {
	t.Helper()
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			pythonWhy = "python3 not on PATH"
			return
		}
		// python3 may be a slow launcher (pyenv shim): ask for the real
		// interpreter once. The port follows CPython 3.11 (its recursion
		// limits and Unicode 14 tables); other versions are not compared.
		out, err := exec.Command(p, "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])").Output()
		fields := strings.Fields(string(out))
		if err != nil || len(fields) != 2 {
			pythonWhy = fmt.Sprintf("python3 does not run: %v", err)
			return
		}
		if fields[1] != "3.11" {
			pythonWhy = "python3 is " + fields[1] + ", the reference behaviour is pinned to CPython 3.11"
			return
		}
		pythonPath = fields[0]
	})
	if pythonPath == "" {
		if *update {
			t.Fatalf("-update needs CPython 3.11: %s", pythonWhy)
		}
		t.Log(pythonWhy)
	}
	return pythonPath
}

var (
	pythonOnce sync.Once
	pythonPath string
	pythonWhy  string
)

func caseDirs(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no cases in %s", dir)
	}
	return out
}

func readOptional(t *testing.T, path string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type runResult struct {
	stdout []byte
	tsv    []byte
	hasTSV bool
	err    error // Go error, or Python's non-zero exit
	stderr string
}

// agreementArgs reads the case's args file into reference arguments and Go
// options.
func agreementArgs(t *testing.T, dir string) ([]string, AgreementOptions) {
	t.Helper()
	opt := AgreementOptions{PAGate: DefaultPAGate, KappaGate: DefaultKappaGate, AbstainGate: DefaultAbstainGate}
	var args []string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"pairs.jsonl", &opt.Pairs}, {"scholar.jsonl", &opt.Scholar}, {"auditor.jsonl", &opt.Auditor}} {
		if exists(filepath.Join(dir, f.name)) {
			*f.dst = f.name
			args = append(args, "--"+strings.TrimSuffix(f.name, ".jsonl"), f.name)
		}
	}
	gates := map[string]*float64{"--pa_gate": &opt.PAGate, "--kappa_gate": &opt.KappaGate, "--abstain_gate": &opt.AbstainGate}
	b, _ := readOptional(t, filepath.Join(dir, "args"))
	for _, line := range strings.Fields(string(b)) {
		name, val, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bad args line %q", line)
		}
		x, err := pycompat.ParseFloat(val)
		if err != nil {
			t.Fatalf("args %q: %v", line, err)
		}
		dst, known := gates[name]
		if !known {
			t.Fatalf("unknown arg %q", name)
		}
		*dst = x
		args = append(args, line)
	}
	return args, opt
}

// stage copies the case inputs into a fresh directory, with old.tsv in
// place when the case has one.
func stage(t *testing.T, dir string, inputs ...string) string {
	t.Helper()
	work := t.TempDir()
	for _, in := range inputs {
		if exists(filepath.Join(dir, in)) {
			copyFile(t, filepath.Join(dir, in), filepath.Join(work, in))
		}
	}
	if exists(filepath.Join(dir, "old.tsv")) {
		copyFile(t, filepath.Join(dir, "old.tsv"), filepath.Join(work, DefaultTSVPath))
	}
	return work
}

func collectTSV(t *testing.T, work string, res *runResult) {
	res.tsv, res.hasTSV = readOptional(t, filepath.Join(work, DefaultTSVPath))
}

func runAgreementGo(t *testing.T, dir string) runResult {
	work := stage(t, dir, "pairs.jsonl", "scholar.jsonl", "auditor.jsonl")
	_, opt := agreementArgs(t, dir)
	for _, p := range []*string{&opt.Pairs, &opt.Scholar, &opt.Auditor} {
		if *p != "" {
			*p = filepath.Join(work, *p)
		}
	}
	opt.TSVPath = filepath.Join(work, DefaultTSVPath) // runs/ is not created beforehand
	var out bytes.Buffer
	_, err := RunAgreement(&out, opt)
	res := runResult{stdout: out.Bytes(), err: err}
	collectTSV(t, work, &res)
	return res
}

func runPython(t *testing.T, py, work string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(py, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PYTHONIOENCODING=utf-8", "PYTHONHASHSEED=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return runResult{stdout: out.Bytes(), err: err, stderr: errb.String()}
}

func runAgreementPython(t *testing.T, py, dir string) runResult {
	work := stage(t, dir, "pairs.jsonl", "scholar.jsonl", "auditor.jsonl")
	if err := os.MkdirAll(filepath.Join(work, "runs"), 0o755); err != nil { // the reference needs it
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join(refDir, "cross_agent_consistency.py"))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := agreementArgs(t, dir)
	res := runPython(t, py, work, append([]string{script}, args...)...)
	collectTSV(t, work, &res)
	return res
}

func runTriageGo(t *testing.T, dir string) runResult {
	var out bytes.Buffer
	err := RunTriage(&out, io.Discard, filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "chunks.json"))
	return runResult{stdout: out.Bytes(), err: err}
}

func runTriagePython(t *testing.T, py, dir string) runResult {
	work := stage(t, dir, "trace.jsonl", "chunks.json")
	script, err := filepath.Abs(filepath.Join(refDir, "reflect.py"))
	if err != nil {
		t.Fatal(err)
	}
	return runPython(t, py, work, script, "trace.jsonl", "chunks.json")
}

func TestGoldenAgreement(t *testing.T) {
	testGolden(t, "testdata/agreement", runAgreementGo, runAgreementPython)
}

func TestGoldenTriage(t *testing.T) {
	testGolden(t, "testdata/triage", runTriageGo, runTriagePython)
}

func testGolden(t *testing.T, root string,
	runGo func(*testing.T, string) runResult,
	runPy func(*testing.T, string, string) runResult) {
	py := python(t)
	for _, name := range caseDirs(t, root) {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // the reference takes a while to start
			dir := filepath.Join(root, name)
			wantErr, isErr := readOptional(t, filepath.Join(dir, "want.err"))
			divergent := exists(filepath.Join(dir, "divergent"))

			var pyRes runResult
			if py != "" {
				pyRes = runPy(t, py, dir)
				switch {
				case isErr && !divergent && pyRes.err == nil:
					t.Errorf("reference accepted an input the port refuses, and the case is not marked divergent; stdout:\n%s", pyRes.stdout)
				case isErr && divergent && pyRes.err != nil:
					t.Errorf("case marked divergent but the reference fails too:\n%s", pyRes.stderr)
				case !isErr && pyRes.err != nil:
					t.Fatalf("reference failed: %v\n%s", pyRes.err, pyRes.stderr)
				}
			}
			if *update && !isErr {
				writeGolden(t, dir, pyRes)
			}

			goRes := runGo(t, dir)
			if isErr {
				msg := strings.TrimSpace(string(wantErr))
				if goRes.err == nil {
					t.Fatalf("want error containing %q, got none; stdout:\n%s", msg, goRes.stdout)
				}
				if !strings.Contains(goRes.err.Error(), msg) {
					t.Errorf("error = %q, want it to contain %q", goRes.err, msg)
				}
				if len(goRes.stdout) != 0 {
					t.Errorf("stdout written despite the error:\n%s", goRes.stdout)
				}
				old, hasOld := readOptional(t, filepath.Join(dir, "old.tsv"))
				if goRes.hasTSV != hasOld || !bytes.Equal(goRes.tsv, old) {
					t.Errorf("TSV touched despite the error")
				}
				return
			}
			if goRes.err != nil {
				t.Fatalf("unexpected error: %v", goRes.err)
			}
			wantOut, ok := readOptional(t, filepath.Join(dir, "want.stdout"))
			if !ok {
				t.Fatal("missing want.stdout (run with -update)")
			}
			wantTSV, wantHasTSV := readOptional(t, filepath.Join(dir, "want.tsv"))
			compare(t, "golden", goRes, runResult{stdout: wantOut, tsv: wantTSV, hasTSV: wantHasTSV})
			if py != "" {
				compare(t, "live reference", goRes, pyRes)
			}
		})
	}
	if py == "" {
		t.Log("compared with the committed golden files only")
	}
}

func compare(t *testing.T, what string, got, want runResult) {
	t.Helper()
	if !bytes.Equal(got.stdout, want.stdout) {
		t.Errorf("stdout differs from %s:\n--- go\n%s\n--- want\n%s", what, got.stdout, want.stdout)
	}
	if got.hasTSV != want.hasTSV || !bytes.Equal(got.tsv, want.tsv) {
		t.Errorf("TSV differs from %s (present %v/%v):\n--- go\n%q\n--- want\n%q", what, got.hasTSV, want.hasTSV, got.tsv, want.tsv)
	}
}

func writeGolden(t *testing.T, dir string, res runResult) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "want.stdout"), res.stdout, 0o644); err != nil {
		t.Fatal(err)
	}
	tsvPath := filepath.Join(dir, "want.tsv")
	if res.hasTSV {
		if err := os.WriteFile(tsvPath, res.tsv, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Remove(tsvPath); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
