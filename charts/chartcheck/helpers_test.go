package chartcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Paths relative to this package's directory (go test runs there).
const (
	repoRoot   = "../.."
	chartDir   = "../shadoweval"
	exampleDir = "../examples/retriever"
	release    = "rel"
	namespace  = "search"
)

// helmBin finds helm: $HELM, the PATH, then $(go env GOPATH)/bin.
func helmBin(t testing.TB) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		h := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(h); err == nil {
			return h
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("helm not found ($HELM, PATH, GOPATH/bin); `make chart` installs it")
	}
	t.Skip("helm not found ($HELM, PATH, GOPATH/bin); `make chart` installs it")
	return ""
}

// helmTemplate renders chart with the values files (none: the defaults)
// and extra args such as --set.
func helmTemplate(t testing.TB, chart string, valuesFiles []string, extra ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", release, chart, "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	args = append(args, extra...)
	cmd := exec.Command(helmBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// shadoweval builds the binary from the main module once per test run,
// with plain `go build` so that it reuses the build cache of the main
// module's tests (the Dockerfile's flags are checked by TestDockerfile).
func shadoweval(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chartcheck-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "shadoweval")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/shadoweval")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/shadoweval: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// configCheck runs `shadoweval config check` on a configuration.
func configCheck(t testing.TB, name string, data []byte) error {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(shadoweval(t), "config", "check", f).CombinedOutput()
	if err != nil {
		return fmt.Errorf("shadoweval config check: %v\n%s", err, out)
	}
	return nil
}

// manifest is one rendered document.
type manifest struct {
	Source string // "# Source:" comment of helm template
	Raw    []byte
	Kind   string
	Name   string
	Obj    any // *corev1.ConfigMap, ..., *serviceMonitor, *prometheusRule
}

var sourceRE = regexp.MustCompile(`(?m)^# Source: (.*)$`)

// decodeAll splits helm's output into documents and decodes each strictly.
func decodeAll(t testing.TB, out []byte) []manifest {
	t.Helper()
	var list []manifest
	for _, doc := range splitYAML(out) {
		m := manifest{Raw: doc}
		if s := sourceRE.FindSubmatch(doc); s != nil {
			m.Source = string(s[1])
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("%s: %v", m.Source, err)
			continue
		}
		m.Obj, m.Kind, m.Name = obj, obj.GroupVersionKind().Kind, obj.GetName()
		list = append(list, m)
	}
	return list
}

// splitYAML splits a YAML stream into its non-empty documents.
func splitYAML(out []byte) [][]byte {
	var docs [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(out), -1) {
		trimmed := strings.TrimSpace(sourceRE.ReplaceAllString(doc, ""))
		if trimmed == "" {
			continue
		}
		docs = append(docs, []byte(doc))
	}
	return docs
}

// object is what every manifest the chart renders has: a kind and a name.
type object interface {
	GroupVersionKind() schema.GroupVersionKind
	GetName() string
}

func decodeStrict(doc []byte) (object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("not YAML: %v", err)
	}
	decode, ok := manifestKinds[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unexpected kind %s %s", tm.APIVersion, tm.Kind)
	}
	return decode(doc)
}

// manifestKinds are the kinds the chart renders, by apiVersion and kind,
// each with the strict decoder of its typed object.
var manifestKinds = map[string]func(doc []byte) (object, error){
	"monitoring.coreos.com/v1 ServiceMonitor": strictAs[serviceMonitor],
	"monitoring.coreos.com/v1 PrometheusRule": strictAs[prometheusRule],
	"v1 ConfigMap":                  strictAs[corev1.ConfigMap],
	"v1 Secret":                     strictAs[corev1.Secret],
	"v1 Service":                    strictAs[corev1.Service],
	"v1 ServiceAccount":             strictAs[corev1.ServiceAccount],
	"apps/v1 Deployment":            strictAs[appsv1.Deployment],
	"apps/v1 StatefulSet":           strictAs[appsv1.StatefulSet],
	"policy/v1 PodDisruptionBudget": strictAs[policyv1.PodDisruptionBudget],
}

// strictAs is strictInto a new T.
func strictAs[T any, PT interface {
	*T
	object
}](doc []byte) (object, error) {
	obj, err := strictInto(doc, new(T))
	if err != nil {
		return nil, err
	}
	return PT(obj), nil
}

// strictInto decodes a manifest into its typed object the way the API
// server's strict field validation does: duplicate keys, unknown fields and
// fields spelt in another case (readonly for readOnly, which encoding/json
// would accept) are errors.
func strictInto[T any](doc []byte, obj *T) (*T, error) {
	if err := strictYAML(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// strictYAML decodes YAML into v with sigs.k8s.io/json's case-sensitive
// strict decoder, the one apimachinery's strict serializer uses.
func strictYAML(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// byKind returns the manifests of one kind, in order.
func byKind(list []manifest, kind string) []manifest {
	var out []manifest
	for _, m := range list {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

// values is a merged values tree.
type values map[string]any

// loadValues merges the chart's values.yaml with the files, later files
// winning, as helm does for maps (lists replace).
func loadValues(t testing.TB, files ...string) values {
	t.Helper()
	v := map[string]any{}
	for _, f := range append([]string{filepath.Join(chartDir, "values.yaml")}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		mergeInto(v, m)
	}
	return v
}

func mergeInto(dst, src map[string]any) {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
			cp := map[string]any{}
			mergeInto(cp, sm)
			dst[k] = cp
			continue
		}
		dst[k] = sv
	}
}

// get walks a dotted path; nil when absent.
func (v values) get(path string) any {
	var cur any = map[string]any(v)
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func (v values) str(path string) string {
	s, _ := v.get(path).(string)
	return s
}

func (v values) boolean(path string) bool {
	b, _ := v.get(path).(bool)
	return b
}

func (v values) integer(path string) int {
	switch n := v.get(path).(type) {
	case float64:
		return int(n)
	case int64:
		return int(n)
	case int:
		return n
	}
	return 0
}

// ciValuesFiles lists the chart's ci/*-values.yaml.
func ciValuesFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no ci/*-values.yaml")
	}
	sort.Strings(files)
	return files
}

// copyDir copies a directory tree (regular files and directories only).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return errors.New(p + ": not a regular file")
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
