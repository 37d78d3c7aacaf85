package setup

import (
	"encoding/pem"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// git.tls in the config reaches the pushes: a Git server behind a private
// CA (the real git http-backend behind a TLS proxy on 127.0.0.1) takes a
// commit once the config names the CA's file for its host, and a CA file
// that is not PEM stops the start with the field and the problem.
func TestGitWriterTrustsTheConfiguredCA(t *testing.T) {
	srv := testgit.Start(t, testgit.Options{})
	srv.CreateRepo(t, "deploy")
	before := srv.Seed(t, "deploy", "main", map[string]string{"web/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n"}, "seed")
	backend, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(proxy.Close)
	repoURL := strings.Replace(srv.RepoURL("deploy"), srv.URL, proxy.URL, 1)
	host := strings.TrimPrefix(proxy.URL, "https://")

	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(caFile string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\ngit:\n  tls:\n    " + host + ":\n      caFile: " + caFile + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, err := NewGitWriter(load(caFile), filepath.Join(dir, "cache"), nil, nil, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	change := gitwb.Change{App: "web", RepoURL: repoURL, Branch: "main", Path: "web",
		Target: gitwb.Target{Kind: gitwb.TargetKustomization}, Images: []gitwb.Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0"}}}
	if _, err := w.Apply(t.Context(), []gitwb.Change{change}); err != nil {
		t.Fatalf("push over HTTPS with the configured CA: %v", err)
	}
	if srv.Head(t, "deploy", "main") == before {
		t.Fatal("nothing was pushed")
	}
	if got, _ := srv.ReadFile(t, "deploy", "main", "web/kustomization.yaml"); !strings.Contains(got, "newTag: 1.1.0") {
		t.Errorf("kustomization.yaml after the push:\n%s", got)
	}

	bad := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = NewGitWriter(load(bad), filepath.Join(dir, "cache"), nil, nil, log, nil)
	if err == nil || !strings.Contains(err.Error(), "git.tls["+host+"]") || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("newGitWriter with a non-PEM CA file: %v, want the field and the problem", err)
	}
}

// The pull request settings of the git and registries sections reach the
// writer, and a template naming a field that does not exist stops the
// start (and `config validate`, which builds the writer) with the key.
func TestGitWriterPullRequestTemplatesAndLinks(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  pullRequestTitle: "deploy {{len .Updates}} images to {{.Base}}"
registries:
  list:
    - prefix: harbor.example.com/team
      link: "https://harbor.example.com/harbor/projects/{{.Repository}}?tag={{.Tag}}"
    - prefix: registry.local:5000
      default: true
`))
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewGitWriter(cfg, t.TempDir(), nil, nil, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.PullRequestTitle == nil || w.PullRequestBody != nil {
		t.Errorf("templates: title %v, body %v; want the configured title and the default body", w.PullRequestTitle, w.PullRequestBody)
	}
	for _, tc := range []struct{ image, version, want string }{
		{"harbor.example.com/team/web", "1.2.0@sha256:abc", "https://harbor.example.com/harbor/projects/team/web?tag=1.2.0"},
		{"harbor.example.com/other/web", "1.2.0", ""}, // outside the entry's prefix, not well known
		{"docker.io/library/nginx", "1.27", "https://hub.docker.com/_/nginx/tags?name=1.27"},
		{"nginx", "1.27", ""}, // the default registry here is registry.local:5000, not Docker Hub
	} {
		if got := w.RegistryLinks.Link(tc.image, tc.version); got != tc.want {
			t.Errorf("Link(%q, %q) = %q, want %q", tc.image, tc.version, got, tc.want)
		}
	}

	for _, tc := range []struct{ yaml, want string }{
		{"git:\n  pullRequestBody: \"{{range .Updates}}{{.Tag}}{{end}}\"\n", "git.pullRequestBody: rendering pull request body template"},
		{"git:\n  pullRequestTitle: \"{{.Application}}\"\n", "git.pullRequestTitle: rendering pull request title template"},
	} {
		cfg, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n" + tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckConfig(cfg, t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckConfig(%q) = %v, want an error starting %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nregistries:\n  list:\n    - prefix: r.example.com\n      link: \"javascript:{{.Tag}}\"\n")); err == nil ||
		!strings.Contains(err.Error(), "registries.list[0].link") || !strings.Contains(err.Error(), "https://") {
		t.Errorf("a link that is not https: %v, want an error naming registries.list[0].link", err)
	}
}
