package testreg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// distributionBinary is where Debian's docker-registry package (CNCF
// distribution 2.8) installs the registry; hack/apt.sh installs it.
const distributionBinary = "/usr/bin/docker-registry"

// Timings of the real registry: it starts in well under a second, and
// notifications must arrive quickly for tests to wait on them.
const (
	distributionStartTimeout = 30 * time.Second
	distributionStopGrace    = 5 * time.Second
	notifyTimeout            = "2s"
	notifyBackoff            = "100ms"
	notifyThreshold          = 3
)

// DistributionOptions configures StartDistribution.
type DistributionOptions struct {
	// Users maps user names to passwords. When set the registry demands
	// HTTP basic auth (an htpasswd file with bcrypt hashes).
	Users map[string]string
	// NotifyURL, when set, receives the registry's notifications envelope
	// for every push and pull.
	NotifyURL string
	// NotifyHeaders are sent with every notification, e.g.
	// {"Authorization": "Bearer <secret>"}.
	NotifyHeaders map[string]string
}

// Distribution is a real CNCF distribution registry (docker-registry)
// process on 127.0.0.1 with filesystem storage in a temporary folder.
type Distribution struct {
	host  string
	users map[string]string
	proc  *testenv.Process
}

// StartDistribution starts a registry that is stopped when the test ends.
// A missing docker-registry binary fails the test: run hack/apt.sh.
func StartDistribution(tb testing.TB, opts DistributionOptions) *Distribution {
	tb.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		bin = distributionBinary
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("docker-registry (CNCF distribution) is not installed: run hack/apt.sh (%v)", err)
	}
	dir := tb.TempDir()
	host, err := testenv.FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	d := &Distribution{host: host, users: opts.Users}
	cfgPath, err := writeDistributionConfig(dir, d.host, opts)
	if err != nil {
		tb.Fatal(err)
	}
	d.proc = &testenv.Process{
		Name: "docker-registry", Path: bin, Args: []string{"serve", cfgPath},
		LogPath: filepath.Join(dir, "registry.log"),
		Env:     []string{"PATH=/usr/bin:/bin"}, // no REGISTRY_* overrides from the caller
		// Its own process group, so stopping reaches everything it starts.
		Group: true, StopGrace: distributionStopGrace,
	}
	if err := d.proc.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = d.proc.Stop()
		if tb.Failed() {
			tb.Logf("docker-registry log:\n%s", d.Log())
		}
	})
	ctx, cancel := context.WithTimeout(tb.Context(), distributionStartTimeout)
	defer cancel()
	if err := d.proc.WaitReady(ctx, d.ready); err != nil {
		tb.Fatal(err)
	}
	return d
}

// Host is the registry's "127.0.0.1:port", the first part of references.
func (d *Distribution) Host() string { return d.host }

// URL is the registry's base URL.
func (d *Distribution) URL() string { return "http://" + d.host }

// Credentials returns the alphabetically first configured user and its
// password, or two empty strings when the registry is open.
func (d *Distribution) Credentials() (user, password string) {
	users := make([]string, 0, len(d.users))
	for u := range d.users {
		users = append(users, u)
	}
	slices.Sort(users)
	if len(users) == 0 {
		return "", ""
	}
	return users[0], d.users[users[0]]
}

// Auth returns Credentials for go-containerregistry clients.
func (d *Distribution) Auth() authn.Authenticator {
	user, password := d.Credentials()
	if user == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: user, Password: password}
}

// Ref parses "repo:tag" (or "repo@digest") on this registry.
func (d *Distribution) Ref(tb testing.TB, repoTag string) name.Reference {
	tb.Helper()
	ref, err := name.ParseReference(d.host+"/"+repoTag, name.Insecure)
	if err != nil {
		tb.Fatalf("parsing %q: %v", repoTag, err)
	}
	return ref
}

// Log returns what the registry has logged so far.
func (d *Distribution) Log() string {
	data, err := os.ReadFile(d.proc.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(data)
}

// ready asks /v2/ whether the registry answers (401 counts: auth is on).
func (d *Distribution) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL()+"/v2/", http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
		return nil
	}
	return fmt.Errorf("GET /v2/: %s", resp.Status)
}

// writeDistributionConfig writes config.yml (and htpasswd) into dir.
func writeDistributionConfig(dir, addr string, opts DistributionOptions) (string, error) {
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	cfg := map[string]any{
		"version": "0.1",
		"log":     map[string]any{"level": "info", "formatter": "text"},
		"storage": map[string]any{
			"filesystem":  map[string]any{"rootdirectory": filepath.Join(dir, "data")},
			"delete":      map[string]any{"enabled": true},
			"maintenance": map[string]any{"uploadpurging": map[string]any{"enabled": false}},
		},
		"http":   map[string]any{"addr": addr, "secret": hex.EncodeToString(secret)},
		"health": map[string]any{"storagedriver": map[string]any{"enabled": false}},
	}
	if len(opts.Users) > 0 {
		path := filepath.Join(dir, "htpasswd")
		if err := writeHtpasswd(path, opts.Users); err != nil {
			return "", err
		}
		cfg["auth"] = map[string]any{"htpasswd": map[string]any{"realm": "testreg", "path": path}}
	}
	if opts.NotifyURL != "" {
		headers := map[string][]string{}
		for k, v := range opts.NotifyHeaders {
			headers[k] = []string{v}
		}
		cfg["notifications"] = map[string]any{"endpoints": []map[string]any{{
			"name": "test", "url": opts.NotifyURL, "headers": headers,
			"timeout": notifyTimeout, "threshold": notifyThreshold, "backoff": notifyBackoff,
		}}}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("writing registry config: %w", err)
	}
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing registry config: %w", err)
	}
	return path, nil
}

// writeHtpasswd writes bcrypt entries, the only scheme distribution reads.
func writeHtpasswd(path string, users map[string]string) error {
	var buf bytes.Buffer
	for user, password := range users {
		if user == "" || strings.ContainsAny(user, ":\n") {
			return errors.New("htpasswd: user names must be non-empty without ':' or newlines")
		}
		// The lowest cost keeps test start-up fast; nothing here is secret.
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			return fmt.Errorf("htpasswd: %w", err)
		}
		fmt.Fprintf(&buf, "%s:%s\n", user, hash)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("htpasswd: %w", err)
	}
	return nil
}
