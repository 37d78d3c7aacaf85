package git

import (
	"encoding/pem"
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
	_, httpsURL := tlsProxy(t, s, plainURL)

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

// A Git server behind a private CA works once that CA is configured for
// its host (or, explicitly, verification is off for that host only); a
// CA configured for another host changes nothing, and the refusal is not
// retried: the same certificate would come back.
func TestGitTrustsTheCAConfiguredForItsHost(t *testing.T) {
	const token = "git-ca-test-token"
	s, plainURL := seeded(t, testgit.Options{Username: "bot", Password: token})
	proxy, httpsURL := tlsProxy(t, s, plainURL)
	host := strings.TrimPrefix(proxy.URL, "https://")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})

	for _, tc := range []struct {
		name string
		tls  map[string]TLS
		ok   bool
	}{
		{"CA for another host", map[string]TLS{"git.example.com": {CABundle: ca}, "127.0.0.2:" + strings.Split(host, ":")[1]: {InsecureSkipVerify: true}}, false},
		{"CA for this host", map[string]TLS{strings.ToUpper(host): {CABundle: ca}}, true},
		{"verification off for this host", map[string]TLS{host: {InsecureSkipVerify: true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriter(t, StaticCredentials{Username: "bot", Password: token})
			w.TLS = map[string]TLS{}
			for h, v := range tc.tls {
				w.TLS[strings.ToLower(h)] = v
			}
			before := s.Head(t, "apps", "main")
			version := "7.0." + strings.ReplaceAll(tc.name, " ", "-")
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(httpsURL, version)})
			if !tc.ok {
				if !errors.Is(err, ErrUntrusted) {
					t.Fatalf("Apply: %v, want ErrUntrusted", err)
				}
				if len(res) != 1 || res[0].Attempts != 1 {
					t.Errorf("results %+v: want one batch tried once", res)
				}
				if s.Head(t, "apps", "main") != before {
					t.Error("something was pushed")
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply over HTTPS: %v", err)
			}
			if s.Head(t, "apps", "main") == before {
				t.Error("nothing was pushed")
			}
		})
	}
}

// tlsProxy serves the Git server s over HTTPS (httptest's self-signed
// certificate) on 127.0.0.1 and returns it with plainURL's HTTPS twin.
func tlsProxy(t *testing.T, s *testgit.Server, plainURL string) (*httptest.Server, string) {
	t.Helper()
	backend, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(backend))
	t.Cleanup(proxy.Close)
	return proxy, strings.Replace(plainURL, s.URL, proxy.URL, 1)
}
