package registry

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// A registry on 127.0.0.1 with a self-signed certificate is refused by
// default, with a certificate error and no plain-HTTP fallback; a CA pool
// holding its certificate, or Insecure for that host only, lets it
// through, and another host keeps verifying.
func TestRegistryVerifiesTLSByDefault(t *testing.T) {
	srv := httptest.NewUnstartedServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	var hellos atomic.Int32 // TLS handshakes begun: attempts over HTTPS
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		hellos.Add(1)
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	ref, err := name.ParseReference(host + "/team/web:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, testreg.Image(t, t0, "linux/amd64"), remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	repo, err := ParseRepo(host + "/team/web")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		hosts  Hosts
		wantOK bool
	}{
		{"default", fastHosts, false},
		{"insecure for another host", perHost{hosts: map[string]HostConfig{host: fast()}, others: with(func(c *HostConfig) { c.Insecure = true })}, false},
		{"a CA pool without the certificate", sameHosts(with(func(c *HostConfig) {
			c.TLS = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
		})), false},
		{"a CA pool with the certificate", sameHosts(with(func(c *HostConfig) {
			c.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		})), true},
		{"insecure for this host", perHost{hosts: map[string]HostConfig{host: with(func(c *HostConfig) { c.Insecure = true })}, others: fast()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{Hosts: tt.hosts}
			hellos.Store(0)
			tags, err := c.ListTags(t.Context(), repo)
			if tt.wantOK {
				if err != nil || !slices.Equal(tags, []string{"1.0.0"}) {
					t.Fatalf("tags %v, %v; want [1.0.0]", tags, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("tags %v, err %v; want a certificate error", tags, err)
			}
			// A refused certificate is a configuration error: said so, and
			// not retried (the same certificate comes back).
			if !strings.Contains(err.Error(), "not trusted") {
				t.Errorf("error %q does not say the certificate is not trusted", err)
			}
			if n := hellos.Load(); n != 1 {
				t.Errorf("%d TLS handshakes for a refused certificate, want 1 (no retries)", n)
			}
		})
	}
}

// with returns fast settings changed by edit.
func with(edit func(*HostConfig)) HostConfig {
	c := fast()
	edit(&c)
	return c
}
