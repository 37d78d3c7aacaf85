package git

import (
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// Git over HTTPS verifies the server's certificate and has no switch to
// turn that off: a Git server on 127.0.0.1 behind a self-signed
// certificate is refused with a certificate error (not the token, not a
// retry over plain HTTP), and nothing is pushed.
func TestGitVerifiesTLS(t *testing.T) {
	const token = "git-tls-test-token"
	s, plainURL := seeded(t, testgit.Options{Username: "bot", Password: token})
	before := s.Head(t, "apps", "main")
	backend, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(proxy.Close)
	httpsURL := strings.Replace(plainURL, s.URL, proxy.URL, 1)

	w := newWriter(t, StaticCredentials{Username: "bot", Password: token})
	w.MaxAttempts = 1
	res, err := w.Apply(t.Context(), []Change{kustomizeWeb(httpsURL, "9.9.9")})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Apply over untrusted HTTPS: %v, want a certificate error", err)
	}
	if strings.Contains(err.Error(), token) || (len(res) == 1 && res[0].Err != nil && strings.Contains(res[0].Err.Error(), token)) {
		t.Errorf("error shows the token: %v", err)
	}
	if errors.Is(err, ErrAuth) {
		t.Errorf("a certificate failure reported as refused credentials: %v", err)
	}
	if s.Head(t, "apps", "main") != before {
		t.Error("something was pushed")
	}
	// The same change over the trusted (plain, loopback) URL works: the
	// refusal above was the certificate.
	if _, err := w.Apply(t.Context(), []Change{kustomizeWeb(plainURL, "9.9.9")}); err != nil {
		t.Fatalf("Apply over the plain URL: %v", err)
	}
}
