package chartcheck

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// Fixed paths of the chart (templates/_helpers.tpl); the Dockerfile test
// checks the image against the same ones.
const (
	configPath  = "/etc/shadoweval/config.yaml"
	nonRootUser = 65532
)

// TestRender renders the chart with the default values and with every
// ci/*-values.yaml and checks the manifests against the values.
func TestRender(t *testing.T) {
	cases := append([]string{""}, ciValuesFiles(t)...)
	for _, f := range cases {
		name := "defaults"
		if f != "" {
			name = strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var files []string
			if f != "" {
				files = []string{f}
			}
			out, err := helmTemplate(t, chartDir, files)
			if err != nil {
				t.Fatal(err)
			}
			c := &chartCase{v: loadValues(t, files...), ms: decodeAll(t, out)}
			c.fullname = release + "-shadoweval"
			if t.Failed() {
				return
			}
			c.check(t)
		})
	}
}

type chartCase struct {
	v        values
	ms       []manifest
	fullname string
	cfg      values // the rendered configuration
	cfgRaw   string
}

func (c *chartCase) check(t *testing.T) {
	c.checkCommon(t)
	c.checkConfig(t)
	if t.Failed() {
		return
	}
	c.checkGold(t)
	c.checkSecret(t)
	c.checkCluster(t)
	for _, p := range c.pods(t) {
		t.Run(p.where, func(t *testing.T) { c.checkPod(t, p) })
	}
	c.checkService(t)
	c.checkServiceMonitor(t)
	c.checkPrometheusRule(t)
	c.checkDashboard(t)
	c.checkSecretsStayInSecrets(t)
}

// find returns the manifest of kind and name, or nil.
func (c *chartCase) find(kind, name string) *manifest {
	for i := range c.ms {
		if c.ms[i].Kind == kind && c.ms[i].Name == name {
			return &c.ms[i]
		}
	}
	return nil
}

func (c *chartCase) checkCommon(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range c.ms {
		key := m.Kind + "/" + m.Name
		if seen[key] {
			t.Errorf("%s rendered twice", key)
		}
		seen[key] = true
		meta := objectMeta(m.Obj)
		wantNS := namespace
		if m.Kind == "ConfigMap" && strings.HasSuffix(m.Name, "-dashboard") && c.v.str("dashboard.namespace") != "" {
			wantNS = c.v.str("dashboard.namespace")
		}
		if meta.ns != wantNS {
			t.Errorf("%s: namespace %q, want %q", key, meta.ns, wantNS)
		}
		for k, want := range map[string]string{
			"app.kubernetes.io/name":       "shadoweval",
			"app.kubernetes.io/instance":   release,
			"app.kubernetes.io/managed-by": "Helm",
		} {
			if meta.labels[k] != want {
				t.Errorf("%s: label %s=%q, want %q", key, k, meta.labels[k], want)
			}
		}
		if cl, ok := c.v.get("commonLabels").(map[string]any); ok {
			for k, want := range cl {
				if meta.labels[k] != want {
					t.Errorf("%s: commonLabels %s=%q missing", key, k, want)
				}
			}
		}
	}
	if c.find("ConfigMap", c.fullname+"-config") == nil {
		t.Fatalf("no ConfigMap %s-config", c.fullname)
	}
}

type metaInfo struct {
	ns     string
	labels map[string]string
}

func objectMeta(obj any) metaInfo {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return metaInfo{o.Namespace, o.Labels}
	case *corev1.Secret:
		return metaInfo{o.Namespace, o.Labels}
	case *corev1.Service:
		return metaInfo{o.Namespace, o.Labels}
	case *corev1.ServiceAccount:
		return metaInfo{o.Namespace, o.Labels}
	case *appsv1.Deployment:
		return metaInfo{o.Namespace, o.Labels}
	case *appsv1.StatefulSet:
		return metaInfo{o.Namespace, o.Labels}
	case *policyv1.PodDisruptionBudget:
		return metaInfo{o.Namespace, o.Labels}
	case *serviceMonitor:
		return metaInfo{o.Namespace, o.Labels}
	case *prometheusRule:
		return metaInfo{o.Namespace, o.Labels}
	}
	return metaInfo{}
}

// checkConfig: the configuration ConfigMap passes `shadoweval config check`
// and holds the chart-owned keys, and no secret.
func (c *chartCase) checkConfig(t *testing.T) {
	cm := c.find("ConfigMap", c.fullname+"-config").Obj.(*corev1.ConfigMap)
	raw, ok := cm.Data["config.yaml"]
	if !ok || len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
		t.Fatalf("ConfigMap %s: want exactly the key config.yaml, got %v", cm.Name, keys(cm.Data))
	}
	if err := configCheck(t, "config.yaml", []byte(raw)); err != nil {
		t.Fatalf("rendered configuration:\n%s\n%v", raw, err)
	}
	c.cfgRaw = raw
	if err := yaml.Unmarshal([]byte(raw), &c.cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := c.cfg.str("gold.file"), path.Join(c.v.str("gold.mountPath"), c.v.str("gold.fileName")); got != want {
		t.Errorf("config gold.file = %q, want %q", got, want)
	}
	if got, want := c.cfg.str("http.listen"), ":"+strconv.Itoa(c.v.integer("containerPort")); got != want {
		t.Errorf("config http.listen = %q, want %q", got, want)
	}
	for _, k := range []string{"nats.user", "nats.password", "nats.token"} {
		if c.cfg.get(k) != nil {
			t.Errorf("config holds %s: secrets never go in a ConfigMap", k)
		}
	}
	if u := c.cfg.str("nats.url"); strings.Contains(u, "@") {
		t.Errorf("config nats.url holds credentials")
	}
	if c.cfg.str("nats.url") == "" {
		if sd := c.cfg.str("nats.store_dir"); !under(sd, c.v.str("data.mountPath")) {
			t.Errorf("embedded NATS: nats.store_dir %q is not under data.mountPath %q", sd, c.v.str("data.mountPath"))
		}
	}
}

func (c *chartCase) checkGold(t *testing.T) {
	gm := c.find("ConfigMap", c.fullname+"-gold")
	external := c.v.str("gold.configMap") != "" || c.v.str("gold.existingClaim") != "" || c.v.get("gold.volume") != nil && len(c.v.get("gold.volume").(map[string]any)) > 0
	if external != (gm == nil) {
		t.Fatalf("gold ConfigMap rendered = %v with an external gold source = %v", gm != nil, external)
	}
	if gm != nil {
		data := gm.Obj.(*corev1.ConfigMap).Data
		if got, want := data[c.v.str("gold.fileName")], c.v.str("gold.inline"); got != want || len(data) != 1 {
			t.Errorf("gold ConfigMap data %q, want {%q: %q}", data, c.v.str("gold.fileName"), want)
		}
	}
}

// checkSecret: the Secret the chart creates holds exactly the keys in use.
func (c *chartCase) checkSecret(t *testing.T) {
	want := map[string]string{}
	// The chart escapes a space as %20, url.QueryEscape as +.
	escape := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	if m := c.v.str("nats.auth.method"); m != "none" && c.v.str("nats.auth.existingSecret") == "" {
		k := func(name string) string { return c.v.str("nats.auth.secretKeys." + name) }
		switch m {
		case "userPassword":
			want[k("user")] = escape(c.v.str("nats.auth.user"))
			want[k("password")] = escape(c.v.str("nats.auth.password"))
		case "token":
			want[k("token")] = escape(c.v.str("nats.auth.token"))
		case "nkey":
			want[k("nkeySeed")] = c.v.str("nats.auth.nkeySeed")
		case "creds":
			want[k("creds")] = c.v.str("nats.auth.creds")
		}
	}
	if c.v.boolean("nats.tls.enabled") && c.v.str("nats.tls.existingSecret") == "" {
		want[c.v.str("nats.tls.secretKeys.ca")] = c.v.str("nats.tls.ca")
		if c.v.boolean("nats.tls.clientCertificate") {
			want[c.v.str("nats.tls.secretKeys.cert")] = c.v.str("nats.tls.cert")
			want[c.v.str("nats.tls.secretKeys.key")] = c.v.str("nats.tls.key")
		}
	}
	if c.v.boolean("adminToken.enabled") && c.v.str("adminToken.existingSecret") == "" {
		want[c.v.str("adminToken.secretKey")] = c.v.str("adminToken.value")
	}
	secrets := byKind(c.ms, "Secret")
	if len(want) == 0 {
		if len(secrets) != 0 {
			t.Errorf("a Secret is rendered with no credentials to hold")
		}
		return
	}
	if len(secrets) != 1 || secrets[0].Name != c.fullname {
		t.Fatalf("want one Secret %s, got %d", c.fullname, len(secrets))
	}
	got := map[string]string{}
	for k, b := range secrets[0].Obj.(*corev1.Secret).Data {
		got[k] = string(b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Secret data %q, want %q", got, want)
	}
}

// podUnderTest is a pod spec that runs shadoweval: the Deployment's, the
// StatefulSet's, or in sidecar mode the one of the rendered Deployment patch.
type podUnderTest struct {
	where       string
	spec        corev1.PodSpec
	annotations map[string]string
	ownPod      bool // the chart's own Deployment or StatefulSet (pod securityContext, labels)
	labels      map[string]string
}

func (c *chartCase) pods(t *testing.T) []podUnderTest {
	deps := byKind(c.ms, "Deployment")
	sets := byKind(c.ms, "StatefulSet")
	switch c.v.str("mode") {
	case "deployment":
		if len(deps) != 1 || deps[0].Name != c.fullname || len(sets) != 0 {
			t.Fatalf("deployment mode: want one Deployment %s and no StatefulSet, got %d and %d", c.fullname, len(deps), len(sets))
		}
		d := deps[0].Obj.(*appsv1.Deployment)
		c.checkWorkload(t, "Deployment", d.Spec.Replicas, d.Spec.Selector, d.Spec.Template)
		if c.v.str("data.existingClaim") != "" && d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("data on a claim: want the Recreate strategy, got %q", d.Spec.Strategy.Type)
		}
		return []podUnderTest{{where: "Deployment", spec: d.Spec.Template.Spec, annotations: d.Spec.Template.Annotations, ownPod: true, labels: d.Spec.Template.Labels}}
	case "cluster":
		if len(deps) != 0 {
			t.Errorf("cluster mode renders a Deployment")
		}
		if len(sets) != 1 || sets[0].Name != c.fullname {
			t.Fatalf("cluster mode: want one StatefulSet %s, got %d", c.fullname, len(sets))
		}
		s := sets[0].Obj.(*appsv1.StatefulSet)
		c.checkWorkload(t, "StatefulSet", s.Spec.Replicas, s.Spec.Selector, s.Spec.Template)
		if s.Spec.ServiceName != c.fullname+"-headless" {
			t.Errorf("StatefulSet serviceName %q, want the headless Service %s-headless", s.Spec.ServiceName, c.fullname)
		}
		if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			t.Errorf("StatefulSet podManagementPolicy %q, want Parallel", s.Spec.PodManagementPolicy)
		}
		if len(s.Spec.VolumeClaimTemplates) != 0 {
			t.Errorf("StatefulSet has volumeClaimTemplates: the cluster's state lives in NATS")
		}
		return []podUnderTest{{where: "StatefulSet", spec: s.Spec.Template.Spec, annotations: s.Spec.Template.Annotations, ownPod: true, labels: s.Spec.Template.Labels}}
	}
	if len(deps) != 0 || len(sets) != 0 {
		t.Fatalf("sidecar mode renders a Deployment or a StatefulSet")
	}
	if byKind(c.ms, "ServiceAccount") != nil {
		t.Errorf("sidecar mode renders a ServiceAccount")
	}
	if !c.v.boolean("sidecar.specConfigMap") {
		return nil
	}
	m := c.find("ConfigMap", c.fullname+"-sidecar")
	if m == nil {
		t.Fatalf("sidecar mode: no ConfigMap %s-sidecar", c.fullname)
	}
	data := m.Obj.(*corev1.ConfigMap).Data
	var containers []corev1.Container
	var volumes []corev1.Volume
	var patch appsv1.Deployment
	for key, into := range map[string]any{"container.yaml": &containers, "volumes.yaml": &volumes, "patch.yaml": &patch} {
		if err := strictYAML([]byte(data[key]), into); err != nil {
			t.Fatalf("sidecar ConfigMap %s: %v\n%s", key, err, data[key])
		}
	}
	ps := patch.Spec.Template.Spec
	if !reflect.DeepEqual(ps.Containers, containers) || !reflect.DeepEqual(ps.Volumes, volumes) {
		t.Errorf("patch.yaml does not hold container.yaml and volumes.yaml")
	}
	if len(containers) != 1 {
		t.Fatalf("container.yaml: want one container, got %d", len(containers))
	}
	return []podUnderTest{{where: "sidecar patch", spec: ps, annotations: patch.Spec.Template.Annotations}}
}

// checkWorkload: the chart's own Deployment or StatefulSet runs replicaCount
// pods and selects its own pod template.
func (c *chartCase) checkWorkload(t *testing.T, kind string, replicas *int32, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	if replicas == nil || int(*replicas) != c.v.integer("replicaCount") {
		t.Errorf("%s replicas %v, want %d", kind, replicas, c.v.integer("replicaCount"))
	}
	if !selects(t, sel, tmpl.Labels) {
		t.Errorf("%s selector %v does not match the pod labels %v", kind, sel, tmpl.Labels)
	}
}

// selects reports whether a non-empty label selector matches labels.
func selects(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Errorf("selector %v: %v", sel, err)
		return false
	}
	return s.Matches(labels.Set(l))
}

// ownPodLabels are the labels of the chart's own pods (Deployment or
// StatefulSet), nil in sidecar mode.
func (c *chartCase) ownPodLabels() map[string]string {
	if m := c.find("Deployment", c.fullname); m != nil {
		return m.Obj.(*appsv1.Deployment).Spec.Template.Labels
	}
	if m := c.find("StatefulSet", c.fullname); m != nil {
		return m.Obj.(*appsv1.StatefulSet).Spec.Template.Labels
	}
	return nil
}

// checkCluster: cluster mode's configuration suits pods that share one
// ConfigMap, and the StatefulSet comes with its headless Service and the
// PodDisruptionBudget; the other modes render none of these.
func (c *chartCase) checkCluster(t *testing.T) {
	headless := c.find("Service", c.fullname+"-headless")
	pdbs := byKind(c.ms, "PodDisruptionBudget")
	given := c.v.get("config.nats.replicas")
	if c.v.str("mode") != "cluster" {
		if headless != nil || len(pdbs) != 0 || len(byKind(c.ms, "StatefulSet")) != 0 {
			t.Errorf("mode %s renders a StatefulSet, its headless Service or a PodDisruptionBudget", c.v.str("mode"))
		}
		if got := c.cfg.get("nats.replicas"); fmt.Sprint(got) != fmt.Sprint(given) {
			t.Errorf("mode %s: config nats.replicas %v, values give %v: the chart sets it in mode cluster only", c.v.str("mode"), got, given)
		}
		return
	}
	// A scaled-out fleet's stream and buckets outlive a lost NATS server.
	if want := cmp.Or(c.v.integer("config.nats.replicas"), 3); c.cfg.integer("nats.replicas") != want {
		t.Errorf("cluster mode: config nats.replicas %v, want %d", c.cfg.get("nats.replicas"), want)
	}
	partitions := c.cfg.integer("cluster.partitions")
	if partitions <= 0 {
		t.Errorf("config cluster.partitions = %d, want > 0 in cluster mode", partitions)
	}
	if c.cfg.str("nats.url") == "" || !c.cfg.boolean("nats.jetstream") {
		t.Errorf("config nats.url %q, nats.jetstream %v: cluster mode needs an external NATS with JetStream", c.cfg.str("nats.url"), c.cfg.get("nats.jetstream"))
	}
	if c.cfg.get("cluster.member") != nil {
		t.Errorf("config sets cluster.member: every pod would be that member")
	}
	members := cmp.Or(c.cfg.integer("cluster.members"), partitions)
	if c.v.integer("replicaCount") < members {
		t.Errorf("replicaCount %d < %d members: partitions without a consumer", c.v.integer("replicaCount"), members)
	}
	pods := c.ownPodLabels()
	if headless == nil {
		t.Fatalf("cluster mode: no headless Service %s-headless", c.fullname)
	}
	svc := headless.Obj.(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s: clusterIP %q, want None", svc.Name, svc.Spec.ClusterIP)
	}
	if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pods) {
		t.Errorf("Service %s selector %v does not select the StatefulSet's pods %v", svc.Name, svc.Spec.Selector, pods)
	}
	if !c.v.boolean("podDisruptionBudget.enabled") {
		if len(pdbs) != 0 {
			t.Errorf("podDisruptionBudget.enabled false, but one is rendered")
		}
		return
	}
	if len(pdbs) != 1 || pdbs[0].Name != c.fullname {
		t.Fatalf("want one PodDisruptionBudget %s, got %d", c.fullname, len(pdbs))
	}
	pdb := pdbs[0].Obj.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, minAvailable %v: want maxUnavailable 1 only", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
	if !selects(t, pdb.Spec.Selector, pods) {
		t.Errorf("PodDisruptionBudget selector %v does not select the StatefulSet's pods %v", pdb.Spec.Selector, pods)
	}
}

func (c *chartCase) checkPod(t *testing.T, p podUnderTest) {
	checkPod(t, c.v, c.ms, c.cfg, c.cfgRaw, c.fullname, p)
}

// checkPod checks the shadoweval container of a pod spec and its volumes
// against the values, the rendered objects (ms) and the configuration.
func checkPod(t *testing.T, v values, ms []manifest, cfg values, cfgRaw, fullname string, p podUnderTest) {
	t.Helper()
	name := v.str("sidecar.containerName")
	i := slices.IndexFunc(p.spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q", name)
	}
	ctr := p.spec.Containers[i]

	// Image.
	wantImage := v.str("image.repository") + ":" + cmpOr(v.str("image.tag"), chartAppVersion(t))
	if d := v.str("image.digest"); d != "" {
		wantImage = v.str("image.repository") + "@" + d
	}
	if ctr.Image != wantImage {
		t.Errorf("image %q, want %q", ctr.Image, wantImage)
	}

	// Arguments: the Dockerfile's CMD, with the chart's config path.
	if len(ctr.Command) != 0 {
		t.Errorf("command %q: the image's ENTRYPOINT runs /shadoweval", ctr.Command)
	}
	if len(ctr.Args) < 3 || !slices.Equal(ctr.Args[:3], []string{"run", "--config", configPath}) {
		t.Errorf("args %q, want run --config %s ...", ctr.Args, configPath)
	}

	// Port and probes.
	port := v.integer("containerPort")
	if len(ctr.Ports) != 1 || ctr.Ports[0].Name != "http-metrics" || int(ctr.Ports[0].ContainerPort) != port || ctr.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v, want one TCP port http-metrics %d", ctr.Ports, port)
	}
	checkProbe := func(what string, pr *corev1.Probe, wantPath string, required bool) {
		if pr == nil {
			if required {
				t.Errorf("no %s probe", what)
			}
			return
		}
		h := pr.HTTPGet
		if h == nil || h.Path != wantPath || h.Port != intstr.FromString("http-metrics") || (h.Scheme != "" && h.Scheme != corev1.URISchemeHTTP) {
			t.Errorf("%s probe %+v, want GET %s on port http-metrics", what, pr.ProbeHandler, wantPath)
		}
	}
	checkProbe("liveness", ctr.LivenessProbe, "/-/healthy", true)
	checkProbe("readiness", ctr.ReadinessProbe, "/-/ready", true)
	checkProbe("startup", ctr.StartupProbe, "/-/healthy", v.boolean("startupProbe.enabled"))
	if !v.boolean("startupProbe.enabled") && ctr.StartupProbe != nil {
		t.Errorf("startup probe rendered with startupProbe.enabled false")
	}

	// Non-root, read-only, no capabilities.
	sc := ctr.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("no container securityContext")
	default:
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("securityContext.runAsNonRoot is not true")
		}
		if sc.RunAsUser == nil || *sc.RunAsUser != nonRootUser || sc.RunAsGroup == nil || *sc.RunAsGroup != nonRootUser {
			t.Errorf("securityContext runAsUser/runAsGroup = %v/%v, want %d (the image's USER)", sc.RunAsUser, sc.RunAsGroup, nonRootUser)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("securityContext.readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("securityContext.allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("privileged")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
			t.Errorf("capabilities %+v, want drop [ALL] and no add", sc.Capabilities)
		}
	}
	if p.ownPod {
		psc := p.spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
		}
		if p.spec.AutomountServiceAccountToken == nil || *p.spec.AutomountServiceAccountToken != v.boolean("serviceAccount.automountServiceAccountToken") {
			t.Errorf("automountServiceAccountToken %v", p.spec.AutomountServiceAccountToken)
		}
		wantSA := "default"
		if v.boolean("serviceAccount.create") {
			wantSA = fullname
			if findManifest(ms, "ServiceAccount", fullname) == nil {
				t.Errorf("serviceAccount.create: no ServiceAccount %s", fullname)
			}
		}
		if p.spec.ServiceAccountName != wantSA {
			t.Errorf("serviceAccountName %q, want %q", p.spec.ServiceAccountName, wantSA)
		}
	}

	// The configuration checksum annotation rolls the pod on a change.
	sum := sha256.Sum256([]byte(strings.TrimSuffix(cfgRaw, "\n")))
	if got := p.annotations["checksum/shadoweval-config"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("annotation checksum/shadoweval-config = %q, want the sha256 of the rendered config.yaml", got)
	}

	// Volumes: every mount has its volume, and every volume its source.
	vols := map[string]corev1.Volume{}
	for _, vol := range p.spec.Volumes {
		if _, dup := vols[vol.Name]; dup {
			t.Errorf("volume %s twice", vol.Name)
		}
		vols[vol.Name] = vol
	}
	for _, m := range ctr.VolumeMounts {
		vol, ok := vols[m.Name]
		if !ok {
			t.Errorf("mount %s: no volume %s", m.MountPath, m.Name)
			continue
		}
		checkVolumeSource(t, v, ms, fullname, vol)
	}
	resolve := func(file string) (corev1.VolumeMount, corev1.Volume, string, bool) {
		best := -1
		for i, m := range ctr.VolumeMounts {
			if m.SubPath != "" {
				if m.MountPath == file {
					return m, vols[m.Name], m.SubPath, true
				}
				continue
			}
			if under(file, m.MountPath) && (best < 0 || len(m.MountPath) > len(ctr.VolumeMounts[best].MountPath)) {
				best = i
			}
		}
		if best < 0 {
			return corev1.VolumeMount{}, corev1.Volume{}, "", false
		}
		m := ctr.VolumeMounts[best]
		rel := strings.TrimPrefix(strings.TrimPrefix(file, m.MountPath), "/")
		return m, vols[m.Name], rel, true
	}

	// The config file comes from the config ConfigMap.
	if m, vol, rel, ok := resolve(configPath); !ok || vol.ConfigMap == nil || vol.ConfigMap.Name != fullname+"-config" || rel != "config.yaml" || !m.ReadOnly {
		t.Errorf("%s is not mounted read-only from ConfigMap %s-config key config.yaml", configPath, fullname)
	}
	// Every file the configuration names is mounted, the secret ones from
	// Secret volumes holding that key.
	files := []struct {
		key    string
		secret bool
	}{
		{"gold.file", false}, {"nats.creds_file", true}, {"nats.nkey_seed_file", true},
		{"nats.tls.ca_file", false}, {"nats.tls.cert_file", false}, {"nats.tls.key_file", true},
		{"http.admin_token_file", true},
	}
	for _, f := range files {
		file := cfg.str(f.key)
		if file == "" {
			continue
		}
		m, vol, rel, ok := resolve(file)
		if !ok {
			t.Errorf("config %s = %s: not on any volume mount", f.key, file)
			continue
		}
		if !m.ReadOnly {
			t.Errorf("config %s = %s: mount %s is not read-only", f.key, file, m.MountPath)
		}
		if f.secret && vol.Secret == nil {
			t.Errorf("config %s = %s: mounted from volume %s, which is not a Secret", f.key, file, vol.Name)
		}
		if items := volumeItems(vol); items != nil && !slices.Contains(items, rel) {
			t.Errorf("config %s = %s: volume %s has no item %q (items %q)", f.key, file, vol.Name, rel, items)
		}
	}
	// Writable directories: the JetStream store and /tmp.
	for _, dir := range []string{cfg.str("nats.store_dir"), "/tmp"} {
		if dir == "" {
			continue
		}
		m, vol, _, ok := resolve(dir)
		if !ok || m.ReadOnly || (vol.EmptyDir == nil && vol.PersistentVolumeClaim == nil) {
			t.Errorf("%s is not on a writable emptyDir or claim", dir)
		}
	}
	if gm, _, _, ok := resolve(cfg.str("gold.file")); ok && gm.SubPath != "" {
		t.Errorf("the gold set is mounted with subPath: Kubernetes would never update it")
	}

	// Environment: secrets only by reference.
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
		if strings.HasPrefix(e.Name, "SHADOWEVAL_NATS_") {
			ref := e.ValueFrom
			if e.Value != "" || ref == nil || ref.SecretKeyRef == nil {
				t.Errorf("env %s is not from a Secret", e.Name)
				continue
			}
			checkSecretRef(t, v, ms, fullname, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
		}
	}
	checkNATSURLFlag(t, v, cfg, ctr.Args, env)
}

// checkNATSURLFlag: with user/password or token auth, --nats-url holds the
// configured servers with $(VAR) references to Secret-backed variables.
func checkNATSURLFlag(t *testing.T, v values, cfg values, args []string, env map[string]corev1.EnvVar) {
	t.Helper()
	var flag string
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, "--nats-url="); ok {
			flag = s
		}
	}
	method := v.str("nats.auth.method")
	if method != "userPassword" && method != "token" {
		if flag != "" {
			t.Errorf("--nats-url with auth method %s", method)
		}
		return
	}
	want := []string{"SHADOWEVAL_NATS_TOKEN"}
	if method == "userPassword" {
		want = []string{"SHADOWEVAL_NATS_USER", "SHADOWEVAL_NATS_PASSWORD"}
	}
	var refs []string
	for _, m := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(flag, -1) {
		refs = append(refs, m[1])
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)
	slices.Sort(want)
	if !slices.Equal(refs, want) {
		t.Errorf("--nats-url references %q, want %q", refs, want)
	}
	for _, r := range refs {
		if e, ok := env[r]; !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("--nats-url references $(%s), which is not a Secret-backed variable", r)
		}
	}
	// Expanded with sample credentials, the flag names the configured servers.
	expanded := regexp.MustCompile(`\$\([A-Z_]+\)`).ReplaceAllString(flag, "x")
	var hosts, wantHosts []string
	for _, s := range strings.Split(expanded, ",") {
		u, err := url.Parse(s)
		if err != nil || u.User == nil {
			t.Errorf("--nats-url server %q: %v", s, err)
			continue
		}
		hosts = append(hosts, u.Scheme+"://"+u.Host)
	}
	for _, s := range strings.Split(cfg.str("nats.url"), ",") {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, _ := url.Parse(s)
		wantHosts = append(wantHosts, u.Scheme+"://"+u.Host)
	}
	if !slices.Equal(hosts, wantHosts) {
		t.Errorf("--nats-url servers %q, config nats.url servers %q", hosts, wantHosts)
	}
}

func volumeItems(vol corev1.Volume) []string {
	var items []corev1.KeyToPath
	switch {
	case vol.ConfigMap != nil:
		items = vol.ConfigMap.Items
	case vol.Secret != nil:
		items = vol.Secret.Items
	default:
		return nil
	}
	if items == nil {
		return nil
	}
	paths := []string{}
	for _, it := range items {
		paths = append(paths, it.Path)
	}
	return paths
}

// checkVolumeSource: a ConfigMap or Secret volume names a rendered object
// holding its items, or one the values name; claims and other sources come
// from the values.
func checkVolumeSource(t *testing.T, v values, ms []manifest, fullname string, vol corev1.Volume) {
	t.Helper()
	switch {
	case vol.ConfigMap != nil:
		if vol.ConfigMap.Name == v.str("gold.configMap") {
			return
		}
		m := findManifest(ms, "ConfigMap", vol.ConfigMap.Name)
		if m == nil {
			t.Errorf("volume %s: ConfigMap %s is not rendered", vol.Name, vol.ConfigMap.Name)
			return
		}
		for _, it := range vol.ConfigMap.Items {
			if _, ok := m.Obj.(*corev1.ConfigMap).Data[it.Key]; !ok {
				t.Errorf("volume %s: ConfigMap %s has no key %s", vol.Name, vol.ConfigMap.Name, it.Key)
			}
		}
	case vol.Secret != nil:
		for _, it := range vol.Secret.Items {
			checkSecretRef(t, v, ms, fullname, vol.Secret.SecretName, it.Key)
		}
		if vol.Secret.DefaultMode == nil || *vol.Secret.DefaultMode&0o022 != 0 {
			t.Errorf("volume %s: Secret files must not be writable by group or others (defaultMode %#o)", vol.Name, ptrOr(vol.Secret.DefaultMode))
		}
	case vol.PersistentVolumeClaim != nil:
		if n := vol.PersistentVolumeClaim.ClaimName; n != v.str("gold.existingClaim") && n != v.str("data.existingClaim") {
			t.Errorf("volume %s: claim %s is not in the values", vol.Name, n)
		}
	case vol.EmptyDir != nil:
	default:
		if vol.Name != "shadoweval-gold" {
			t.Errorf("volume %s: unexpected source", vol.Name)
		}
	}
}

// checkSecretRef: a reference to a Secret names an existingSecret of the
// values, or the rendered Secret holding that key.
func checkSecretRef(t *testing.T, v values, ms []manifest, fullname, name, key string) {
	t.Helper()
	for _, p := range []string{"nats.auth.existingSecret", "nats.tls.existingSecret", "adminToken.existingSecret"} {
		if name != "" && name == v.str(p) {
			return
		}
	}
	m := findManifest(ms, "Secret", name)
	if m == nil || name != fullname {
		t.Errorf("Secret %s is neither rendered nor an existingSecret", name)
		return
	}
	if _, ok := m.Obj.(*corev1.Secret).Data[key]; !ok {
		t.Errorf("Secret %s has no key %s", name, key)
	}
}

func findManifest(ms []manifest, kind, name string) *manifest {
	for i := range ms {
		if ms[i].Kind == kind && ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

func (c *chartCase) checkService(t *testing.T) {
	// Cluster mode's headless Service is checked by checkCluster.
	svcs := slices.DeleteFunc(byKind(c.ms, "Service"), func(m manifest) bool { return m.Name == c.fullname+"-headless" })
	if !c.v.boolean("service.enabled") {
		if len(svcs) != 0 {
			t.Errorf("service.enabled false, but a Service is rendered")
		}
		return
	}
	if len(svcs) != 1 || svcs[0].Name != c.fullname {
		t.Fatalf("want one Service %s, got %d", c.fullname, len(svcs))
	}
	svc := svcs[0].Obj.(*corev1.Service)
	ports := svc.Spec.Ports
	if len(ports) != 1 || ports[0].Name != "http-metrics" || int(ports[0].Port) != c.v.integer("service.port") || ports[0].TargetPort != intstr.FromString("http-metrics") {
		t.Errorf("Service ports %+v, want http-metrics %d -> http-metrics", ports, c.v.integer("service.port"))
	}
	// In cluster mode it selects every pod: any of them answers for the
	// whole cluster.
	var podLabels map[string]string
	if c.v.str("mode") != "sidecar" {
		podLabels = c.ownPodLabels()
	} else {
		podLabels = map[string]string{}
		for k, v := range c.v.get("sidecar.podSelector").(map[string]any) {
			podLabels[k] = v.(string)
		}
		if len(svc.Spec.Selector) != len(podLabels) {
			t.Errorf("Service selector %v, want sidecar.podSelector %v", svc.Spec.Selector, podLabels)
		}
	}
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("Service without selector")
	}
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("Service selector %s=%s does not select the pods (%v)", k, v, podLabels)
		}
	}
}

func (c *chartCase) checkServiceMonitor(t *testing.T) {
	sms := byKind(c.ms, "ServiceMonitor")
	if !c.v.boolean("serviceMonitor.enabled") {
		if len(sms) != 0 {
			t.Errorf("serviceMonitor.enabled false, but one is rendered")
		}
		return
	}
	if len(sms) != 1 {
		t.Fatalf("want one ServiceMonitor, got %d", len(sms))
	}
	sm := sms[0].Obj.(*serviceMonitor)
	svc := c.find("Service", c.fullname).Obj.(*corev1.Service)
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not select the Service", k, v)
		}
	}
	if len(sm.Spec.Selector.MatchLabels) == 0 {
		t.Errorf("ServiceMonitor selects every Service")
	}
	if !selects(t, &sm.Spec.Selector, svc.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v", sm.Spec.Selector, svc.Labels)
	}
	if h := c.find("Service", c.fullname+"-headless"); h != nil && selects(t, &sm.Spec.Selector, h.Obj.(*corev1.Service).Labels) {
		t.Errorf("ServiceMonitor selects the headless Service too: every pod would be scraped twice")
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, namespace) {
		t.Errorf("ServiceMonitor namespaceSelector %v misses %s", sm.Spec.NamespaceSelector, namespace)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http-metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port http-metrics path /metrics", sm.Spec.Endpoints)
	}
	if l, ok := c.v.get("serviceMonitor.labels").(map[string]any); ok {
		for k, v := range l {
			if sm.Labels[k] != v {
				t.Errorf("ServiceMonitor misses label %s=%v", k, v)
			}
		}
	}
}

func (c *chartCase) checkPrometheusRule(t *testing.T) {
	prs := byKind(c.ms, "PrometheusRule")
	if !c.v.boolean("prometheusRule.enabled") {
		if len(prs) != 0 {
			t.Errorf("prometheusRule.enabled false, but one is rendered")
		}
		return
	}
	if len(prs) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(prs))
	}
	pr := prs[0].Obj.(*prometheusRule)
	if len(pr.Spec.Groups) == 0 {
		t.Fatalf("PrometheusRule without groups")
	}
	var alerts []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: want alert, expr, label severity and annotation summary", r)
			}
			if gate, ok := r.Labels["gate"]; ok {
				if gate != r.Alert {
					t.Errorf("rule %s: label gate %q, want the alert's name", r.Alert, gate)
				}
				alerts = append(alerts, r.Alert)
			}
		}
	}
	// One rule labelled gate per configured gate: the shipped ones from
	// files/shadoweval-rules.yaml, or the configured ones (other rules, such
	// as the delivery ones of the shipped file, may come along).
	var gates []string
	if g, ok := c.v.get("config.gates").([]any); ok && len(g) > 0 {
		for _, x := range g {
			gates = append(gates, x.(map[string]any)["name"].(string))
		}
	} else {
		gates = defaultGateNames(t)
	}
	slices.Sort(alerts)
	slices.Sort(gates)
	if !slices.Equal(alerts, gates) {
		t.Errorf("PrometheusRule alerts %q, want one per gate %q", alerts, gates)
	}
	promtoolCheckRules(t, pr.Spec)
}

// defaultGateNames lists the shipped gates, from `shadoweval config defaults`.
func defaultGateNames(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(shadoweval(t), "config", "defaults").Output()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Gates []struct {
			Name string `json:"name"`
		} `json:"gates"`
	}
	if err := yaml.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range d.Gates {
		names = append(names, g.Name)
	}
	return names
}

// promtoolCheckRules runs `promtool check rules` on the rule groups; without
// promtool it skips, unless $CI is set.
func promtoolCheckRules(t *testing.T, spec prometheusRuleSpec) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not installed (Debian package prometheus) and CI is set")
		}
		t.Log("promtool not installed: `promtool check rules` skipped")
		return
	}
	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

// dashboardMetrics are the series the dashboard must chart (the issue's
// list: precision, chr, under/over refusal, recall@k, ΔS median/p90, λ
// convergence and flip rate per arm, events by outcome, rejected by reason,
// gate states).
var dashboardMetrics = []string{
	`metric=~"precision"`, `metric=~"chr"`, `metric=~"under_refusal"`, `metric=~"over_refusal"`,
	`metric=~"recall_at_[0-9]+"`, `metric=~"delta_s_median|delta_s_p90"`,
	`metric=~"lambda_convergence|lambda_flip_rate"`,
	`rate(shadoweval_events_total`, `rate(shadoweval_rejected_events_total`, `shadoweval_gate_state`,
	// canary analyses: the verdicts, each check's interval and its limit
	`shadoweval_analysis_verdict`, `shadoweval_analysis_check_estimate`, `shadoweval_analysis_check_lower`,
	`shadoweval_analysis_check_upper`, `shadoweval_analysis_check_limit`,
}

// TestDashboardOutsideTheChart: the dashboard users import into a Grafana
// of their own (dashboards/shadoweval.json) is the chart's, byte for byte.
func TestDashboardOutsideTheChart(t *testing.T) {
	chart, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	standalone, err := os.ReadFile(filepath.Join(repoRoot, "dashboards", "shadoweval.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, standalone) {
		t.Error("dashboards/shadoweval.json differs from charts/shadoweval/files/dashboard.json: copy one onto the other")
	}
	checkDashboardJSON(t, standalone)
}

// TestDashboardQueriesParse: every query of the dashboard, its variables
// given values, is PromQL that Prometheus parses (promtool check rules on
// a recording rule per query).
func TestDashboardQueriesParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$namespace", ".*", "$arm", ".*", "$window", "5m", "$analysis", "demo", "$check", "precision",
		"$__rate_interval", "1m", "$__interval", "1m")
	group := ruleGroup{Name: "dashboard"}
	for i, p := range d.Panels {
		for j, tg := range p.Targets {
			group.Rules = append(group.Rules, rule{Record: fmt.Sprintf("dashboard:panel%d:%d", i, j), Expr: vars.Replace(tg.Expr)})
		}
	}
	if len(group.Rules) == 0 {
		t.Fatal("the dashboard has no query")
	}
	promtoolCheckRules(t, prometheusRuleSpec{Groups: []ruleGroup{group}})
}

func (c *chartCase) checkDashboard(t *testing.T) {
	name := c.fullname + "-dashboard"
	m := c.find("ConfigMap", name)
	if !c.v.boolean("dashboard.enabled") {
		if m != nil {
			t.Errorf("dashboard.enabled false, but %s is rendered", name)
		}
		return
	}
	if m == nil {
		t.Fatalf("no ConfigMap %s", name)
	}
	cm := m.Obj.(*corev1.ConfigMap)
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap without label grafana_dashboard: \"1\"")
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["shadoweval.json"]; got != strings.TrimSuffix(string(raw), "\n") {
		t.Errorf("dashboard ConfigMap does not hold files/dashboard.json as it is")
	}
	checkDashboardJSON(t, raw)
}

func checkDashboardJSON(t *testing.T, raw []byte) {
	t.Helper()
	var d struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("files/dashboard.json: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard without uid or title")
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: unbalanced query %s", p.Title, tg.Expr)
			}
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range dashboardMetrics {
		if !strings.Contains(all, want) {
			t.Errorf("dashboard: no panel queries %s", want)
		}
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, want := range []string{"datasource", "arm", "window", "analysis", "check"} {
		if !slices.Contains(vars, want) {
			t.Errorf("dashboard: no variable $%s", want)
		}
	}
}

// checkSecretsStayInSecrets: no secret of the values, in any encoding,
// appears outside the Secret.
func (c *chartCase) checkSecretsStayInSecrets(t *testing.T) {
	var secrets []string
	for _, p := range []string{"nats.auth.password", "nats.auth.token", "nats.auth.nkeySeed", "nats.auth.creds", "nats.tls.key", "adminToken.value"} {
		if s := c.v.str(p); s != "" {
			secrets = append(secrets, s)
		}
	}
	for _, m := range c.ms {
		if m.Kind == "Secret" {
			continue
		}
		for _, s := range secrets {
			for _, enc := range []string{s, strings.TrimSpace(s), url.QueryEscape(s), strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), base64.StdEncoding.EncodeToString([]byte(s))} {
				if enc != "" && bytes.Contains(m.Raw, []byte(enc)) {
					t.Errorf("%s %s holds a secret of the values", m.Kind, m.Name)
				}
			}
			// Multi-line secrets (PEM, creds files): no line of them either.
			for _, line := range strings.Split(s, "\n") {
				if len(line) >= 16 && !strings.HasPrefix(line, "-----") && bytes.Contains(m.Raw, []byte(line)) {
					t.Errorf("%s %s holds a line of a secret of the values", m.Kind, m.Name)
				}
			}
		}
	}
}

// chartAppVersion reads appVersion from Chart.yaml.
func chartAppVersion(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

func under(p, dir string) bool {
	if p == "" || dir == "" {
		return false
	}
	dir = strings.TrimSuffix(dir, "/")
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func keys[V any](m map[string]V) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// TestAppVersion: the sidecar templates' built-in app version (they have no
// .Chart) is Chart.yaml's appVersion.
func TestAppVersion(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`define "shadoweval.appVersion" -}}([^{]*){{`).FindSubmatch(data)
	if m == nil {
		t.Fatal(`no define "shadoweval.appVersion" in _helpers.tpl`)
	}
	if got, want := string(m[1]), chartAppVersion(t); got != want {
		t.Errorf("shadoweval.appVersion %q, Chart.yaml appVersion %q", got, want)
	}
}

// TestRenderRefuses: values the chart must refuse, with a message naming
// the value.
func TestRenderRefuses(t *testing.T) {
	cases := []struct {
		name   string
		values string
		want   string
	}{
		{"bad mode", `mode: daemonset`, "value must be one of 'deployment', 'cluster', 'sidecar'"},
		{"unknown value", `replicas: 2`, "additional properties 'replicas' not allowed"},
		{"unknown config key", "config:\n  nats:\n    jetstrem: true", "additional properties 'jetstrem' not allowed"},
		{"password in config", "config:\n  nats:\n    url: nats://n:4222\n    password: hunter2", "additional properties 'password' not allowed"},
		{"token in config", "config:\n  nats:\n    token: t0k", "additional properties 'token' not allowed"},
		{"credentials in the URL", "config:\n  nats:\n    url: nats://u:pw@n:4222", "/config/nats/url"},
		{"gold file in config", "config:\n  gold:\n    file: /x.jsonl", "additional properties 'file' not allowed"},
		{"listen in config", "config:\n  http:\n    listen: :1", "additional properties 'listen' not allowed"},
		{"bad gate op", "config:\n  gates:\n    - {name: g, metric: precision, op: '=>', threshold: 0.8}", "/config/gates/0/op"},
		{"bad duration", "config:\n  window:\n    max_lateness: 1 minute", "/config/window/max_lateness"},
		{"bad auth method", "nats:\n  auth:\n    method: kerberos", "/nats/auth/method"},
		{"two gold sources", "gold:\n  inline: '{}'\n  configMap: gold", "set one of gold.inline, gold.configMap"},
		{"replicas with embedded NATS", "replicaCount: 2", "replicaCount > 1 needs an external NATS"},
		{"auth without URL", "nats:\n  auth:\n    method: token\n    token: t", "needs config.nats.url"},
		{"token missing", "config:\n  nats:\n    url: nats://n:4222\nnats:\n  auth:\n    method: token", "set nats.auth.token"},
		{"creds missing", "config:\n  nats:\n    url: nats://n:4222\nnats:\n  auth:\n    method: creds", "set nats.auth.creds"},
		{"client cert missing", "config:\n  nats:\n    url: tls://n:4222\nnats:\n  tls:\n    enabled: true\n    clientCertificate: true\n    ca: x", "set nats.tls.cert and nats.tls.key"},
		{"creds file twice", "config:\n  nats:\n    url: nats://n:4222\n    creds_file: /x\nnats:\n  auth:\n    method: creds\n    existingSecret: s", "set by the chart from nats.auth"},
		{"admin token missing", "adminToken:\n  enabled: true", "set adminToken.value"},
		{"sidecar Service without selector", "mode: sidecar", "needs sidecar.podSelector"},
		{"ServiceMonitor without Service", "service:\n  enabled: false\nserviceMonitor:\n  enabled: true", "needs service.enabled"},
		{"custom gates and shipped rules", "config:\n  gates:\n    - {name: g, metric: precision, op: '>=', threshold: 0.8}\nprometheusRule:\n  enabled: true", "shadoweval rules --config"},
		{"mount path clash", "gold:\n  mountPath: /tmp", "must differ"},
		{"gold over the config", "gold:\n  mountPath: /etc/shadoweval", "mount path /etc/shadoweval/config.yaml is inside /etc/shadoweval"},
		{"data inside gold", "gold:\n  mountPath: /srv/gold/\ndata:\n  mountPath: /srv/gold/data", "mount path /srv/gold/data is inside /srv/gold/"},
		{"cluster without NATS URL", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    jetstream: true\n  cluster:\n    partitions: 2", "mode cluster needs config.nats.url"},
		{"cluster without JetStream", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    url: nats://n:4222\n  cluster:\n    partitions: 2", "mode cluster needs config.nats.jetstream: true"},
		{"cluster with JetStream off", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: false\n  cluster:\n    partitions: 2", "mode cluster needs config.nats.jetstream: true"},
		{"cluster without partitions", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: true", "mode cluster needs config.cluster.partitions > 0"},
		{"cluster with 0 partitions", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: true\n  cluster:\n    partitions: 0\n    members: 0", "mode cluster needs config.cluster.partitions > 0"},
		{"cluster with a member", "mode: cluster\nreplicaCount: 2\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: true\n  cluster:\n    partitions: 2\n    member: '1'", "config.cluster.member: leave it out in mode cluster"},
		{"cluster with fewer pods than partitions", "mode: cluster\nreplicaCount: 3\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: true\n  cluster:\n    partitions: 4", "replicaCount (3) is below config.cluster.members (4,"},
		{"cluster with fewer pods than members", "mode: cluster\nreplicaCount: 1\nconfig:\n  nats:\n    url: nats://n:4222\n    jetstream: true\n  cluster:\n    partitions: 4\n    members: 2", "replicaCount (1) is below config.cluster.members (2,"},
		{"partitions in a Deployment", "config:\n  nats:\n    url: nats://n:4222\n    jetstream: true\n  cluster:\n    partitions: 2", "config.cluster.partitions in mode deployment needs config.cluster.member"},
		{"bad cluster gold", "config:\n  cluster:\n    gold: some", "/config/cluster/gold"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate(t, chartDir, writeValues(t, tc.values+"\n"))
			if err == nil {
				t.Fatalf("rendered; want an error with %q\n%s", tc.want, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
		})
	}
}

// TestConfigCheckCatchesWhatTheSchemaCannot: a configuration that fits the
// schema but not shadoweval (a gate on a window that is not configured)
// renders, and `shadoweval config check` refuses it: the check of TestRender
// is not vacuous.
func TestConfigCheckCatchesWhatTheSchemaCannot(t *testing.T) {
	v := "config:\n  gates:\n    - {name: g, metric: precision, op: '>=', threshold: 0.8, window: 2m}\n"
	out, err := helmTemplate(t, chartDir, writeValues(t, v), "--show-only", "templates/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := decodeAll(t, out)[0].Obj.(*corev1.ConfigMap)
	err = configCheck(t, "config.yaml", []byte(cm.Data["config.yaml"]))
	if err == nil || !strings.Contains(err.Error(), "2m") {
		t.Errorf("config check of a gate on an unconfigured window: %v", err)
	}
}

// TestSchemaTakesWhatConfigTakes: a gate without a threshold (shadoweval
// takes 0) renders, and the rendered configuration passes config check:
// the schema asks for no key shadoweval does without.
func TestSchemaTakesWhatConfigTakes(t *testing.T) {
	v := "config:\n  gates:\n    - {name: g, metric: precision, op: '>=', compare_to: live}\n"
	out, err := helmTemplate(t, chartDir, writeValues(t, v), "--show-only", "templates/configmap.yaml")
	if err != nil {
		t.Fatalf("a gate without a threshold: %v", err)
	}
	cm := decodeAll(t, out)[0].Obj.(*corev1.ConfigMap)
	if err := configCheck(t, "config.yaml", []byte(cm.Data["config.yaml"])); err != nil {
		t.Errorf("config check of the rendered gate without a threshold: %v", err)
	}
}

// TestSchemaCoversConfig: the schema of values.config has exactly the keys
// of `shadoweval config defaults`, less those the chart owns (gold.file,
// http.listen) and the secrets it refuses (nats.user, nats.password,
// nats.token).
func TestSchemaCoversConfig(t *testing.T) {
	out, err := exec.Command(shadoweval(t), "config", "defaults").Output()
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(out, &defaults); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	cfgSchema := schema["properties"].(map[string]any)["config"].(map[string]any)
	withheld := []string{"gold.file", "http.listen", "nats.user", "nats.password", "nats.token"}
	want := slices.DeleteFunc(keyPaths("", defaults), func(k string) bool { return slices.Contains(withheld, k) })
	got := schemaPaths("", cfgSchema)
	slices.Sort(want)
	slices.Sort(got)
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("config key %s (shadoweval config defaults) is missing from values.schema.json", k)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("values.schema.json config key %s is not a shadoweval config key", k)
		}
	}
}

// keyPaths lists the leaf key paths of a YAML tree; list items contribute
// the keys of their first item as "list[].key".
func keyPaths(prefix string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for k, sub := range x {
			out = append(out, keyPaths(join(prefix, k), sub)...)
		}
		return out
	case []any:
		if len(x) > 0 {
			if _, ok := x[0].(map[string]any); ok {
				return keyPaths(prefix+"[]", x[0])
			}
		}
	}
	return []string{prefix}
}

func schemaPaths(prefix string, s map[string]any) []string {
	switch s["type"] {
	case "object":
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 {
			return []string{prefix}
		}
		var out []string
		for k, sub := range props {
			out = append(out, schemaPaths(join(prefix, k), sub.(map[string]any))...)
		}
		return out
	case "array":
		if items, ok := s["items"].(map[string]any); ok && items["type"] == "object" {
			return schemaPaths(prefix+"[]", items)
		}
	}
	return []string{prefix}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// TestSidecarInParentChart renders charts/examples/retriever, a chart that
// has this one as a dependency and adds the shadoweval container to its
// own Deployment with the named templates (the README's snippet), and
// checks that pod like the chart's own.
func TestSidecarInParentChart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "retriever")
	if err := copyDir(exampleDir, dir); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(chartDir, filepath.Join(dir, "charts", "shadoweval")); err != nil {
		t.Fatal(err)
	}
	out, err := helmTemplate(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms := decodeAll(t, out)
	if t.Failed() {
		return
	}
	var dep *appsv1.Deployment
	for _, m := range byKind(ms, "Deployment") {
		if d := m.Obj.(*appsv1.Deployment); d.Name == release+"-retriever" {
			dep = d
		} else {
			t.Errorf("unexpected Deployment %s (the subchart is in sidecar mode)", d.Name)
		}
	}
	if dep == nil {
		t.Fatal("no retriever Deployment")
	}
	var names []string
	for _, c := range dep.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"retriever", "shadoweval"}) {
		t.Errorf("containers %q, want retriever and shadoweval", names)
	}
	// The subchart's values as the parent sets them (the parent's
	// values.yaml under shadoweval:).
	pv := loadValuesFrom(t, filepath.Join(exampleDir, "values.yaml"), "shadoweval")
	fullname := release + "-shadoweval"
	cm := findManifest(ms, "ConfigMap", fullname+"-config")
	if cm == nil {
		t.Fatalf("no ConfigMap %s-config from the subchart", fullname)
	}
	raw := cm.Obj.(*corev1.ConfigMap).Data["config.yaml"]
	if err := configCheck(t, "config.yaml", []byte(raw)); err != nil {
		t.Fatal(err)
	}
	var cfg values
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	checkPod(t, pv, ms, cfg, raw, fullname, podUnderTest{where: "retriever", spec: dep.Spec.Template.Spec, annotations: dep.Spec.Template.Annotations})
	// The subchart's Service selects the retriever's pods.
	svc := findManifest(ms, "Service", fullname)
	if svc == nil {
		t.Fatal("no shadoweval Service")
	}
	for k, v := range svc.Obj.(*corev1.Service).Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("shadoweval Service selector %s=%s does not select the retriever's pods", k, v)
		}
	}
	// The README shows the same snippet.
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{{- $sw := dict "Values" .Values.shadoweval "Release" .Release }}`,
		`{{- include "shadoweval.sidecarPodAnnotations" $sw | nindent 8 }}`,
		`{{- include "shadoweval.sidecarContainer" $sw | nindent 8 }}`,
		`{{- include "shadoweval.sidecarVolumes" $sw | nindent 8 }}`,
	} {
		tpl, err := os.ReadFile(filepath.Join(exampleDir, "templates", "deployment.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(tpl, []byte(line)) || !bytes.Contains(readme, []byte(line)) {
			t.Errorf("the README and the example chart do not both show %s", line)
		}
	}
}

// loadValuesFrom merges the chart's defaults with the map under key of a
// parent chart's values file.
func loadValuesFrom(t *testing.T, file, key string) values {
	t.Helper()
	v := loadValues(t)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if sub, ok := m[key].(map[string]any); ok {
		mergeInto(v, sub)
	}
	return v
}

func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestNotes renders NOTES.txt (helm template leaves it out) by turning it
// into a named template of a copy of the chart, for each mode.
func TestNotes(t *testing.T) {
	notes, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "shadoweval")
	if err := copyDir(chartDir, dir); err != nil {
		t.Fatal(err)
	}
	tpl := "{{- define \"chartcheck.notes\" -}}\n" + string(notes) + "\n{{- end }}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include \"chartcheck.notes\" . | toJson }}\n"
	for name, data := range map[string]string{"_chartcheck_notes.tpl": tpl, "chartcheck-notes.yaml": cm} {
		if err := os.WriteFile(filepath.Join(dir, "templates", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		values string
		want   []string
	}{
		{"", []string{"deployment/rel-shadoweval", "port-forward", "embedded NATS server", "gold set is empty"}},
		{"sidecar-values.yaml", []string{`include "shadoweval.sidecarContainer" $sw`, "configmap rel-shadoweval-sidecar", "must run in search"}},
		{"existing-secret-values.yaml", []string{"deployment/rel-shadoweval"}},
		{"cluster-values.yaml", []string{"statefulset/rel-shadoweval", "6 pods, 3 members sharing 6 partitions", "rel-shadoweval-<i> is member <i> mod 3", "hot standbys"}},
	} {
		t.Run(cmpOr(tc.values, "defaults"), func(t *testing.T) {
			var files []string
			if tc.values != "" {
				files = []string{filepath.Join(chartDir, "ci", tc.values)}
			}
			out, err := helmTemplate(t, dir, files, "--show-only", "templates/chartcheck-notes.yaml")
			if err != nil {
				t.Fatal(err)
			}
			text := decodeAll(t, out)[0].Obj.(*corev1.ConfigMap).Data["notes"]
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("NOTES lack %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "<no value>") {
				t.Errorf("NOTES hold <no value>:\n%s", text)
			}
			out, err = helmTemplate(t, dir, files)
			if err != nil {
				t.Fatal(err)
			}
			checkNotesCommands(t, text, decodeAll(t, out))
		})
	}
}

// notesPortForward and notesService find the commands and addresses the
// NOTES give.
var (
	notesPortForward = regexp.MustCompile(`kubectl -n (\S+) port-forward (deployment|statefulset)/(\S+) (\d+)`)
	notesService     = regexp.MustCompile(`http://([a-z0-9-]+)\.([a-z0-9-]+)\.svc:(\d+)`)
)

// checkNotesCommands: what the NOTES tell a user to run names what the
// chart renders. A port-forward targets a rendered Deployment or
// StatefulSet of the release's namespace on a port its sidecar container
// listens on; an in-cluster URL is a rendered Service's name, namespace
// and port; a curl command quotes a URL with '&' (the shell would cut it
// there). The URLs' paths are requested from a running sidecar by the
// main module (sidecar/notes_e2e_test.go).
func checkNotesCommands(t *testing.T, text string, ms []manifest) {
	t.Helper()
	for _, m := range notesPortForward.FindAllStringSubmatch(text, -1) {
		ns, kind, name, port := m[1], m[2], m[3], m[4]
		if ns != namespace {
			t.Errorf("NOTES: %s: namespace %s, want the release's %s", m[0], ns, namespace)
		}
		var ports []string
		found := false
		for _, mf := range ms {
			var spec *corev1.PodSpec
			switch o := mf.Obj.(type) {
			case *appsv1.Deployment:
				if kind == "deployment" && o.Name == name {
					spec = &o.Spec.Template.Spec
				}
			case *appsv1.StatefulSet:
				if kind == "statefulset" && o.Name == name {
					spec = &o.Spec.Template.Spec
				}
			}
			if spec == nil {
				continue
			}
			found = true
			for _, c := range spec.Containers {
				for _, p := range c.Ports {
					ports = append(ports, strconv.Itoa(int(p.ContainerPort)))
				}
			}
		}
		if !found {
			t.Errorf("NOTES: %s: no %s %s is rendered", m[0], kind, name)
		} else if !slices.Contains(ports, port) {
			t.Errorf("NOTES: %s: port %s is none of the pod's ports %v", m[0], port, ports)
		}
	}
	for _, m := range notesService.FindAllStringSubmatch(text, -1) {
		found := false
		for _, mf := range ms {
			if svc, ok := mf.Obj.(*corev1.Service); ok && svc.Name == m[1] && svc.Namespace == m[2] {
				for _, p := range svc.Spec.Ports {
					found = found || strconv.Itoa(int(p.Port)) == m[3]
				}
			}
		}
		if !found {
			t.Errorf("NOTES: %s is no rendered Service's name, namespace and port", m[0])
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if cmd := strings.TrimSpace(line); strings.HasPrefix(cmd, "curl ") && strings.Contains(cmd, "&") && !strings.Contains(cmd, "'http") {
			t.Errorf("NOTES: %q: a URL with '&' must be quoted", cmd)
		}
	}
}

// TestDashboardMetricsExist: every shadoweval_* series the dashboard
// queries is a metric name the main module defines (a string literal in its
// non-test Go files), so that a renamed metric breaks this test, not the
// dashboard.
func TestDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	literal := regexp.MustCompile(`"(shadoweval_[a-z0-9_]+)"`)
	err = filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "charts" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range literal.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`shadoweval_[a-z0-9_]+`).FindAllString(string(raw), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard queries no shadoweval_ series")
	}
	for _, name := range used {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && defined[b] {
				base = b
			}
		}
		if !defined[base] {
			t.Errorf("the dashboard queries %s, which the main module does not define", name)
		}
	}
}
