package examples_test

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// The kustomizations users apply, and the namespaces they name.
const (
	installBase  = "install"
	installHA    = "install/overlays/ha"
	ownNamespace = "crowsnest"
	argoCDNS     = "argocd"
	installImage = "ghcr.io/crowsnest-dev/crowsnest:latest"
)

// rendered is one kustomization's output, each object decoded strictly
// (unknown fields are errors) into its Kubernetes Go type.
type rendered struct {
	objs []runtime.Object
	yaml map[string]string // "Kind namespace/name" -> the object's YAML
}

// renderInstall runs kustomize's engine, the one `kubectl kustomize`
// embeds, on dir.
func renderInstall(t *testing.T, dir string) *rendered {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	out := &rendered{yaml: map[string]string{}}
	for _, res := range resMap.Resources() {
		y, err := res.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s: %v", dir, res.CurId(), err)
		}
		obj, gvk, err := decoder.Decode(y, nil, nil)
		if err != nil {
			t.Fatalf("%s: %s is not a valid Kubernetes object of a known kind: %v", dir, res.CurId(), err)
		}
		m, err := metaOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		out.objs = append(out.objs, obj)
		out.yaml[objKey(gvk.Kind, m)] = string(y)
	}
	return out
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

func objKey(kind string, m metav1.Object) string {
	return kind + " " + path.Join(m.GetNamespace(), m.GetName())
}

// keys lists the objects as "Kind namespace/name", sorted.
func (r *rendered) keys() []string {
	out := make([]string, 0, len(r.yaml))
	for k := range r.yaml {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// one returns the only object of type T named name (in any namespace).
func one[T runtime.Object](t *testing.T, r *rendered, namespace, name string) T {
	t.Helper()
	for _, obj := range r.objs {
		o, ok := obj.(T)
		if !ok {
			continue
		}
		m, _ := metaOf(obj)
		if m.GetNamespace() == namespace && m.GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("no %T %s/%s in the rendered install", zero, namespace, name)
	return zero
}

func TestInstallRendersKnownObjects(t *testing.T) {
	base := []string{
		"ClusterRole crowsnest",
		"ClusterRoleBinding crowsnest",
		"ConfigMap crowsnest/crowsnest-config",
		"Deployment crowsnest/crowsnest",
		"Namespace crowsnest",
		"Role argocd/crowsnest",
		"Role crowsnest/crowsnest",
		"RoleBinding argocd/crowsnest",
		"RoleBinding crowsnest/crowsnest",
		"Service crowsnest/crowsnest",
		"ServiceAccount crowsnest/crowsnest",
	}
	ha := append(slices.Clone(base), "PodDisruptionBudget crowsnest/crowsnest")
	slices.Sort(ha)
	for _, tc := range []struct {
		dir  string
		want []string
	}{{installBase, base}, {installHA, ha}} {
		t.Run(tc.dir, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, renderInstall(t, tc.dir).keys()); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

// The overlay changes the Deployment and adds a PodDisruptionBudget;
// everything else, RBAC included, is the base's.
func TestInstallHAOverlay(t *testing.T) {
	base, ha := renderInstall(t, installBase), renderInstall(t, installHA)
	for key, y := range base.yaml {
		if strings.HasPrefix(key, "Deployment ") {
			continue
		}
		if diff := cmp.Diff(y, ha.yaml[key]); diff != "" {
			t.Errorf("%s differs in the ha overlay (-base +ha):\n%s", key, diff)
		}
	}
	for _, tc := range []struct {
		r            *rendered
		replicas     int32
		leaderElect  bool
		strategyType appsv1.DeploymentStrategyType
	}{
		// Without a Lease two pods would both write back: never overlap.
		{base, 1, false, appsv1.RecreateDeploymentStrategyType},
		{ha, 2, true, appsv1.RollingUpdateDeploymentStrategyType},
	} {
		d := one[*appsv1.Deployment](t, tc.r, ownNamespace, "crowsnest")
		if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.replicas {
			t.Errorf("replicas = %v, want %d", d.Spec.Replicas, tc.replicas)
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if got := slices.Contains(args, "--leader-elect"); got != tc.leaderElect {
			t.Errorf("--leader-elect in %q: %v, want %v", args, got, tc.leaderElect)
		}
		if d.Spec.Strategy.Type != tc.strategyType {
			t.Errorf("strategy = %s, want %s", d.Spec.Strategy.Type, tc.strategyType)
		}
	}
}

// The mounted config passes the checks of `crowsnest config validate`.
func TestInstallConfigIsValid(t *testing.T) {
	cm := one[*corev1.ConfigMap](t, renderInstall(t, installBase), ownNamespace, "crowsnest-config")
	data, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap keys %v, want config.yaml", cm.Data)
	}
	c, err := config.Parse([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := triggers.Compile(&c.Notifications); err != nil {
		t.Error(err)
	}
	if _, err := imageupdate.CompilePolicies(c.ImagePolicies); err != nil {
		t.Error(err)
	}
}

// runFlags reads `run --name=value` container args; every flag carries
// its value after "=" so it is plain which flag a value belongs to.
func runFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("args %q: want the run command first", args)
	}
	flags := map[string]string{}
	for _, a := range args[1:] {
		name, value, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") {
			t.Fatalf("arg %q: want --name=value", a)
		}
		flags[strings.TrimPrefix(name, "--")] = value
	}
	return flags
}

func TestInstallDeployment(t *testing.T) {
	for _, dir := range []string{installBase, installHA} {
		t.Run(dir, func(t *testing.T) {
			r := renderInstall(t, dir)
			d := one[*appsv1.Deployment](t, r, ownNamespace, "crowsnest")
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			if c.Image != installImage {
				t.Errorf("image = %q, want %q", c.Image, installImage)
			}
			checkLockedDown(t, pod.SecurityContext, c.SecurityContext)
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[res]; !ok {
					t.Errorf("no %s request", res)
				}
				if _, ok := c.Resources.Limits[res]; !ok {
					t.Errorf("no %s limit", res)
				}
			}
			if sel, tmpl := d.Spec.Selector.MatchLabels, d.Spec.Template.Labels; !subset(sel, tmpl) {
				t.Errorf("selector %v does not select the pod labels %v", sel, tmpl)
			}
			flags := runFlags(t, c.Args)
			checkPorts(t, r, d, flags)
			checkMounts(t, r, pod, flags)
			if pod.ServiceAccountName != "crowsnest" {
				t.Errorf("serviceAccountName = %q, want crowsnest", pod.ServiceAccountName)
			}
			one[*corev1.ServiceAccount](t, r, ownNamespace, pod.ServiceAccountName)
			if got := flags["argocd-namespace"]; got != argoCDNS {
				t.Errorf("--argocd-namespace = %q; the argocd Role is in %s", got, argoCDNS)
			}
		})
	}
}

// checkLockedDown wants a non-root user, a read-only root filesystem, no
// capabilities, no privilege escalation and the runtime's seccomp profile
// (the "restricted" Pod Security Standard, which the Namespace enforces).
func checkLockedDown(t *testing.T, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if pod == nil || c == nil {
		t.Fatalf("pod securityContext %v, container securityContext %v: want both", pod, c)
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	if !isTrue(pod.RunAsNonRoot) || !isTrue(c.RunAsNonRoot) {
		t.Error("runAsNonRoot is not true for the pod and the container")
	}
	if pod.RunAsUser == nil || *pod.RunAsUser == 0 {
		t.Errorf("runAsUser = %v, want a non-root uid", pod.RunAsUser)
	}
	if !isTrue(c.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(c.Capabilities.Add) > 0 {
		t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", c.Capabilities)
	}
	for _, sp := range []*corev1.SeccompProfile{pod.SeccompProfile, c.SeccompProfile} {
		if sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccompProfile = %v, want RuntimeDefault", sp)
		}
	}
}

// checkPorts wants each server's bind address on a named container port,
// the probes on the health endpoints, and the Service on metrics and
// webhooks.
func checkPorts(t *testing.T, r *rendered, d *appsv1.Deployment, flags map[string]string) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, name := range map[string]string{
		"metrics-bind-address":      "metrics",
		"health-probe-bind-address": "health",
		"webhook-bind-address":      "webhooks",
	} {
		_, port, err := net.SplitHostPort(flags[flag])
		if err != nil {
			t.Errorf("--%s=%q: %v", flag, flags[flag], err)
			continue
		}
		if want := fmt.Sprint(ports[name]); port != want {
			t.Errorf("--%s listens on %s, container port %q is %s", flag, port, name, want)
		}
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", p.path)
			continue
		}
		if got := p.probe.HTTPGet; got.Path != p.path || got.Port.String() != "health" {
			t.Errorf("probe = %s on port %s, want %s on health", got.Path, got.Port.String(), p.path)
		}
	}
	svc := one[*corev1.Service](t, r, ownNamespace, "crowsnest")
	if !subset(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("Service selector %v does not select the pod labels %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	var targets []string
	for _, p := range svc.Spec.Ports {
		targets = append(targets, p.TargetPort.String())
	}
	if diff := cmp.Diff([]string{"metrics", "webhooks"}, targets); diff != "" {
		t.Errorf("Service target ports (-want +got):\n%s", diff)
	}
}

// checkMounts wants --config to name a key of the mounted ConfigMap,
// --git-cache-dir and --state-dir on an emptyDir (which outlives a
// container restart, as the notification journal must), and /tmp writable (SSH write-back writes
// a known_hosts file there) although the root filesystem is read-only.
func checkMounts(t *testing.T, r *rendered, pod corev1.PodSpec, flags map[string]string) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for i := range pod.Volumes {
		volumes[pod.Volumes[i].Name] = pod.Volumes[i]
	}
	// mountOf returns the volume mounted at the folder holding p.
	mountOf := func(p string) (corev1.VolumeMount, corev1.Volume, bool) {
		for _, m := range pod.Containers[0].VolumeMounts {
			if p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/") {
				return m, volumes[m.Name], true
			}
		}
		return corev1.VolumeMount{}, corev1.Volume{}, false
	}
	cfgPath := flags["config"]
	m, v, ok := mountOf(cfgPath)
	switch {
	case !ok || v.ConfigMap == nil:
		t.Errorf("--config=%s is not on a ConfigMap volume", cfgPath)
	case m.SubPath != "":
		t.Errorf("the config is mounted with subPath %q: ConfigMap edits would never reach it", m.SubPath)
	case path.Dir(cfgPath) != m.MountPath:
		t.Errorf("--config=%s is not directly in the mount %s", cfgPath, m.MountPath)
	default:
		cm := one[*corev1.ConfigMap](t, r, ownNamespace, v.ConfigMap.Name)
		if _, ok := cm.Data[path.Base(cfgPath)]; !ok {
			t.Errorf("ConfigMap %s has no key %s", cm.Name, path.Base(cfgPath))
		}
	}
	if flags["state-dir"] == "" {
		t.Error("the daemon runs without --state-dir: a restarted container would send again the notifications its predecessor sent and did not record")
	}
	for _, p := range []string{flags["git-cache-dir"], flags["state-dir"], "/tmp"} {
		m, v, ok := mountOf(p)
		if !ok || v.EmptyDir == nil || m.ReadOnly {
			t.Errorf("%q is not on a writable emptyDir volume", p)
		}
	}
}

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

// The RBAC is exactly the verbs the daemon uses (docs/install.md's "kustomize
// install and RBAC" lists the same); cmd/crowsnest's install e2e test shows they
// are enough and that each matters.
func TestInstallRBAC(t *testing.T) {
	r := renderInstall(t, installBase)
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "crowsnest", Namespace: ownNamespace}
	rule := func(group, resource string, verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
	}
	knownHosts := rule("", "configmaps", "get")
	knownHosts.ResourceNames = []string{"argocd-ssh-known-hosts-cm", "argocd-notifications-cm"}
	for _, tc := range []struct {
		kind, namespace string
		want            []rbacv1.PolicyRule
	}{
		{"ClusterRole", "", []rbacv1.PolicyRule{
			rule("argoproj.io", "applications", "get", "list", "watch", "patch"),
			rule("argoproj.io", "appprojects", "list", "watch"),
			rule("", "events", "create", "patch"),
		}},
		{"Role", ownNamespace, []rbacv1.PolicyRule{
			rule("", "configmaps", "get", "create", "update"),
			rule("coordination.k8s.io", "leases", "get", "create", "update"),
		}},
		{"Role", argoCDNS, []rbacv1.PolicyRule{
			rule("", "secrets", "get", "list"),
			knownHosts,
		}},
	} {
		var (
			rules   []rbacv1.PolicyRule
			binding []rbacv1.Subject
			ref     rbacv1.RoleRef
		)
		if tc.kind == "ClusterRole" {
			rules = one[*rbacv1.ClusterRole](t, r, "", "crowsnest").Rules
			b := one[*rbacv1.ClusterRoleBinding](t, r, "", "crowsnest")
			binding, ref = b.Subjects, b.RoleRef
		} else {
			rules = one[*rbacv1.Role](t, r, tc.namespace, "crowsnest").Rules
			b := one[*rbacv1.RoleBinding](t, r, tc.namespace, "crowsnest")
			binding, ref = b.Subjects, b.RoleRef
		}
		what := tc.kind + " " + path.Join(tc.namespace, "crowsnest")
		if diff := cmp.Diff(tc.want, rules); diff != "" {
			t.Errorf("%s rules (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff([]rbacv1.Subject{sa}, binding); diff != "" {
			t.Errorf("%s binding subjects (-want +got):\n%s", what, diff)
		}
		if want := (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: tc.kind, Name: "crowsnest"}); ref != want {
			t.Errorf("%s binding roleRef = %+v, want %+v", what, ref, want)
		}
	}
}
