package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/migrate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// `crowsnest migrate` against a real apiserver, as a ServiceAccount that
// may only get and list: it reads the installation (Applications, an
// AppProject, the notifications ConfigMap and Secret) and reports the
// same as from files, and nothing in the namespace changes (every
// object's resourceVersion, and no object added).
func TestMigrateClusterReadOnlyE2E(t *testing.T) {
	_, ns, dir := e2eCluster(t, "e2e-migrate")
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	dyn := dynamic.NewForConfigOrDie(env.Config)

	// The clean installation's objects, in this test's namespace as Argo
	// CD's.
	data, err := os.ReadFile("testdata/migrate/clean/installation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := migrate.NewInputs("", ns)
	if err := in.AddManifests(data); err != nil {
		t.Fatal(err)
	}
	for key, d := range in.ConfigMaps {
		_, name, _ := strings.Cut(key, "/")
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: d}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for key, d := range in.Secrets {
		_, name, _ := strings.Cut(key, "/")
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: d}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	app, _, _ := strings.Cut(string(data), "\n---\n")
	createApp(t, ns, app, "ghcr.io/acme/shop:2.3.0")
	if _, err := dyn.Resource(watcher.AppProjectsResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default"},
		"spec":     map[string]any{"sourceRepos": []any{"*"}, "destinations": []any{map[string]any{"server": "*", "namespace": "*"}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A ServiceAccount that may read, never write; and one that may not
	// read Secrets.
	full := []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications", "appprojects"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"argocd-image-updater.argoproj.io"}, Resources: []string{"imageupdaters"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
	}
	reader := readOnlyAccount(t, ns, "migrate-reader", full, dir)
	noSecrets := readOnlyAccount(t, ns, "migrate-no-secrets", full[:3], t.TempDir())

	before := namespaceVersions(t, ns)
	out, stderr, code := runMigrate(t, "--kubeconfig", reader, "-n", ns, "--apps-namespace", ns, "-o", "json")
	if code != 0 {
		t.Fatalf("migrate: exit code %d\n%s", code, stderr)
	}
	var rep migrate.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Applications) != 1 || rep.Applications[0].Images == nil || len(rep.Applications[0].Images.Images) != 1 {
		t.Fatalf("applications = %+v, want shop with its image", rep.Applications)
	}
	if got := rep.Applications[0].Notifications; len(got) != 1 || got[0].Status != migrate.StatusDelivers || got[0].Recipient != "deploys" {
		t.Errorf("notifications = %+v, want on-deployed to slack:deploys delivered", got)
	}
	if rep.Summary.ExitCode != 0 || len(rep.Summary.Breaks) != 0 {
		t.Errorf("summary = %+v, want nothing that stops working", rep.Summary)
	}
	for _, v := range in.Secrets {
		for _, val := range v {
			if strings.Contains(out, string(val)) {
				t.Error("the report holds the Secret's value")
			}
		}
	}

	// Without the right to read the notifications Secret the report
	// cannot be made: exit code 2, nothing guessed.
	if _, stderr, code := runMigrate(t, "--kubeconfig", noSecrets, "-n", ns, "--apps-namespace", ns); code != migrateExitUsage || !strings.Contains(stderr, "secrets") {
		t.Errorf("without Secrets: exit code %d, stderr %q; want %d naming the Secret", code, stderr, migrateExitUsage)
	}
	if diff := cmp.Diff(before, namespaceVersions(t, ns)); diff != "" {
		t.Errorf("migrate changed the namespace (-before +after):\n%s", diff)
	}
}

// runMigrate runs the crowsnest binary's migrate command and returns its
// stdout, stderr and exit code.
func runMigrate(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"migrate"}, args...)...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), errOut.String(), code
}

// readOnlyAccount creates a ServiceAccount with rules in ns, waits until
// the apiserver's authorizer grants its first rule, and returns a
// kubeconfig holding its token.
func readOnlyAccount(t *testing.T, ns, name string, rules []rbacv1.PolicyRule, dir string) string {
	t.Helper()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := serviceAccountKubeconfig(t, ns, name, dir)
	user := "system:serviceaccount:" + ns + ":" + name
	last := rules[len(rules)-1]
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: last.Verbs[0], Group: last.APIGroups[0], Resource: last.Resources[0]}
	waitFor(t, "the RoleBinding of "+name+" to take effect", func() bool {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: attrs,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	})
	return kubeconfig
}

// namespaceVersions maps each Application, AppProject, ConfigMap and
// Secret of ns to its resourceVersion.
func namespaceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := t.Context()
	out := map[string]string{}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cms.Items {
		out["ConfigMap "+cms.Items[i].Name] = cms.Items[i].ResourceVersion
	}
	secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		out["Secret "+secrets.Items[i].Name] = secrets.Items[i].ResourceVersion
	}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	for _, r := range []struct {
		kind string
		list func() (*unstructured.UnstructuredList, error)
	}{
		{"Application", func() (*unstructured.UnstructuredList, error) {
			return dyn.Resource(watcher.ApplicationsResource).Namespace(ns).List(ctx, metav1.ListOptions{})
		}},
		{"AppProject", func() (*unstructured.UnstructuredList, error) {
			return dyn.Resource(watcher.AppProjectsResource).Namespace(ns).List(ctx, metav1.ListOptions{})
		}},
	} {
		l, err := r.list()
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			out[r.kind+" "+l.Items[i].GetName()] = l.Items[i].GetResourceVersion()
		}
	}
	return out
}
