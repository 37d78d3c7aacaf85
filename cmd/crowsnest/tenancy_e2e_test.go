package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// tenantSecrets are the credentials of TestE2ETenantsCannotUseOthersPrivileges
// that must never reach the attacker's registry.
var tenantSecrets = map[string]string{
	"token the config assigns to another registry": "ASSIGNED-S3CR3T-1",
	"Argo CD cluster Secret":                       "CLUSTER-S3CR3T-2",
	"crowsnest's environment":                      "ENV-S3CR3T-4",
}

// authRecorder keeps every Authorization header a server received.
type authRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (a *authRecorder) record(r *http.Request) {
	if h := r.Header.Get("Authorization"); h != "" {
		a.mu.Lock()
		a.seen = append(a.seen, h)
		a.mu.Unlock()
	}
}

// decoded returns the headers with Basic credentials decoded.
func (a *authRecorder) decoded() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.seen))
	for _, h := range a.seen {
		if b, ok := strings.CutPrefix(h, "Basic "); ok {
			if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
				h = string(raw)
			}
		}
		out = append(out, h)
	}
	return out
}

// A shared Argo CD, crowsnest installed from examples/install (its RBAC,
// run as its ServiceAccount's token), Applications in Argo CD's
// namespace and in a team's namespace whose annotations try to use
// crowsnest's privileges against others:
//   - a pull-secret naming a Secret in Argo CD's namespace, which the
//     registries config assigns to another registry, from the team's
//     namespace and from Argo CD's own;
//   - a pull-secret naming an Argo CD cluster Secret from Argo CD's
//     namespace;
//   - a pull-secret reading crowsnest's environment;
//   - git-repository pointing at an internal service.
//
// Each is refused with an Event naming the rule, the attacker's registry
// never receives any of those credentials, the internal service is never
// contacted, and what the team may use (its own pull secret, a repository
// its AppProject permits) works, in --dry-run as in a real run.
func TestE2ETenantsCannotUseOthersPrivileges(t *testing.T) {
	attackerAuth := &authRecorder{}
	attacker := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "team", Password: "TEAM-OWN-3"})
	attacker.SetFault(func(_ http.ResponseWriter, r *http.Request) bool { attackerAuth.record(r); return false })
	loot := pushTags(t, attacker, "loot/app", "1.0.0", "1.1.0")
	trusted := testreg.StartOCI(t, testreg.OCIOptions{})
	pub := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, pub, "team/web", "1.0.0", "1.1.0")

	var internalHits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		internalHits.Add(1)
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "INTERNAL-BODY-MARKER")
	}))
	t.Cleanup(internal.Close)
	gitSrv := testgit.Start(t, testgit.Options{})
	gitSrv.CreateRepo(t, "team-a")
	before := gitSrv.Seed(t, "team-a", "main", map[string]string{
		"apps/web/kustomization.yaml": "images:\n- name: " + web + "\n  newTag: 1.0.0\n",
	}, "initial")

	in := applyInstall(t, "", nil)
	team := env.CreateNamespace(t, "team-a")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	// The team lets crowsnest read its own Secrets, as
	// examples/install/overlays/multi-team does per team.
	if _, err := cs.RbacV1().Roles(team).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-pull-secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(team).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "crowsnest-pull-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "crowsnest-pull-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "crowsnest", Namespace: in.own}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: in.argocd, Name: "robot"}, StringData: map[string]string{"token": "robot:" + tenantSecrets["token the config assigns to another registry"]}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: in.argocd, Name: "prod-cluster", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"auth": "admin:" + tenantSecrets["Argo CD cluster Secret"]}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{corev1.DockerConfigJsonKey: fmt.Sprintf(`{"auths":{%q:{"username":"team","password":"TEAM-OWN-3"}}}`, attacker.Host())}},
	}
	for _, s := range secrets {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CROWSNEST_E2E_TENANT_TOKEN", "ci:"+tenantSecrets["crowsnest's environment"])
	// The registries config assigns the robot token to the trusted registry.
	config := configArg(t, in.args)
	appendFile(t, config, fmt.Sprintf("  list:\n  - prefix: %s\n    credentials: secret:%s/robot#token\n", trusted.Host(), in.argocd))
	createProject(t, in.argocd, "team-a", []any{gitSrv.RepoURL("team-a")}, []any{team})

	pullSecret := func(name, ns, secret string) {
		createApp(t, ns, annotatedApp(name, fmt.Sprintf("    argocd-image-updater.argoproj.io/image-list: app=%s:~1\n    argocd-image-updater.argoproj.io/app.pull-secret: %s", loot, secret)), loot+":1.0.0")
	}
	pullSecret("assigned-from-team", team, "secret:"+in.argocd+"/robot#token")
	pullSecret("assigned-from-argocd", in.argocd, "secret:"+in.argocd+"/robot#token")
	pullSecret("cluster-secret", in.argocd, "secret:"+in.argocd+"/prod-cluster#auth")
	pullSecret("environment", team, "env:CROWSNEST_E2E_TENANT_TOKEN")
	pullSecret("own", team, "pullsecret:"+team+"/regcred")
	gitApp := func(name, repo string) {
		createApp(t, team, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%s:~1
    argocd-image-updater.argoproj.io/write-back-method: git
    argocd-image-updater.argoproj.io/write-back-target: kustomization
    argocd-image-updater.argoproj.io/git-repository: %s
spec:
  project: team-a
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: %s, path: apps/web, targetRevision: main}
`, name, web, repo, gitSrv.RepoURL("team-a")), web+":1.0.0")
	}
	gitApp("ssrf", internal.URL+"/internal.git")

	for _, mode := range []struct {
		name string
		args []string
	}{{"dry run", []string{"--dry-run"}}, {"run", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			attackerAuth.mu.Lock()
			attackerAuth.seen = nil
			attackerAuth.mu.Unlock()
			d := startDaemon(t, append(append(append([]string(nil), in.args...), "--namespace="+team), mode.args...)...)
			// What the team may use works: its own pull secret reaches
			// the attacker's registry (so the path that would leak is
			// live), and in a real run its permitted repository gets
			// the commit.
			waitFor(t, "the team's own credentials used", func() bool {
				return strings.Contains(strings.Join(attackerAuth.decoded(), "\n"), "team:TEAM-OWN-3")
			})
			for _, c := range []struct{ ns, app, rule string }{
				{team, "assigned-from-team", "assigns these credentials to other repositories"},
				{in.argocd, "assigned-from-argocd", "assigns these credentials to other repositories"},
				{team, "environment", "credentials from annotations are off"},
			} {
				d.waitLog(t, `"msg":"invalid annotation"`, `"app":"`+c.ns+"/"+c.app+`"`, c.rule)
			}
			d.waitLog(t, `"app":"`+in.argocd+`/cluster-secret"`, "reserved for Argo CD or Kubernetes")
			d.waitLog(t, `"msg":"git write-back refused"`, `"app":"`+team+`/ssrf"`, "spec.sourceRepos")
			if mode.args == nil {
				gitApp("permitted", gitSrv.RepoURL("team-a"))
				waitFor(t, "a commit to the team's permitted repository", func() bool { return gitSrv.Head(t, "team-a", "main") != before })
				waitFor(t, "a WriteBackRefused Event on ssrf naming the rule", func() bool {
					return hasAppEvent(t, team, "ssrf", "WriteBackRefused", "not permitted by AppProject team-a spec.sourceRepos")
				})
				waitFor(t, "an InvalidAnnotation Event on assigned-from-team naming the rule", func() bool {
					return hasAppEvent(t, team, "assigned-from-team", "InvalidAnnotation", "refused by the tenancy rules")
				})
			}
			seen := strings.Join(attackerAuth.decoded(), "\n")
			for what, v := range tenantSecrets {
				if strings.Contains(seen, v) {
					t.Errorf("the attacker's registry received the %s", what)
				}
			}
			if n := internalHits.Load(); n != 0 {
				t.Errorf("the internal service was contacted %d times", n)
			}
			for _, l := range d.lines() {
				if strings.Contains(l, "INTERNAL-BODY-MARKER") {
					t.Errorf("the internal service's answer is in the log: %s", l)
				}
			}
		})
	}
}

// configArg returns the path of the --config file in args.
func configArg(t *testing.T, args []string) string {
	t.Helper()
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--config="); ok {
			return p
		}
	}
	t.Fatalf("no --config in %q", args)
	return ""
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// createProject creates an AppProject in ns.
func createProject(t *testing.T, ns, name string, sourceRepos, sourceNamespaces []any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"sourceRepos": sourceRepos, "sourceNamespaces": sourceNamespaces,
			"destinations": []any{map[string]any{"server": "*", "namespace": "*"}}},
	}}
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(watcher.AppProjectsResource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
