package chartcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestReadmeInstallAddress: the address the README's manifests (Argo
// Rollouts, Flagger) give the sidecar is the Service that the README's
// `helm install` makes: its name, namespace and port. The install is run
// as the README gives it, through `helm template`.
func TestReadmeInstallAddress(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, helmSection, ok := strings.Cut(string(readme), "\n### Helm\n")
	if !ok {
		t.Fatal("README.md has no ### Helm section")
	}
	_, block, ok := strings.Cut(helmSection, "```sh\n")
	if !ok {
		t.Fatal("README.md's Helm section has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	args := strings.Fields(strings.ReplaceAll(block, "\\\n", " "))
	if len(args) < 4 || args[0] != "helm" || args[1] != "install" {
		t.Fatalf("README.md's Helm block is not a helm install: %q", block)
	}
	// helm template takes what helm install takes, but --create-namespace;
	// the chart's path and the gold file are the repository's and a
	// temporary one.
	gold := filepath.Join(t.TempDir(), "gold.jsonl")
	if err := os.WriteFile(gold, []byte(`{"qid":"A0001","answerable":true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl := []string{"template"}
	namespace := "default"
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--create-namespace":
			continue
		case a == "charts/shadoweval":
			a = chartDir
		case a == "--namespace" || a == "-n":
			namespace = args[i+1]
		case strings.HasPrefix(a, "gold.inline="):
			a = "gold.inline=" + gold
		}
		tmpl = append(tmpl, a)
	}
	out, err := exec.Command(helmBin(t), tmpl...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(tmpl, " "), err, out)
	}
	var svc *corev1.Service
	for _, m := range decodeAll(t, out) {
		if s, ok := m.Obj.(*corev1.Service); ok {
			svc = s
		}
	}
	if svc == nil {
		t.Fatal("the README's install renders no Service")
	}
	if svc.Namespace != namespace {
		t.Errorf("the Service is in namespace %q, the install names %q", svc.Namespace, namespace)
	}
	addr := regexp.MustCompile(`http://([a-z0-9-]*shadoweval[a-z0-9-]*)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?:(\d+)`)
	found := addr.FindAllStringSubmatch(string(readme), -1)
	if len(found) < 3 {
		t.Fatalf("README.md gives the sidecar's in-cluster address %d times; want it in the Argo and Flagger manifests", len(found))
	}
	for _, m := range found {
		if m[1] != svc.Name || m[2] != svc.Namespace || m[3] != strconv.Itoa(int(svc.Spec.Ports[0].Port)) {
			t.Errorf("README.md names %s, but the README's install makes the Service %s in %s on port %d", m[0], svc.Name, svc.Namespace, svc.Spec.Ports[0].Port)
		}
	}
}
