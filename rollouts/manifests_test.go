package rollouts

// The README's manifests are complete objects a cluster accepts: each is
// validated against the CustomResourceDefinition that Flagger or Argo
// Rollouts installs (the files of their own repositories, from the module
// cache), with the API server's own code (k8s.io/apiextensions-apiserver):
// the OpenAPI schema with its required fields, and pruning, which reports
// every field the schema does not know (the API server would drop it
// silently). Argo's pkg/apis/rollouts/validation cannot be compiled here
// (it reaches Argo's Prometheus provider, which wants an older
// client_golang than this module's), so the few rules of ValidateRollout a
// schema cannot express are checked by hand below.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
)

// crdCheck validates objects of one kind and version as the API server
// would.
type crdCheck struct {
	kind       string
	validator  validation.SchemaValidator
	structural *structuralschema.Structural
}

// moduleDir is where module (a dependency of this module) is in the
// module cache.
func moduleDir(t testing.TB, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}

// loadCRD reads the CRD of kind from file (a path in module) and prepares
// the schema of version.
func loadCRD(t testing.TB, module, file, kind, version string) *crdCheck {
	t.Helper()
	path := filepath.Join(moduleDir(t, module), file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(doc, &crd); err != nil || crd.Spec.Names.Kind != kind {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatalf("%s %s: %v", path, kind, err)
			}
			validator, _, err := validation.NewSchemaValidator(&internal)
			if err != nil {
				t.Fatalf("%s %s: %v", path, kind, err)
			}
			structural, err := structuralschema.NewStructural(&internal)
			if err != nil {
				t.Fatalf("%s %s: %v", path, kind, err)
			}
			return &crdCheck{kind: kind, validator: validator, structural: structural}
		}
	}
	t.Fatalf("%s: no CRD of kind %s with a schema for %s", path, kind, version)
	return nil
}

// problems are what the API server would say of manifest: schema errors,
// metadata errors and the fields it would drop.
func (c *crdCheck) problems(t testing.TB, manifest string) []string {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("%s: %v", c.kind, err)
	}
	var out []string
	if kind, _ := obj["kind"].(string); kind != c.kind {
		out = append(out, "kind "+kind+", want "+c.kind)
	}
	for _, e := range validation.ValidateCustomResource(nil, obj, c.validator) {
		out = append(out, e.Error())
	}
	var meta metav1.ObjectMeta
	if m, ok := obj["metadata"].(map[string]any); !ok {
		out = append(out, "metadata: Required value")
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
		out = append(out, "metadata: "+err.Error())
	} else if meta.Name == "" {
		out = append(out, "metadata.name: Required value")
	}
	pruned := runtime.DeepCopyJSON(obj)
	for _, p := range pruning.PruneWithOptions(pruned, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		out = append(out, p+": unknown field (the API server drops it)")
	}
	return out
}

// TestReadmeManifestsAccepted: the README's Canary, Rollout and
// AnalysisTemplate pass the CRDs of Flagger v1.36.1 and Argo Rollouts
// v1.9.0.
func TestReadmeManifestsAccepted(t *testing.T) {
	canary := loadCRD(t, "github.com/fluxcd/flagger", "artifacts/flagger/crd.yaml", "Canary", "v1beta1")
	rollout := loadCRD(t, "github.com/argoproj/argo-rollouts", "manifests/crds/rollout-crd.yaml", "Rollout", "v1alpha1")
	template := loadCRD(t, "github.com/argoproj/argo-rollouts", "manifests/crds/analysis-template-crd.yaml", "AnalysisTemplate", "v1alpha1")
	for _, c := range []struct {
		name     string
		crd      *crdCheck
		manifest string
	}{
		{"Flagger Canary", canary, readmeCanary},
		{"Argo Rollout", rollout, readmeRollout},
		{"Argo AnalysisTemplate", template, readmeAnalysisTemplate},
	} {
		if p := c.crd.problems(t, c.manifest); len(p) > 0 {
			t.Errorf("the README's %s is refused:\n%s", c.name, strings.Join(p, "\n"))
		}
	}

	// The checks can fail: what the README once showed is refused.
	noService := strings.Replace(readmeCanary, "  service:\n    port: 8080\n", "", 1)
	if noService == readmeCanary {
		t.Fatal("the README's Canary has no service.port: 8080 to take out")
	}
	if p := canary.problems(t, noService); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "spec.service: Required value") }) {
		t.Errorf("a Canary without spec.service: %v, want spec.service required", p)
	}
	typo := strings.Replace(readmeRollout, "canaryMetadata:", "canaryMetdata:", 1)
	if p := rollout.problems(t, typo); !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, "canaryMetdata: unknown field") }) {
		t.Errorf("a Rollout with a misspelt field: %v, want it reported", p)
	}
}

// TestReadmeRolloutSpec: the rules of Argo's ValidateRolloutSpec that a
// schema cannot express hold for the README's Rollout: a selector that
// selects the pod template, and a template (or a workloadRef). It also
// reads strictly into Argo's own types.
func TestReadmeRolloutSpec(t *testing.T) {
	var ro v1alpha1.Rollout
	if err := yaml.UnmarshalStrict([]byte(readmeRollout), &ro); err != nil {
		t.Fatalf("README Rollout: %v", err)
	}
	if ro.Spec.WorkloadRef == nil && len(ro.Spec.Template.Spec.Containers) == 0 {
		t.Error("the Rollout has neither a pod template with containers nor a workloadRef")
	}
	sel, err := metav1.LabelSelectorAsSelector(ro.Spec.Selector)
	if err != nil || ro.Spec.Selector == nil || sel.Empty() {
		t.Fatalf("the Rollout's selector %v: %v", ro.Spec.Selector, err)
	}
	if !sel.Matches(labels.Set(ro.Spec.Template.Labels)) {
		t.Errorf("the selector %s does not select the template's labels %v", sel, ro.Spec.Template.Labels)
	}
	// The arm label that the publishers read: canary on the canary's
	// pods, live on the stable ones.
	c := ro.Spec.Strategy.Canary
	if c == nil || c.CanaryMetadata == nil || c.CanaryMetadata.Labels["arm"] != "canary" || c.StableMetadata == nil || c.StableMetadata.Labels["arm"] != "live" {
		t.Errorf("the Rollout does not label its pods arm: canary / arm: live: %+v", c)
	}
}
