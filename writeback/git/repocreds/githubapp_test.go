package repocreds_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// An Argo CD repository Secret with a GitHub App (githubAppID,
// githubAppInstallationID, githubAppPrivateKey, githubAppEnterpriseBaseUrl)
// pushes with the installation's token as Argo CD does: the token is
// exchanged at the API with the app's JWT, once, and kept for the next
// writes; a Secret with a broken GitHub App field fails naming it.
func TestGitHubAppRepositoryCredentials(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	const token = "ghs_installation-token"
	var mu sync.Mutex
	var exchanges []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		exchanges = append(exchanges, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/api/v3/app/installations/42/access_tokens" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ey") {
			http.Error(w, "unexpected", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	}))
	t.Cleanup(api.Close)

	srv := testgit.Start(t, testgit.Options{Username: "x-access-token", Password: token})
	srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{"web/kustomization.yaml": "images:\n  - name: ghcr.io/acme/web\n    newTag: 1.0.0\n"}, "seed")
	repoURL := srv.RepoURL("apps") // without credentials

	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "argocd")
	secret := func(name, url string, data map[string]string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{typeLabel: "repository"}},
			StringData: map[string]string{"url": url}}
		for k, v := range data {
			s.StringData[k] = v
		}
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("app", repoURL, map[string]string{"githubAppID": "7", "githubAppInstallationID": "42", "githubAppPrivateKey": keyPEM,
		"githubAppEnterpriseBaseUrl": api.URL + "/api/v3"})
	secret("broken", "https://git.example.com/org/broken.git", map[string]string{"githubAppID": "seven", "githubAppPrivateKey": keyPEM})

	w := &gitwb.Writer{CacheDir: t.TempDir(), Credentials: &repocreds.ArgoCD{Client: cs, Namespace: ns}, MaxAttempts: 1,
		Metrics: gitwb.NewMetrics(prometheus.NewRegistry())}
	change := func(repo, tag string) []gitwb.Change {
		return []gitwb.Change{{App: "web", RepoURL: repo, Branch: "main", Path: "web", Target: gitwb.Target{Kind: gitwb.TargetKustomization},
			Images: []gitwb.Image{{Name: "ghcr.io/acme/web", NewTag: tag}}}}
	}
	for _, tag := range []string{"1.1.0", "1.2.0"} {
		if _, err := w.Apply(t.Context(), change(repoURL, tag)); err != nil {
			t.Fatalf("pushing %s with the app's token: %v", tag, err)
		}
		if got, _ := srv.ReadFile(t, "apps", "main", "web/kustomization.yaml"); !strings.Contains(got, "newTag: "+tag) {
			t.Fatalf("after the push of %s: %q", tag, got)
		}
	}
	mu.Lock()
	got := strings.Join(exchanges, "; ")
	mu.Unlock()
	if got != "POST /api/v3/app/installations/42/access_tokens" {
		t.Errorf("token exchanges = %q, want one POST for installation 42 (the token is kept)", got)
	}

	_, err = w.Apply(t.Context(), change("https://git.example.com/org/broken.git", "1.1.0"))
	if err == nil || !strings.Contains(err.Error(), "githubAppID: want a positive integer") || !strings.Contains(err.Error(), "githubAppInstallationID") {
		t.Errorf("a Secret with a broken GitHub App: %v, want an error naming githubAppID and githubAppInstallationID", err)
	}
	if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Error("the error shows the private key")
	}
}
