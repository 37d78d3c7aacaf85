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
