package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/testenv/apptest"
	"github.com/shadoweval/shadoweval/wire"
)

// readmeGold is the gold item of the README's formats: the one the
// examples' event answers.
const readmeGold = `{"qid":"A0001","question":"Does X support null keys?","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}` + "\n"

// labels writes a Downward API labels file (key="value" lines, as the
// kubelet writes them) and points LABELS_FILE at it.
func labels(t *testing.T, lines string) {
	t.Helper()
	f := testenv.WriteFile(t, t.TempDir(), "labels", []byte(lines))
	t.Setenv("LABELS_FILE", f)
}

func TestArm(t *testing.T) {
	for _, c := range []struct{ name, labels, want string }{
		{"Argo Rollouts canary", "app=\"retriever\"\narm=\"canary\"\nrollouts-pod-template-hash=\"6f9c7d5b8\"\n", "canary"},
		{"Argo Rollouts stable", "app=\"retriever\"\narm=\"live\"\n", "live"},
		{"Flagger canary", "app=\"retriever\"\narm=\"canary\"\n", "canary"},
		{"Flagger primary, arm copied from the canary", "app=\"retriever-primary\"\narm=\"canary\"\n", "live"},
		{"no arm label", "app=\"retriever\"\n", "live"},
	} {
		labels(t, c.labels)
		if got := arm(); got != c.want {
			t.Errorf("%s: arm() = %q, want %q", c.name, got, c.want)
		}
	}
	t.Setenv("LABELS_FILE", filepath.Join(t.TempDir(), "none"))
	if got := arm(); got != "live" {
		t.Errorf("without a labels file: arm() = %q, want live", got)
	}
}

// TestPublisher runs the example against a sidecar: its event is scored
// under the canary arm, a right answer.
func TestPublisher(t *testing.T) {
	app := apptest.Start(t, apptest.Options{GoldData: []byte(readmeGold), ClockStart: time.Now()})
	t.Setenv("NATS_URL", app.Sidecar.NATSURL())
	labels(t, "app=\"retriever\"\narm=\"canary\"\n")
	main()
	app.Poll("the example's event scored in arm canary", func() string {
		rep, ok := app.Windows("canary", "5m")
		if !ok || rep.Events["scored"] != 1 {
			return "not yet"
		}
		if p := rep.Metrics["precision"].Value; p == nil || *p != 1 {
			return "precision is not 1"
		}
		return ""
	})
}

// TestPythonPublisher: the Python example's event, as it builds it, is a
// valid trace event of the labelled arm. nats-py is not installed here:
// the event is built and decoded, not published.
func TestPythonPublisher(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	labels(t, "app=\"retriever\"\narm=\"canary\"\n")
	cmd := exec.Command(python, "-c", "import json, publish; print(json.dumps(publish.trace_event(publish.arm())))")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, stderr.String())
	}
	ev, err := wire.DecodeTrace(bytes.TrimSpace(out))
	if err != nil {
		t.Fatalf("the Python example's event is refused: %v\n%s", err, out)
	}
	if ev.Arm != "canary" || ev.QID != "A0001" || ev.TS.IsZero() || len(ev.TopK) != 2 {
		t.Errorf("event %+v", ev)
	}
}

// TestReadmeCarriesTheExamples: the README shows these files as they are.
func TestReadmeCarriesTheExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, lang := range map[string]string{"main.go": "go", "publish.py": "python"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "```"+lang+"\n"+string(src)+"```\n") {
			t.Errorf("README.md does not show examples/publisher/%s as it is", file)
		}
	}
}

// The examples' subjects carry the key token shadoweval's replay gives
// (stream.PartitionKey), for a safe qid and for one that is hashed.
func TestSubjectKey(t *testing.T) {
	qids := []string{"A0001", "q:7=a+b_c-d", "a.b c", "", strings.Repeat("x", 65), "é", "h0123456789abcdef"}
	python, err := exec.LookPath("python3")
	for _, qid := range qids {
		want := "rag.trace.canary." + stream.PartitionKey(qid)
		if got := subject("canary", qid); got != want {
			t.Errorf("Go subject(%q) = %q, want %q", qid, got, want)
		}
		if err != nil {
			continue
		}
		out, perr := exec.Command(python, "-c", "import publish, sys; print(publish.subject('canary', sys.argv[1]))", qid).Output()
		if perr != nil {
			t.Fatalf("python3: %v", perr)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("Python subject(%q) = %q, want %q", qid, got, want)
		}
	}
}
