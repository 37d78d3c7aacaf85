package examples_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

const installMultiTeam = "install/overlays/multi-team"

// The multi-team overlay: the base plus, per team, get on Secrets in the
// team's namespace and nothing more; a valid config watching the teams'
// namespaces with a tenancy section that scopes its shared credentials;
// and AppProjects that admit each team's namespace and repositories.
func TestInstallMultiTeamOverlay(t *testing.T) {
	r := renderInstall(t, installMultiTeam)
	cm := one[*corev1.ConfigMap](t, r, ownNamespace, "crowsnest-config")
	c, err := config.Parse([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	teams := []string{"team-a", "team-b"}
	for _, ns := range teams {
		if !slices.Contains(c.Watch.Namespaces, ns) {
			t.Errorf("watch.namespaces %q does not include %s", c.Watch.Namespaces, ns)
		}
		role := one[*rbacv1.Role](t, r, ns, "crowsnest-credentials")
		want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
		if !slices.EqualFunc(role.Rules, want, func(a, b rbacv1.PolicyRule) bool {
			return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs)
		}) {
			t.Errorf("Role %s/crowsnest-credentials rules = %+v, want only get on secrets", ns, role.Rules)
		}
		rb := one[*rbacv1.RoleBinding](t, r, ns, "crowsnest-credentials")
		if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "crowsnest" || rb.Subjects[0].Namespace != ownNamespace {
			t.Errorf("RoleBinding %s/crowsnest-credentials subjects = %+v, want crowsnest's ServiceAccount", ns, rb.Subjects)
		}
	}
	for _, cred := range c.Tenancy.Credentials {
		if cred.PullSecret.Source != config.CredsPullSecret && len(cred.Registries) == 0 {
			t.Errorf("tenancy credential %s is not scoped to registries", cred.PullSecret)
		}
	}
	if len(c.Tenancy.GitRepositories) == 0 {
		t.Error("the example shows no tenancy.gitRepositories")
	}

	data, err := os.ReadFile(installMultiTeam + "/appprojects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := splitYAML(t, data)
	if len(docs) != len(teams) {
		t.Fatalf("%d AppProjects, want one per team", len(docs))
	}
	for i, u := range docs {
		p := watcher.ProjectFromObject(u)
		repos, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "sourceRepos")
		nss, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "sourceNamespaces")
		if p.Namespace != argoCDNS || p.Name != teams[i] || len(repos) == 0 || !slices.Equal(nss, []string{teams[i]}) {
			t.Errorf("AppProject %s: sourceRepos %q, sourceNamespaces %q; want %s/%s admitting only %s", p.Key(), repos, nss, argoCDNS, teams[i], teams[i])
		}
	}
}

func splitYAML(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj != nil {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out
}
