package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// config check reports every problem of a file in one run, a misspelt key
// and a misspelt metric together, each with the name it is likely meant.
func TestConfigCheckEveryProblem(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("natz: {}\ngates:\n  - name: g\n    metric: precison\n    op: \">=\"\n    treshold: 0.8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("k: [5]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"config", "check", bad, good}, &out, &errs); code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	want := bad + `:1: unknown field "natz" at the top level; did you mean "nats"?
` + bad + `:4: gates[0] "g": unknown metric "precison"; did you mean "precision"?
` + bad + `:6: unknown field "treshold" in gates[0]; did you mean "threshold"?
`
	if errs.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs.String(), want)
	}
	if out.String() != good+": ok\n" {
		t.Errorf("stdout %q", out.String())
	}
}
