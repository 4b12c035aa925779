package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/testenv"
)

func runRulesCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = runRules(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRulesCommand(t *testing.T) {
	// No --config: the shipped gates, exactly the committed chart file.
	code, out, errs := runRulesCmd()
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	committed, err := os.ReadFile("../../charts/shadoweval/files/shadoweval-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(committed) {
		t.Error("shadoweval rules differs from charts/shadoweval/files/shadoweval-rules.yaml")
	}

	code, out, errs = runRulesCmd("--config", "../../sidecar/alert/testdata/gates.yaml", "--prometheusrule", "--name", "gates", "--namespace", "mon")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"kind: PrometheusRule\n", "  name: gates\n", "  namespace: mon\n", "spec:\n  groups:\n", "alert: precision_floor", "for: 5m", "ignoring(arm) group_left"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}

	bad := testenv.WriteFile(t, t.TempDir(), "bad.yaml", []byte("gates:\n  - name: x\n    metric: precison\n    op: '>='\n"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", bad}, "bad.yaml:3"},
		{[]string{"--name", "x"}, "--name needs --prometheusrule"},
		{[]string{"--prometheusrule", "--name", "Bad_Name"}, "not a Kubernetes object name"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--nope"}, "flag provided but not defined"},
	} {
		code, out, errs := runRulesCmd(c.args...)
		if code != exitBadInput || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
	}
}
