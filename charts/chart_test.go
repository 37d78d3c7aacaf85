package charts_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", haValues}} {
		if _, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Error(err)
		}
	}
}

// get returns the typed object at key, failing the test when it is
// missing or of another type.
func get[T runtime.Object](t *testing.T, objs objects, key string) T {
	t.Helper()
	o, ok := objs[key].typed.(T)
	if !ok {
		t.Fatalf("no %s among %v", key, slices.Sorted(maps.Keys(objs)))
	}
	return o
}

// The chart's own Namespace is the one object it leaves out: Helm stores
// the release in the namespace before creating objects, so it must exist
// first (`helm install --create-namespace`).
const installNamespace = "Namespace " + ownNamespace

// leaderElectionID is the argument only the chart adds with leader
// election: one Lease per release. With the release name crowsnest it is
// the daemon's default Lease name, the one the kustomize install uses.
const leaderElectionID = "--leader-election-id=" + release

// With its defaults the chart renders the kustomize install (and with
// ha-values.yaml the HA overlay) field for field, except for labels and
// selectors (the chart adds Helm's release labels) and the points named
// in installNamespace and leaderElectionID.
func TestChartRendersTheInstall(t *testing.T) {
	for _, tc := range []struct {
		name        string
		helmArgs    []string
		install     string
		leaderElect bool
	}{
		{"default", nil, installBase, false},
		{"ha", []string{"-f", haValues}, installHA, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chart, install := render(t, tc.helmArgs...), kustomize(t, tc.install)
			if _, ok := install[installNamespace]; !ok {
				t.Fatalf("the install has no %s", installNamespace)
			}
			delete(install, installNamespace)
			wantKeys, gotKeys := slices.Sorted(maps.Keys(install)), slices.Sorted(maps.Keys(chart))
			if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
				t.Fatalf("objects (-install +chart):\n%s", diff)
			}
			for _, k := range wantKeys {
				got := normalize(t, chart[k].u)
				if strings.HasPrefix(k, "Deployment ") {
					if found := dropArg(t, got, leaderElectionID); found != tc.leaderElect {
						t.Errorf("%s in the chart's args: %v, want %v", leaderElectionID, found, tc.leaderElect)
					}
				}
				if diff := cmp.Diff(normalize(t, install[k].u), got); diff != "" {
					t.Errorf("%s (-install +chart):\n%s", k, diff)
				}
			}
		})
	}
}

// normalize returns a copy of a rendered object without what the chart
// renders differently on purpose: labels and the label selectors that
// select them. The config file in a ConfigMap is compared as data, not
// text (the install's file has comments).
func normalize(t *testing.T, u map[string]any) map[string]any {
	t.Helper()
	u = runtime.DeepCopyJSON(u)
	unstructured.RemoveNestedField(u, "metadata", "labels")
	switch u["kind"] {
	case "Deployment":
		unstructured.RemoveNestedField(u, "spec", "selector")
		unstructured.RemoveNestedField(u, "spec", "template", "metadata", "labels")
		terms, _, _ := unstructured.NestedSlice(u, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for _, term := range terms {
			unstructured.RemoveNestedField(term.(map[string]any), "podAffinityTerm", "labelSelector")
		}
		if terms != nil {
			if err := unstructured.SetNestedSlice(u, terms, "spec", "template", "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
				t.Fatal(err)
			}
		}
	case "Service", "PodDisruptionBudget":
		unstructured.RemoveNestedField(u, "spec", "selector")
		// The chart names the API's default Service type.
		if typ, _, _ := unstructured.NestedString(u, "spec", "type"); typ == "ClusterIP" {
			unstructured.RemoveNestedField(u, "spec", "type")
		}
	case "ConfigMap":
		data, _, _ := unstructured.NestedStringMap(u, "data")
		parsed := map[string]any{}
		for k, v := range data {
			var d any
			if err := yaml.Unmarshal([]byte(v), &d); err != nil {
				t.Fatalf("ConfigMap key %s: %v", k, err)
			}
			parsed[k] = d
		}
		u["data"] = parsed
	}
	return u
}

// dropArg removes arg from the first container's args and reports
// whether it was there.
func dropArg(t *testing.T, deployment map[string]any, arg string) bool {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(deployment, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		t.Fatalf("no containers: %v", err)
	}
	c := containers[0].(map[string]any)
	args, _ := c["args"].([]any)
	i := slices.Index(args, any(arg))
	if i < 0 {
		return false
	}
	c["args"] = slices.Delete(args, i, i+1)
	if err := unstructured.SetNestedSlice(deployment, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return true
}

// The RBAC is the install's, rule for rule (TestChartRendersTheInstall
// compares whole objects; this names the rules), so what
// cmd/crowsnest's install e2e test proves sufficient holds for the chart.
// With argocdNamespace set to the release's namespace the two Roles there
// merge into one.
func TestChartRBACIsTheInstalls(t *testing.T) {
	install := kustomize(t, installBase)
	clusterRole := get[*rbacv1.ClusterRole](t, install, "ClusterRole crowsnest").Rules
	own := get[*rbacv1.Role](t, install, "Role crowsnest/crowsnest").Rules
	argocd := get[*rbacv1.Role](t, install, "Role argocd/crowsnest").Rules
	if len(clusterRole) == 0 || len(own) == 0 || len(argocd) == 0 {
		t.Fatal("the install has a Role without rules")
	}
	sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "crowsnest", Namespace: ownNamespace}}

	t.Run("default", func(t *testing.T) {
		chart := render(t)
		if diff := cmp.Diff(clusterRole, get[*rbacv1.ClusterRole](t, chart, "ClusterRole crowsnest").Rules); diff != "" {
			t.Errorf("ClusterRole rules (-install +chart):\n%s", diff)
		}
		if diff := cmp.Diff(own, get[*rbacv1.Role](t, chart, "Role crowsnest/crowsnest").Rules); diff != "" {
			t.Errorf("Role crowsnest/crowsnest rules (-install +chart):\n%s", diff)
		}
		if diff := cmp.Diff(argocd, get[*rbacv1.Role](t, chart, "Role argocd/crowsnest").Rules); diff != "" {
			t.Errorf("Role argocd/crowsnest rules (-install +chart):\n%s", diff)
		}
		checkBinding(t, get[*rbacv1.ClusterRoleBinding](t, chart, "ClusterRoleBinding crowsnest").RoleRef,
			get[*rbacv1.ClusterRoleBinding](t, chart, "ClusterRoleBinding crowsnest").Subjects, "ClusterRole", "crowsnest", sa)
		for _, ns := range []string{ownNamespace, argoCDNS} {
			b := get[*rbacv1.RoleBinding](t, chart, "RoleBinding "+ns+"/crowsnest")
			checkBinding(t, b.RoleRef, b.Subjects, "Role", "crowsnest", sa)
		}
	})

	t.Run("argocdNamespace is the release's", func(t *testing.T) {
		chart := render(t, "--set", "argocdNamespace="+ownNamespace)
		want := slices.Concat(own, argocd)
		if diff := cmp.Diff(want, get[*rbacv1.Role](t, chart, "Role crowsnest/crowsnest").Rules); diff != "" {
			t.Errorf("merged Role rules (-want +got):\n%s", diff)
		}
		for k := range chart {
			if strings.Contains(k, argoCDNS+"/") {
				t.Errorf("%s rendered although argocdNamespace=%s", k, ownNamespace)
			}
		}
		d := get[*appsv1.Deployment](t, chart, "Deployment crowsnest/crowsnest")
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--argocd-namespace="+ownNamespace) {
			t.Errorf("args %q: want --argocd-namespace=%s", args, ownNamespace)
		}
	})
}

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string, want []rbacv1.Subject) {
	t.Helper()
	if ref.Kind != kind || ref.Name != name {
		t.Errorf("roleRef = %s %s, want %s %s", ref.Kind, ref.Name, kind, name)
	}
	if diff := cmp.Diff(want, subjects); diff != "" {
		t.Errorf("%s %s subjects (-want +got):\n%s", kind, name, diff)
	}
}

func TestChartHA(t *testing.T) {
	chart := render(t, "-f", haValues)
	d := get[*appsv1.Deployment](t, chart, "Deployment crowsnest/crowsnest")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--leader-elect", leaderElectionID} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q: want %s", args, want)
		}
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("strategy = %s, want RollingUpdate", d.Spec.Strategy.Type)
	}
	get[*policyv1.PodDisruptionBudget](t, chart, "PodDisruptionBudget crowsnest/crowsnest")
}

// The rendered config passes the checks of `crowsnest config validate`:
// the defaults, and a config given as a mapping or as a string.
func TestChartConfigIsValid(t *testing.T) {
	const policies = `
  imagePolicies:
    - name: web
      match:
        applications: ["web-*"]
      images:
        - alias: web
          image: registry.example.com/web
          strategy: semver
          constraint: ">=1.0.0"
`
	for _, tc := range []struct {
		name     string
		args     []string
		policies int
	}{
		{"default", nil, 0},
		{"ha", []string{"-f", haValues}, 0},
		{"mapping", []string{"-f", values(t, "config:\n  apiVersion: crowsnest.dev/v1alpha1\n  kind: Config"+policies)}, 1},
		{"string", []string{"-f", values(t, "config: |\n  # kept as written\n  apiVersion: crowsnest.dev/v1alpha1\n  kind: Config"+policies)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := get[*corev1.ConfigMap](t, render(t, tc.args...), "ConfigMap crowsnest/crowsnest-config")
			data, ok := cm.Data["config.yaml"]
			if !ok {
				t.Fatalf("ConfigMap keys %v, want config.yaml", slices.Sorted(maps.Keys(cm.Data)))
			}
			c, err := config.Parse([]byte(data))
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			if _, err := triggers.Compile(&c.Notifications); err != nil {
				t.Error(err)
			}
			if _, err := imageupdate.CompilePolicies(c.ImagePolicies); err != nil {
				t.Error(err)
			}
			if len(c.ImagePolicies) != tc.policies {
				t.Errorf("%d image policies, want %d", len(c.ImagePolicies), tc.policies)
			}
		})
	}
}
