package charts_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Every value lands where its documentation says, for a release whose
// name does not contain the chart's (so objects are named <release>-crowsnest).
func TestChartValues(t *testing.T) {
	const (
		name = "cn-crowsnest"
		ns   = "tools"
		argo = "gitops"
	)
	objs, err := renderRelease(t, "cn", ns, "-f", values(t, `
image: {repository: registry.example.com/crowsnest, tag: v1.2.3, pullPolicy: Always}
imagePullSecrets: [{name: pull}]
replicaCount: 3
leaderElection: {enabled: true}
podDisruptionBudget: {minAvailable: 2}
argocdNamespace: gitops
extraArgs: [--dry-run, --log-level=debug]
extraEnv: [{name: AWS_REGION, value: eu-west-1}]
resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {cpu: null, memory: 256Mi}}
gitCacheSizeLimit: 5Gi
serviceAccount: {annotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/crowsnest"}}
podAnnotations: {example.com/a: b}
podLabels: {team: platform}
podSecurityContext: {runAsUser: 1000}
securityContext: {allowPrivilegeEscalation: null, capabilities: {add: [NET_BIND_SERVICE]}}
service: {type: NodePort, annotations: {example.com/s: t}, ports: {metrics: 9090, webhooks: 9443}}
serviceMonitor: {enabled: true, labels: {release: prom}, interval: 1m}
nodeSelector: {kubernetes.io/arch: arm64}
tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions: [{key: pool, operator: In, values: [infra]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{
		"ClusterRole " + name, "ClusterRoleBinding " + name,
		"ConfigMap tools/" + name + "-config", "Deployment tools/" + name,
		"PodDisruptionBudget tools/" + name,
		"Role gitops/" + name, "Role tools/" + name,
		"RoleBinding gitops/" + name, "RoleBinding tools/" + name,
		"Service tools/" + name, "ServiceAccount tools/" + name, "ServiceMonitor tools/" + name,
	}
	if diff := cmp.Diff(wantKeys, slices.Sorted(maps.Keys(objs))); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}

	d := get[*appsv1.Deployment](t, objs, "Deployment tools/"+name)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", d.Spec.Replicas)
	}
	if c.Image != "registry.example.com/crowsnest:v1.2.3" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image = %s (%s), want registry.example.com/crowsnest:v1.2.3 (Always)", c.Image, c.ImagePullPolicy)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "pull"}}, pod.ImagePullSecrets); diff != "" {
		t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
	}
	for _, want := range []string{"--argocd-namespace=gitops", "--leader-elect", "--leader-election-id=" + name} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q: want %s", c.Args, want)
		}
	}
	if got := c.Args[len(c.Args)-2:]; !slices.Equal(got, []string{"--dry-run", "--log-level=debug"}) {
		t.Errorf("args end with %q, want extraArgs", got)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "AWS_REGION" }); i < 0 || c.Env[i].Value != "eu-west-1" {
		t.Errorf("env %v: want AWS_REGION=eu-west-1", c.Env)
	}
	wantResources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	if diff := cmp.Diff(wantResources.String(), c.Resources.String()); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	// Maps merge with the defaults (null drops a key), as everywhere in Helm.
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	wantPodSC := &corev1.PodSecurityContext{
		RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](1000), RunAsGroup: ptrTo[int64](65532),
		FSGroup: ptrTo[int64](65532), SeccompProfile: runtimeDefault,
	}
	if diff := cmp.Diff(wantPodSC, pod.SecurityContext); diff != "" {
		t.Errorf("pod securityContext (-want +got):\n%s", diff)
	}
	wantSC := &corev1.SecurityContext{
		ReadOnlyRootFilesystem: ptrTo(true), RunAsNonRoot: ptrTo(true), SeccompProfile: runtimeDefault,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
	}
	if diff := cmp.Diff(wantSC, c.SecurityContext); diff != "" {
		t.Errorf("container securityContext (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"kubernetes.io/arch": "arm64"}, pod.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	wantTolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(wantTolerations, pod.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	// A given affinity replaces the default anti-affinity of several replicas.
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || pod.Affinity.PodAntiAffinity != nil {
		t.Errorf("affinity = %+v, want the nodeAffinity of the values only", pod.Affinity)
	}
	if d.Spec.Template.Annotations["example.com/a"] != "b" || d.Spec.Template.Labels["team"] != "platform" {
		t.Errorf("pod annotations %v, labels %v: want podAnnotations and podLabels", d.Spec.Template.Annotations, d.Spec.Template.Labels)
	}
	for _, v := range pod.Volumes {
		if v.Name == "git-cache" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit.String() != "5Gi") {
			t.Errorf("git-cache volume %+v, want an emptyDir of 5Gi", v)
		}
		if v.Name == "config" && (v.ConfigMap == nil || v.ConfigMap.Name != name+"-config") {
			t.Errorf("config volume %+v, want ConfigMap %s-config", v, name)
		}
	}
	if got := get[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget tools/"+name).Spec.MinAvailable; got == nil || *got != intstr.FromInt32(2) {
		t.Errorf("PodDisruptionBudget minAvailable = %v, want 2", got)
	}

	sa := get[*corev1.ServiceAccount](t, objs, "ServiceAccount tools/"+name)
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" || pod.ServiceAccountName != name {
		t.Errorf("ServiceAccount annotations %v, pod's serviceAccountName %q: want the values' annotations and %s", sa.Annotations, pod.ServiceAccountName, name)
	}
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}
	for _, k := range []string{"RoleBinding tools/" + name, "RoleBinding gitops/" + name} {
		b := get[*rbacv1.RoleBinding](t, objs, k)
		if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" || b.RoleRef.Name != name {
			t.Errorf("%s: roleRef %s, subjects (-want +got):\n%s", k, b.RoleRef.Name, diff)
		}
	}
	if diff := cmp.Diff(wantSubjects, get[*rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding "+name).Subjects); diff != "" {
		t.Errorf("ClusterRoleBinding subjects (-want +got):\n%s", diff)
	}

	svc := get[*corev1.Service](t, objs, "Service tools/"+name)
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s %s %d", p.Name, p.TargetPort.String(), p.Port))
	}
	if diff := cmp.Diff([]string{"metrics metrics 9090", "webhooks webhooks 9443"}, ports); diff != "" {
		t.Errorf("Service ports (-want +got):\n%s", diff)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Annotations["example.com/s"] != "t" {
		t.Errorf("Service type %s, annotations %v: want NodePort and the values' annotations", svc.Spec.Type, svc.Annotations)
	}

	sm := objs["ServiceMonitor tools/"+name].u
	checkServiceMonitor(t, sm, svc, ns)
	if got, _, _ := unstructured.NestedString(sm, "metadata", "labels", "release"); got != "prom" {
		t.Errorf("ServiceMonitor label release = %q, want prom", got)
	}
}

// checkServiceMonitor wants the monitor to select the Service by its
// labels in its namespace and scrape its metrics port.
func checkServiceMonitor(t *testing.T, sm map[string]any, svc *corev1.Service, ns string) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(sm, "spec", "selector", "matchLabels")
	if !subset(sel, svc.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service's labels %v", sel, svc.Labels)
	}
	if names, _, _ := unstructured.NestedStringSlice(sm, "spec", "namespaceSelector", "matchNames"); !slices.Equal(names, []string{ns}) {
		t.Errorf("ServiceMonitor namespaces %q, want [%s]", names, ns)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	ep, _ := endpoints[0].(map[string]any)
	if ep["port"] != "metrics" || ep["path"] != "/metrics" || ep["interval"] != "1m" {
		t.Errorf("ServiceMonitor endpoint %v, want port metrics, path /metrics, interval 1m", ep)
	}
}

func ptrTo[T any](v T) *T { return &v }

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return len(sub) > 0
}

// The Deployment, Service, PodDisruptionBudget and anti-affinity select
// this release's pods and no other release's.
func TestChartSelectsItsPods(t *testing.T) {
	for _, rel := range []string{"crowsnest", "other"} {
		t.Run(rel, func(t *testing.T) {
			objs, err := renderRelease(t, rel, ownNamespace, "-f", haValues)
			if err != nil {
				t.Fatal(err)
			}
			var d *appsv1.Deployment
			for k, o := range objs {
				if strings.HasPrefix(k, "Deployment ") {
					d = o.typed.(*appsv1.Deployment)
				}
			}
			if d == nil {
				t.Fatal("no Deployment")
			}
			pods := d.Spec.Template.Labels
			if pods["app.kubernetes.io/instance"] != rel {
				t.Errorf("pod labels %v: want app.kubernetes.io/instance=%s", pods, rel)
			}
			selectors := map[string]map[string]string{"Deployment": d.Spec.Selector.MatchLabels}
			for k, o := range objs {
				switch x := o.typed.(type) {
				case *corev1.Service:
					selectors[k] = x.Spec.Selector
				case *policyv1.PodDisruptionBudget:
					selectors[k] = x.Spec.Selector.MatchLabels
				}
			}
			for _, term := range d.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				selectors["anti-affinity"] = term.PodAffinityTerm.LabelSelector.MatchLabels
			}
			if len(selectors) != 4 {
				t.Errorf("selectors of %v: want the Deployment, Service, PodDisruptionBudget and anti-affinity", slices.Sorted(maps.Keys(selectors)))
			}
			for what, sel := range selectors {
				if !subset(sel, pods) || sel["app.kubernetes.io/instance"] != rel {
					t.Errorf("%s selects %v; want the pods' labels %v, this release's only", what, sel, pods)
				}
			}
		})
	}
}

// Bad values fail the render with an error naming the value.
func TestChartRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"replicas without leader election", "replicaCount: 2", "replicaCount: 2 replicas need leaderElection.enabled=true"},
		{"no replicas", "replicaCount: 0", "/replicaCount"},
		{"misspelt value", "replicas: 2", "'replicas' not allowed"},
		{"misspelt nested value", "leaderElection: {enable: true}", "'enable' not allowed"},
		{"no argocd namespace", `argocdNamespace: ""`, "/argocdNamespace"},
		{"extra args not a list", "extraArgs: --dry-run", "/extraArgs"},
		{"config not a mapping", "config: 5", "/config"},
		{"bad pull policy", "image: {pullPolicy: Sometimes}", "/image/pullPolicy"},
		{"bad port", "service: {ports: {metrics: 70000}}", "/service/ports/metrics"},
		{"no service account", "serviceAccount: {create: false}", "serviceAccount.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderRelease(t, release, ownNamespace, "-f", values(t, tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Every value the schema knows is in the README's table, and every value
// in the table is one the schema knows.
func TestChartREADMEListsEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	want := schemaPaths("", schema)
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(readme)) {
		if v, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(v, "`")
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values in README.md (-schema +README):\n%s", diff)
	}
}

// schemaPaths lists the dotted paths of the values a schema object
// declares, descending into objects that close their keys; "global" is
// Helm's own.
func schemaPaths(prefix string, schema map[string]any) []string {
	var out []string
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if prefix == "" && name == "global" {
			continue
		}
		sub, _ := p.(map[string]any)
		if closed, _ := sub["additionalProperties"].(bool); sub["additionalProperties"] != nil && !closed {
			out = append(out, schemaPaths(prefix+name+".", sub)...)
			continue
		}
		out = append(out, prefix+name)
	}
	slices.Sort(out)
	return out
}
