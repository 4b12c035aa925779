package alert

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shadoweval/shadoweval/config"

	"github.com/shadoweval/shadoweval/testenv"
)

var update = flag.Bool("update", false, "rewrite the committed rules file of the default gates")

// committedRules is the rules file of the shipped gates, for the Helm chart.
const committedRules = "../../charts/shadoweval/files/shadoweval-rules.yaml"

func TestCommittedRulesUpToDate(t *testing.T) {
	want, err := Rules(config.DefaultGates())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committedRules, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(committedRules)
	if err != nil {
		t.Fatalf("%v; run go test ./sidecar/alert -run TestCommittedRulesUpToDate -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with the generator; run go test ./sidecar/alert -run TestCommittedRulesUpToDate -update", committedRules)
	}
}

// specGates reads testdata/gates.yaml, the SPEC §5 example gates.
func specGates(t *testing.T) []config.Gate {
	t.Helper()
	cfg, err := config.Load("testdata/gates.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Gates
}

// parsedRules is the part of a rule file the tests look at.
type parsedRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestRulesExpressions(t *testing.T) {
	out, err := Rules(specGates(t))
	if err != nil {
		t.Fatal(err)
	}
	var f parsedRules
	if err := yaml.Unmarshal(out, &f); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(f.Groups) != 2 || len(f.Groups[0].Rules) != 2 || len(f.Groups[1].Rules) != 1 {
		t.Fatalf("want a group of two gate rules and the delivery group, got\n%s", out)
	}
	if slow := f.Groups[1].Rules[0]; f.Groups[1].Name != DeliveryGroupName || slow.Alert != SlowConsumerAlert ||
		slow.Expr != "increase(shadoweval_nats_dropped_messages_total[5m]) > 0" || slow.Labels["severity"] != "warning" {
		t.Errorf("delivery group: %+v", f.Groups[1])
	}
	floor, vsLive := f.Groups[0].Rules[0], f.Groups[0].Rules[1]
	if floor.Alert != "precision_floor" || floor.For != "5m" ||
		floor.Labels["severity"] != "page" || floor.Labels["gate"] != "precision_floor" {
		t.Errorf("precision_floor: %+v", floor)
	}
	wantFloor := `shadoweval_window_value{metric="precision",window="5m",arm=~"shadow|canary"} < 0.8
and
shadoweval_window_samples{metric="precision",window="5m",arm=~"shadow|canary"} >= 200`
	if floor.Expr != wantFloor {
		t.Errorf("precision_floor expr:\n%s\nwant\n%s", floor.Expr, wantFloor)
	}
	if vsLive.For != "" || vsLive.Labels["severity"] != "warning" {
		t.Errorf("recall5_vs_live: %+v", vsLive)
	}
	wantVs := `(
  shadoweval_window_value{metric="recall_at_5",window="5m",arm!="live"}
  - ignoring(arm) group_left
  shadoweval_window_value{metric="recall_at_5",window="5m",arm="live"}
) < -0.02
and
shadoweval_window_samples{metric="recall_at_5",window="5m",arm!="live"} >= 100
and ignoring(arm)
shadoweval_window_samples{metric="recall_at_5",window="5m",arm="live"} >= 100`
	if vsLive.Expr != wantVs {
		t.Errorf("recall5_vs_live expr:\n%s\nwant\n%s", vsLive.Expr, wantVs)
	}
}

func TestRulesOps(t *testing.T) {
	for op, want := range map[string]string{">=": " < 0.5\n", ">": " <= 0.5\n", "<=": " > 0.5\n", "<": " >= 0.5\n"} {
		g := config.Gate{Name: "g", Metric: "chr", Op: op, Threshold: 0.5, Window: "1h", MinSamples: 1, Arms: []string{"a.b+c"}}
		r, err := gateRule(&g)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Expr, want) {
			t.Errorf("op %s: %q does not hold %q", op, r.Expr, want)
		}
		if !strings.Contains(r.Expr, `arm="a.b+c"`) {
			t.Errorf("one arm is matched with =: %q", r.Expr)
		}
	}
	g := config.Gate{Name: "g", Metric: "chr", Op: ">=", Threshold: 0.5, Window: "5m"}
	r, err := gateRule(&g)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Expr, "samples") || r.Labels["severity"] != config.DefaultSeverity {
		t.Errorf("min_samples 0 needs no guard, and severity defaults: %+v", r)
	}
	for _, bad := range []config.Gate{
		{Metric: "chr", Op: ">=", Window: "5m"},
		{Name: "g", Metric: "chr", Op: "==", Window: "5m"},
		{Name: "g", Metric: "chr", Op: ">=", Window: ""},
		{Name: "g", Metric: "chr", Op: ">=", Window: "5m", Severity: "a b"},
	} {
		if _, err := Rules([]config.Gate{bad}); err == nil {
			t.Errorf("no error for %+v", bad)
		}
	}
}

func TestPrometheusRuleManifest(t *testing.T) {
	out, err := PrometheusRule(config.DefaultGates(), "shadoweval", "monitoring")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `yaml:"metadata"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "monitoring.coreos.com/v1" || m.Kind != "PrometheusRule" ||
		m.Metadata.Name != "shadoweval" || m.Metadata.Namespace != "monitoring" {
		t.Fatalf("manifest header: %+v", m)
	}
	// The spec is exactly the rule file.
	spec, err := yaml.Marshal(&m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := Rules(config.DefaultGates())
	var a, b any
	if err := yaml.Unmarshal(spec, &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rules, &b); err != nil {
		t.Fatal(err)
	}
	if !equalYAML(a, b) {
		t.Errorf("spec differs from the rule file:\n%s", spec)
	}
	if _, err := PrometheusRule(nil, "Bad_Name", ""); err == nil {
		t.Error("a bad name is accepted")
	}
	if _, err := PrometheusRule(nil, "ok", "bad.ns"); err == nil {
		t.Error("a bad namespace is accepted")
	}
}

func equalYAML(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return bytes.Equal(x, y)
}

// promtool runs promtool with args in dir and returns its output.
func promtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	bin := testenv.Promtool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPromtoolCheckRules(t *testing.T) {
	dir := t.TempDir()
	spec, err := Rules(specGates(t))
	if err != nil {
		t.Fatal(err)
	}
	// Gates with every op, names and arms that need quoting, no
	// min_samples, a compare_to gate listing its arms, confidence.
	odd := []config.Gate{
		{Name: "a-b.c:d", Metric: "chr", Op: ">", Threshold: 0.5, Window: "1m30s", Arms: []string{"x.y", "z+1"}, Severity: "sev-1"},
		{Name: "lt", Metric: "delta_s_p90", Op: "<", Threshold: 0.6, Window: "5m", MinSamples: 10, For: config.Duration(90 * time.Second)},
		{Name: "le", Metric: "abstain_rate", Op: "<=", Threshold: 1e-5, Window: "1h", MinSamples: 50},
		{Name: "cmp", Metric: "delta_s_median", Op: "<=", Threshold: 0.05, Window: "5m", MinSamples: 100, Arms: []string{"canary"}, CompareTo: "live"},
		{Name: "conf", Metric: "coverage", Op: ">=", Threshold: 0.7, Window: "5m", MinSamples: 100, Confidence: 0.9},
	}
	oddRules, err := Rules(odd)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"spec.yaml": spec, "odd.yaml": oddRules} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(committedRules)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{abs, "spec.yaml", "odd.yaml"} {
		out, err := promtool(t, dir, "check", "rules", f)
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
		}
	}
	// The check is not vacuous: a broken expression fails it.
	bad := strings.Replace(string(oddRules), "group_left", "group_leftt", 1)
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := promtool(t, dir, "check", "rules", "bad.yaml"); err == nil {
		t.Errorf("promtool accepted a broken rule file:\n%s", out)
	}
}

// TestPromtoolTestRules runs testdata/rules_test.yaml, promtool unit tests
// of the rules of testdata/gates.yaml: a canary whose precision drops
// below 0.80 with enough samples fires after for and not before; one with
// too few samples, or not among the gate's arms, never fires; the
// compare_to gate fires when canary recall_at_5 is more than 0.02 below
// live on the same target.
func TestPromtoolTestRules(t *testing.T) {
	dir := t.TempDir()
	rules, err := Rules(specGates(t))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := promtool(t, dir, "test", "rules", "rules_test.yaml")
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\nrules:\n%s", err, out, rules)
	}
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules said:\n%s", out)
	}
	t.Logf("promtool test rules:\n%s", out)
}
