package chartcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// clusterBase is the least a cluster-mode release needs: an external NATS
// with JetStream and partitions, one pod per member.
const clusterBase = `mode: cluster
replicaCount: 4
config:
  nats:
    url: nats://nats.nats.svc:4222
    jetstream: true
  cluster:
    partitions: 4
`

// writeValues writes values files into a temporary directory, in order.
func writeValues(t *testing.T, docs ...string) []string {
	t.Helper()
	var files []string
	for _, d := range docs {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestClusterMode renders cluster mode with variants of clusterBase, runs
// every check of TestRender on them and counts the objects of each kind: a
// StatefulSet and never a Deployment, the headless Service next to the
// optional one, the PodDisruptionBudget unless disabled.
func TestClusterMode(t *testing.T) {
	cases := []struct {
		name   string
		values string // merged over clusterBase
		kinds  map[string]int
	}{
		{"members default to partitions", "", map[string]int{"StatefulSet": 1, "Deployment": 0, "Service": 2, "PodDisruptionBudget": 1, "ServiceAccount": 0}},
		{"one standby per member", "replicaCount: 4\nconfig:\n  cluster:\n    members: 2\n    gold: all\n", map[string]int{"StatefulSet": 1, "Deployment": 0, "Service": 2, "PodDisruptionBudget": 1}},
		{"own ServiceAccount", "serviceAccount:\n  create: true\n", map[string]int{"StatefulSet": 1, "ServiceAccount": 1}},
		{"one copy of each stream and bucket", "config:\n  nats:\n    replicas: 1\n", map[string]int{"StatefulSet": 1}},
		{"no Service and no budget", "service:\n  enabled: false\npodDisruptionBudget:\n  enabled: false\n", map[string]int{"StatefulSet": 1, "Deployment": 0, "Service": 1, "PodDisruptionBudget": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := writeValues(t, clusterBase, tc.values)
			out, err := helmTemplate(t, chartDir, files)
			if err != nil {
				t.Fatal(err)
			}
			c := &chartCase{v: loadValues(t, files...), ms: decodeAll(t, out), fullname: release + "-shadoweval"}
			if t.Failed() {
				return
			}
			for kind, want := range tc.kinds {
				if got := len(byKind(c.ms, kind)); got != want {
					t.Errorf("%d %s objects, want %d", got, kind, want)
				}
			}
			c.check(t)
		})
	}
}

// TestClusterNames: with the longest full name the StatefulSet's name still
// leaves room for the controller-revision-hash label of its pods
// ("<name>-<10 characters>", at most 63), and its serviceName is the
// rendered headless Service.
func TestClusterNames(t *testing.T) {
	for _, fullname := range []string{
		strings.Repeat("a", 63),
		strings.Repeat("a", 51) + "-" + strings.Repeat("b", 11), // cut at the dash
	} {
		t.Run(fullname, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate(t, chartDir, writeValues(t, clusterBase, "fullnameOverride: "+fullname+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			ms := decodeAll(t, out)
			sets := byKind(ms, "StatefulSet")
			if len(sets) != 1 {
				t.Fatalf("%d StatefulSets, want 1", len(sets))
			}
			s := sets[0].Obj.(*appsv1.StatefulSet)
			if len(s.Name) > 52 || !strings.HasPrefix(fullname, s.Name) || len(validation.IsDNS1123Label(s.Name)) != 0 {
				t.Errorf("StatefulSet name %q: want a DNS label of at most 52 characters, a prefix of %q", s.Name, fullname)
			}
			h := findManifest(ms, "Service", s.Spec.ServiceName)
			if h == nil {
				t.Fatalf("serviceName %q is not a rendered Service", s.Spec.ServiceName)
			}
			if svc := h.Obj.(*corev1.Service); svc.Spec.ClusterIP != corev1.ClusterIPNone || len(validation.IsDNS1035Label(svc.Name)) != 0 {
				t.Errorf("Service %q: want a headless Service named by a DNS label", svc.Name)
			}
		})
	}
}

// TestClusterConfigCheck: cluster configurations that fit the schema and
// the chart's own checks but not shadoweval render, and `shadoweval config
// check` refuses them naming the key: the cluster section of the rendered
// configuration goes through the sidecar's own validation.
func TestClusterConfigCheck(t *testing.T) {
	cases := []struct {
		name   string
		values string // merged over clusterBase
		want   string
	}{
		{"stale_after too short", "config:\n  cluster:\n    publish_interval: 10s\n    stale_after: 15s\n", "cluster.stale_after"},
		{"more members than partitions", "replicaCount: 5\nconfig:\n  cluster:\n    members: 5\n", "cluster.members"},
		{"subject without key token", "config:\n  subjects:\n    trace: rag.trace.*\n", "subjects.trace"},
		{"bucket shared with gold", "config:\n  gold:\n    kv_bucket: gold\n  cluster:\n    kv_bucket: gold\n", "cluster.kv_bucket"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate(t, chartDir, writeValues(t, clusterBase, tc.values), "--show-only", "templates/configmap.yaml")
			if err != nil {
				t.Fatal(err)
			}
			cm := decodeAll(t, out)[0].Obj.(*corev1.ConfigMap)
			err = configCheck(t, "config.yaml", []byte(cm.Data["config.yaml"]))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("config check: %v; want an error naming %s\n%s", err, tc.want, cm.Data["config.yaml"])
			}
		})
	}
}
