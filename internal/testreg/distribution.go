package testreg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
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
	host    string
	users   map[string]string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
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
	port, err := freeLocalPort()
	if err != nil {
		tb.Fatal(err)
	}
	d := &Distribution{
		host:    net.JoinHostPort("127.0.0.1", port),
		users:   opts.Users,
		logPath: filepath.Join(dir, "registry.log"),
		done:    make(chan struct{}),
	}
	cfgPath, err := writeDistributionConfig(dir, d.host, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.start(bin, cfgPath); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		d.stop()
		if tb.Failed() {
			tb.Logf("docker-registry log:\n%s", d.Log())
		}
	})
	ctx, cancel := context.WithTimeout(tb.Context(), distributionStartTimeout)
	defer cancel()
	if err := d.waitReady(ctx); err != nil {
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
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(data)
}

func (d *Distribution) start(bin, cfgPath string) error {
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening registry log: %w", err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // no REGISTRY_* overrides from the caller
	// Its own process group so stop reaches everything it starts, and
	// SIGKILL if the test binary dies first, so no registry outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	d.cmd = cmd
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(d.done)
	}()
	return nil
}

func (d *Distribution) stop() {
	pgid := -d.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(distributionStopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-d.done
	}
}

// waitReady polls /v2/ until it answers (401 counts: auth is on).
func (d *Distribution) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL()+"/v2/", http.NoBody)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/: %s", resp.Status)
		}
		last = err
		select {
		case <-d.done:
			return fmt.Errorf("docker-registry exited before it was ready; log:\n%s", d.Log())
		case <-ctx.Done():
			return fmt.Errorf("docker-registry not ready: %w (last: %w); log:\n%s", ctx.Err(), last, d.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeLocalPort asks the kernel for a free port on 127.0.0.1. It is
// released before the registry binds it; a rare collision shows as a
// start error with the registry's log.
func freeLocalPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
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
