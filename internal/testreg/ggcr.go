package testreg

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crowsnest-dev/crowsnest/internal/ocireq"
)

// AuthMode is how an OCI test registry demands credentials.
type AuthMode int

// Auth modes: none, HTTP basic on every request, or the bearer token
// dance Docker Hub and most registries use (401 challenge, token
// endpoint taking basic credentials, Bearer on every later request).
const (
	AuthNone AuthMode = iota
	AuthBasic
	AuthBearer
)

// OCIOptions configures StartOCI.
type OCIOptions struct {
	Auth     AuthMode
	Username string
	Password string
	// RepoCredentials gives the repositories under a path ("team-a"
	// covers team-a/app) their own user name and password instead of
	// Username and Password, the longest path winning, as registries
	// with per-project robots do. AuthBasic only.
	RepoCredentials map[string]Credentials
	// Referrers turns on the OCI 1.1 referrers API; without it clients
	// fall back to the referrers tag schema.
	Referrers bool
}

// Credentials are a user name and password.
type Credentials struct{ Username, Password string }

// Request is one request the registry saw, classified by Kind as the
// registry client's metrics are (ocireq.Kind): "ping", "token", "list",
// "head", "manifest", "blob" or "other".
type Request struct {
	Method string
	Path   string
	Kind   string
	Status int
}

// OCI is go-containerregistry's in-memory registry (pkg/registry) on an
// httptest server on 127.0.0.1, behind an auth handler, recording every
// request and open to injected faults.
type OCI struct {
	Server *httptest.Server
	opts   OCIOptions

	mu       sync.Mutex
	requests []Request
	tokens   map[string]bool
	fault    func(w http.ResponseWriter, r *http.Request) bool
}

// StartOCI starts a registry that stops when the test ends.
func StartOCI(tb testing.TB, opts OCIOptions) *OCI {
	tb.Helper()
	o := &OCI{opts: opts, tokens: map[string]bool{}}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(opts.Referrers))
	o.Server = httptest.NewServer(o.handler(reg))
	tb.Cleanup(o.Server.Close)
	return o
}

// Host is the registry's host:port, the first part of image references.
func (o *OCI) Host() string { return strings.TrimPrefix(o.Server.URL, "http://") }

// Auth returns the registry's credentials for clients.
func (o *OCI) Auth() authn.Authenticator {
	if o.opts.Auth == AuthNone {
		return authn.Anonymous
	}
	return &authn.Basic{Username: o.opts.Username, Password: o.opts.Password}
}

// SetCredentials changes the accepted credentials and revokes every
// issued token, as a password rotation would.
func (o *OCI) SetCredentials(user, password string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opts.Username, o.opts.Password = user, password
	o.tokens = map[string]bool{}
}

// SetFault installs a hook that sees every request first; returning true
// means it answered the request itself. nil removes it. The hook may take
// the connection over with http.NewResponseController(w).Hijack() to drop
// it or write a broken response.
func (o *OCI) SetFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fault = f
}

// Requests returns every request seen so far.
func (o *OCI) Requests() []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Request(nil), o.requests...)
}

// Count returns how many requests of a kind were served, optionally only
// for paths containing substr.
func (o *OCI) Count(kind, substr string) int {
	n := 0
	for _, r := range o.Requests() {
		if r.Kind == kind && strings.Contains(r.Path, substr) {
			n++
		}
	}
	return n
}

// Reset forgets recorded requests.
func (o *OCI) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = nil
}

func (o *OCI) handler(reg http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			o.mu.Lock()
			o.requests = append(o.requests, Request{Method: r.Method, Path: r.URL.Path, Kind: ocireq.Kind(r), Status: rec.status})
			o.mu.Unlock()
		}()
		o.mu.Lock()
		fault := o.fault
		o.mu.Unlock()
		if fault != nil && fault(rec, r) {
			return
		}
		if r.URL.Path == "/token" {
			o.serveToken(rec, r)
			return
		}
		if !o.authorized(r) {
			o.challenge(rec)
			return
		}
		reg.ServeHTTP(rec, r)
	})
}

func (o *OCI) authorized(r *http.Request) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch o.opts.Auth {
	case AuthBasic:
		u, p, ok := r.BasicAuth()
		want := o.credentialsFor(strings.TrimPrefix(r.URL.Path, "/v2/"))
		return ok && u == want.Username && p == want.Password
	case AuthBearer:
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return ok && o.tokens[tok]
	default:
		return true
	}
}

// credentialsFor returns the credentials a repository path (with
// anything after it) demands. The caller holds o.mu.
func (o *OCI) credentialsFor(path string) Credentials {
	best, bestLen := Credentials{Username: o.opts.Username, Password: o.opts.Password}, -1
	for prefix, c := range o.opts.RepoCredentials {
		if strings.HasPrefix(path, prefix+"/") && len(prefix) > bestLen {
			best, bestLen = c, len(prefix)
		}
	}
	return best
}

func (o *OCI) challenge(w http.ResponseWriter) {
	if o.opts.Auth == AuthBasic {
		w.Header().Set("WWW-Authenticate", `Basic realm="testreg"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+o.Server.URL+`/token",service="testreg"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
}

func (o *OCI) serveToken(w http.ResponseWriter, r *http.Request) {
	u, p, ok := r.BasicAuth()
	o.mu.Lock()
	good := ok && u == o.opts.Username && p == o.opts.Password
	var tok string
	if good {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		tok = hex.EncodeToString(b)
		o.tokens[tok] = true
	}
	o.mu.Unlock()
	if !good {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": 300})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection underneath, so a
// fault hook can hijack it to reset it or cut a response short.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Ref parses "repo:tag" on this registry.
func (o *OCI) Ref(tb testing.TB, repoTag string) name.Reference {
	tb.Helper()
	ref, err := name.ParseReference(o.Host() + "/" + repoTag)
	if err != nil {
		tb.Fatalf("parsing %q: %v", repoTag, err)
	}
	return ref
}

// Push writes an image or index to repo:tag without recording requests.
func (o *OCI) Push(tb testing.TB, repoTag string, img remote.Taggable) {
	tb.Helper()
	ref := o.Ref(tb, repoTag)
	auth := o.Auth()
	if o.opts.Auth == AuthBasic {
		o.mu.Lock()
		c := o.credentialsFor(repoTag)
		o.mu.Unlock()
		auth = &authn.Basic{Username: c.Username, Password: c.Password}
	}
	opts := []remote.Option{remote.WithAuth(auth), remote.WithContext(tb.Context())}
	var err error
	switch v := img.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, v, opts...)
	case v1.Image:
		err = remote.Write(ref, v, opts...)
	default:
		tb.Fatalf("push %s: unsupported %T", repoTag, img)
	}
	if err != nil {
		tb.Fatalf("push %s: %v", repoTag, err)
	}
	o.Reset()
}

// Image returns a small random image whose config says it was created at
// created for the platform "os/arch[/variant]" ("" keeps linux/amd64).
func Image(tb testing.TB, created time.Time, platform string) v1.Image {
	tb.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		tb.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		tb.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created.UTC()}
	p := parsePlatform(platform)
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// Labeled returns img with labels in its config, as docker build --label
// and docker/metadata-action write them.
func Labeled(tb testing.TB, img v1.Image, labels map[string]string) v1.Image {
	tb.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		tb.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// Index returns a multi-arch index with one random image per platform,
// each created at the time given for it.
func Index(tb testing.TB, created map[string]time.Time) v1.ImageIndex {
	tb.Helper()
	var adds []mutate.IndexAddendum
	for platform, t := range created {
		p := parsePlatform(platform)
		adds = append(adds, mutate.IndexAddendum{
			Add:        Image(tb, t, platform),
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return idx
}

func parsePlatform(s string) v1.Platform {
	if s == "" {
		return v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	parts := strings.SplitN(s, "/", 3)
	p := v1.Platform{OS: parts[0]}
	if len(parts) > 1 {
		p.Architecture = parts[1]
	}
	if len(parts) > 2 {
		p.Variant = parts[2]
	}
	return p
}

// BasicHeader is the Authorization header value for user:password.
func BasicHeader(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}
