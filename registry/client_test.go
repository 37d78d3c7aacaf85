package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fast is a host's settings that keep retries quick in tests.
func fast() HostConfig {
	return HostConfig{RateLimit: -1, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 50 * time.Millisecond, AttemptTimeout: 2 * time.Second}
}

// fastHosts gives every host fast settings.
var fastHosts = sameHosts(fast())

// sameHosts is Hosts that gives every host the same settings.
type sameHosts HostConfig

func (s sameHosts) HostConfig(string) HostConfig { return HostConfig(s) }

// perHost is Hosts that gives some hosts settings of their own and the
// others the same.
type perHost struct {
	hosts  map[string]HostConfig
	others HostConfig
}

func (p perHost) HostConfig(host string) HostConfig {
	if c, ok := p.hosts[host]; ok {
		return c
	}
	return p.others
}

// staticAuth hands out credentials from a store, caching them until
// Invalidate, like a real resolver.
type staticAuth struct {
	mu          sync.Mutex
	user, pass  string
	cached      authn.Authenticator
	invalidated int
}

func (a *staticAuth) Authenticator(context.Context, string) (authn.Authenticator, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cached == nil {
		a.cached = &authn.Basic{Username: a.user, Password: a.pass}
	}
	return a.cached, nil
}

func (a *staticAuth) Invalidate(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cached = nil
	a.invalidated++
}

func (a *staticAuth) set(user, pass string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.user, a.pass = user, pass
}

func repoOf(t *testing.T, reg *testreg.OCI, path string) Repository {
	t.Helper()
	r, err := ParseRepo(reg.Host() + "/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestListTagsWithEachAuthMode(t *testing.T) {
	for _, mode := range []testreg.AuthMode{testreg.AuthNone, testreg.AuthBasic, testreg.AuthBearer} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: mode, Username: "robot", Password: "s3cret"})
			for _, tag := range []string{"1.0.0", "1.1.0", "latest"} {
				reg.Push(t, "team/app:"+tag, testreg.Image(t, t0, ""))
			}
			c := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "robot", pass: "s3cret"}}
			got, err := c.ListTags(t.Context(), repoOf(t, reg, "team/app"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"1.0.0", "1.1.0", "latest"}, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnonymousAgainstAuthenticatedRegistryFailsClearly(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: "s3cret"})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	c := &Client{Hosts: fastHosts}
	_, err := c.ListTags(t.Context(), repoOf(t, reg, "app"))
	if err == nil || !isAuthError(err) {
		t.Fatalf("want an authentication error, got %v", err)
	}
}

func TestRefusedCredentialsAreRefreshedOnce(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: "old"})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	auth := &staticAuth{user: "robot", pass: "old"}
	m := NewMetrics(prometheus.NewRegistry())
	c := &Client{Hosts: fastHosts, Auth: auth, Metrics: m}
	repo := repoOf(t, reg, "app")
	if _, err := c.ListTags(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	// The password rotates: the registry revokes tokens, the secret store
	// has the new one, the cached credentials are stale.
	reg.SetCredentials("robot", "new")
	auth.set("robot", "new")
	if _, err := c.ListTags(t.Context(), repo); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if auth.invalidated != 1 {
		t.Errorf("credentials invalidated %d times, want 1", auth.invalidated)
	}
	if got := testutil.ToFloat64(m.retries.WithLabelValues(reg.Host(), "auth")); got != 1 {
		t.Errorf("auth retries metric = %v, want 1", got)
	}
	// Wrong credentials everywhere: one retry, then a clear error.
	auth.set("robot", "wrong")
	reg.SetCredentials("robot", "newer")
	if _, err := c.ListTags(t.Context(), repo); err == nil || !isAuthError(err) {
		t.Fatalf("want an authentication error with wrong credentials, got %v", err)
	}
	if auth.invalidated != 2 {
		t.Errorf("credentials invalidated %d times, want 2 (one retry only)", auth.invalidated)
	}
}

func TestTagsAreListedOnceForManyCallers(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	for i := range 10 {
		reg.Push(t, fmt.Sprintf("repo%d:1.0.%d", i, i), testreg.Image(t, t0, ""))
	}
	now := t0
	var clock sync.Mutex
	c := &Client{Hosts: fastHosts, TagTTL: time.Minute, Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }}
	// 200 Applications over 10 repositories, all asking at once.
	lookup := func() {
		var wg sync.WaitGroup
		for app := range 200 {
			wg.Go(func() {
				tags, err := c.Tags(t.Context(), repoOf(t, reg, fmt.Sprintf("repo%d", app%10)), 0)
				if err != nil || len(tags) != 1 {
					t.Errorf("app %d: tags %v, err %v", app, tags, err)
				}
			})
		}
		wg.Wait()
	}
	lookup()
	if n := reg.Count("list", ""); n != 10 {
		t.Errorf("first round: %d tag-list requests, want 10", n)
	}
	lookup()
	if n := reg.Count("list", ""); n != 10 {
		t.Errorf("second round inside the TTL: %d tag-list requests, want still 10", n)
	}
	clock.Lock()
	now = now.Add(time.Minute)
	clock.Unlock()
	lookup()
	if n := reg.Count("list", ""); n != 20 {
		t.Errorf("after the TTL: %d tag-list requests, want 20", n)
	}
	c.MarkStale(RepoKey(repoOf(t, reg, "repo3")))
	lookup()
	if n := reg.Count("list", "repo3"); n != 3 {
		t.Errorf("after MarkStale: %d tag-list requests for repo3, want 3", n)
	}
}

// CachedTags answers what Tags would answer from its cache, and nothing
// else: never a list of its own.
func TestCachedTagsNeverLists(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "repo:1.0.0", testreg.Image(t, t0, ""))
	now := t0
	c := &Client{Hosts: fastHosts, TagTTL: time.Minute, Now: func() time.Time { return now }}
	repo := repoOf(t, reg, "repo")
	if tags, ok := c.CachedTags(repo, 0); ok {
		t.Errorf("before any list: cached %v", tags)
	}
	if _, err := c.Tags(t.Context(), repo, 0); err != nil {
		t.Fatal(err)
	}
	if tags, ok := c.CachedTags(repo, 0); !ok || len(tags) != 1 || tags[0] != "1.0.0" {
		t.Errorf("after a list: cached %v, %v; want [1.0.0]", tags, ok)
	}
	now = now.Add(time.Minute)
	if _, ok := c.CachedTags(repo, 0); ok {
		t.Error("cached past the TTL")
	}
	if _, ok := c.CachedTags(repo, time.Hour); !ok {
		t.Error("not cached within a longer maxAge")
	}
	c.MarkStale(RepoKey(repo))
	if _, ok := c.CachedTags(repo, time.Hour); ok {
		t.Error("cached after MarkStale")
	}
	if n := reg.Count("list", ""); n != 1 {
		t.Errorf("%d tag lists, want the one Tags made", n)
	}
}

func TestMetadataOfImagesAndIndexes(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "u", Password: "p"})
	reg.Push(t, "app:single", testreg.Image(t, t0, "linux/arm64/v8"))
	reg.Push(t, "app:multi", testreg.Index(t, map[string]time.Time{
		"linux/amd64":    t0.Add(time.Hour),
		"linux/arm64/v8": t0.Add(2 * time.Hour),
		"windows/amd64":  t0.Add(3 * time.Hour),
	}))
	c := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "u", pass: "p"}}
	repo := repoOf(t, reg, "app")

	md, err := c.Metadata(t.Context(), repo, "single", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Metadata{Digest: md.Digest, Created: t0, Platforms: []policy.Platform{{OS: "linux", Architecture: "arm64", Variant: "v8"}}}
	if diff := cmp.Diff(want, md); diff != "" || md.Digest == "" {
		t.Errorf("single image metadata (-want +got):\n%s", diff)
	}

	linux := []policy.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	md, err = c.Metadata(t.Context(), repo, "multi", linux)
	if err != nil {
		t.Fatal(err)
	}
	if !md.Created.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("index created = %v, want the newest wanted child %v (windows is newer but not wanted)", md.Created, t0.Add(2*time.Hour))
	}
	if len(md.Platforms) != 3 || len(md.CreatedByPlatform) != 2 {
		t.Errorf("platforms %v, created by platform %v: want 3 platforms, 2 read", md.Platforms, md.CreatedByPlatform)
	}
	// Digest checks use HEAD; only the wanted children's configs are read.
	if n := reg.Count("head", ""); n != 2 {
		t.Errorf("%d HEAD requests, want 2 (one per tag)", n)
	}
	if n := reg.Count("blob", ""); n != 3 {
		t.Errorf("%d blob GETs, want 3 (one config for the image, two for wanted index children)", n)
	}

	// Everything keyed by digest is fetched once: a second look within the
	// TTL asks nothing, and after it only the HEADs repeat.
	before := len(reg.Requests())
	if _, err := c.Metadata(t.Context(), repo, "multi", linux); err != nil {
		t.Fatal(err)
	}
	if n := len(reg.Requests()) - before; n != 0 {
		t.Errorf("cached metadata made %d requests, want 0", n)
	}
	c.MarkStale(RepoKey(repo))
	manifests, blobs := reg.Count("manifest", ""), reg.Count("blob", "")
	if _, err := c.Metadata(t.Context(), repo, "multi", linux); err != nil {
		t.Fatal(err)
	}
	if reg.Count("manifest", "") != manifests || reg.Count("blob", "") != blobs {
		t.Errorf("metadata of a seen digest was fetched again")
	}
	if n := reg.Count("head", ""); n != 3 {
		t.Errorf("%d HEAD requests after MarkStale, want 3", n)
	}
}

func TestRegistryFaults(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	repo := repoOf(t, reg, "app")
	newClient := func() (*Client, *Metrics) {
		m := NewMetrics(prometheus.NewRegistry())
		return &Client{Hosts: fastHosts, Metrics: m}, m
	}

	t.Run("429 Retry-After is waited out", func(t *testing.T) {
		var mu sync.Mutex
		var times []time.Time
		reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == "/v2/" {
				return false
			}
			times = append(times, time.Now())
			if len(times) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return true
			}
			return false
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		c, m := newClient()
		if _, err := c.ListTags(t.Context(), repo); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(times) != 2 {
			t.Fatalf("%d list requests, want 2", len(times))
		}
		if gap := times[1].Sub(times[0]); gap < time.Second {
			t.Errorf("retried %v after a 429 with Retry-After: 1", gap)
		}
		if got := testutil.ToFloat64(m.waits.WithLabelValues(reg.Host(), "retry-after")); got != 1 {
			t.Errorf("retry-after waits = %v, want 1", got)
		}
	})

	t.Run("429 asking too long fails at once", func(t *testing.T) {
		reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/" {
				return false
			}
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		c, _ := newClient()
		_, err := c.ListTags(t.Context(), repo)
		if !errors.Is(err, ErrRateLimited) {
			t.Fatalf("want ErrRateLimited, got %v", err)
		}
	})

	t.Run("5xx retries then succeeds", func(t *testing.T) {
		var n atomic.Int32
		reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != "/v2/" && n.Add(1) <= 2 {
				w.WriteHeader(http.StatusBadGateway)
				return true
			}
			return false
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		c, m := newClient()
		if _, err := c.ListTags(t.Context(), repo); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(m.retries.WithLabelValues(reg.Host(), "5xx")); got != 2 {
			t.Errorf("5xx retries = %v, want 2", got)
		}
		if got := testutil.ToFloat64(m.requests.WithLabelValues(reg.Host(), "list", "502")); got != 2 {
			t.Errorf("502 list requests metric = %v, want 2", got)
		}
	})

	t.Run("5xx gives up with a clear error", func(t *testing.T) {
		var n atomic.Int32
		reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/" {
				return false
			}
			n.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		c, _ := newClient()
		_, err := c.ListTags(t.Context(), repo)
		var re *RetryError
		if !errors.As(err, &re) || re.Attempts != DefaultMaxAttempts {
			t.Fatalf("want a RetryError after %d attempts, got %v", DefaultMaxAttempts, err)
		}
		if n.Load() != DefaultMaxAttempts {
			t.Errorf("server saw %d requests, want %d", n.Load(), DefaultMaxAttempts)
		}
		if msg := err.Error(); !contains(msg, "503") || !contains(msg, "giving up after 4 attempts") {
			t.Errorf("error %q does not say what happened", msg)
		}
	})

	t.Run("timeouts retry then give up", func(t *testing.T) {
		var n atomic.Int32
		reg.SetFault(func(_ http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/" {
				return false
			}
			n.Add(1)
			<-r.Context().Done() // hang until the client gives up
			return true
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		h := fast()
		h.AttemptTimeout = 100 * time.Millisecond
		h.MaxAttempts = 3
		c := &Client{Hosts: sameHosts(h)}
		_, err := c.ListTags(t.Context(), repo)
		var re *RetryError
		if !errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want a RetryError of 3 timeouts, got %v", err)
		}
		if n.Load() != 3 {
			t.Errorf("server saw %d requests, want 3", n.Load())
		}
	})

	t.Run("truncated bodies are errors", func(t *testing.T) {
		reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path == "/v2/" || r.Method == http.MethodHead {
				return false
			}
			w.Header().Set("Content-Length", "4096")
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"tags":["1",`))
			return true
		})
		t.Cleanup(func() { reg.SetFault(nil) })
		c, _ := newClient()
		if _, err := c.ListTags(t.Context(), repo); err == nil {
			t.Error("truncated tag list: no error")
		}
		if _, err := c.Metadata(t.Context(), repo, "1", nil); err == nil {
			t.Error("truncated manifest: no error")
		}
	})
}

func TestRateLimitPacesRequests(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	m := NewMetrics(prometheus.NewRegistry())
	c := &Client{Metrics: m, Hosts: sameHosts{RateLimit: 50, Burst: 1, MaxConcurrency: 1}}
	for range 5 {
		if _, err := c.ListTags(t.Context(), repoOf(t, reg, "app")); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(m.waits.WithLabelValues(reg.Host(), "rate")); got < 1 {
		t.Errorf("rate waits = %v, want some with burst 1", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues(reg.Host(), "list", "200")); got != 5 {
		t.Errorf("list requests metric = %v, want 5", got)
	}
}

// The default burst is five seconds of the default rate: a cold start
// lists a hundred repositories without pacing, and the rate holds after.
func TestDefaultBurstListsAHundredRepositoriesAtOnce(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	m := NewMetrics(prometheus.NewRegistry())
	c := &Client{Metrics: m, Hosts: sameHosts{}}
	list := func(n int) {
		t.Helper()
		for range n {
			if _, err := c.ListTags(t.Context(), repoOf(t, reg, "app")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One token goes to the ping.
	list(DefaultRateLimit*int(DefaultBurstWindow/time.Second) - 1)
	if got := testutil.ToFloat64(m.waits.WithLabelValues(reg.Host(), "rate")); got != 0 {
		t.Errorf("rate waits within the burst = %v, want 0", got)
	}
	list(40)
	if got := testutil.ToFloat64(m.waits.WithLabelValues(reg.Host(), "rate")); got < 1 {
		t.Errorf("rate waits past the burst = %v, want some", got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A registry that pages tag lists with Link headers, as the distribution
// spec describes (n and last): the client follows every page.
func TestListTagsFollowsPages(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	var all []string
	for i := range 23 {
		all = append(all, fmt.Sprintf("v%02d", i))
	}
	var pages atomic.Int32
	reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		pages.Add(1)
		q := r.URL.Query()
		n, err := strconv.Atoi(q.Get("n"))
		if err != nil || n <= 0 {
			n = len(all)
		}
		i, _ := slices.BinarySearch(all, q.Get("last"))
		if q.Get("last") != "" && i < len(all) && all[i] == q.Get("last") {
			i++
		}
		page := all[i:min(i+n, len(all))]
		if i+n < len(all) {
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=%d&last=%s>; rel="next"`, r.URL.Path, n, page[len(page)-1]))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "team/app", "tags": page})
		return true
	})
	h := fast()
	h.PageSize = 5
	c := &Client{Hosts: sameHosts(h)}
	repo, err := ParseRepo(reg.Host() + "/team/app")
	if err != nil {
		t.Fatal(err)
	}
	tags, err := c.ListTags(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tags, all) {
		t.Errorf("tags = %v, want %v", tags, all)
	}
	if got := pages.Load(); got != 5 {
		t.Errorf("%d page requests, want 5 (23 tags in pages of 5)", got)
	}
}

// The registry is pinged (GET /v2/) once, however many repositories are
// opened, and once more after the credentials are refreshed; each
// repository still gets its own token.
func TestPingOncePerRegistryAndCredentials(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: "old"})
	repos := []string{"team/a", "team/b", "team/c"}
	for _, r := range repos {
		reg.Push(t, r+":1", testreg.Image(t, t0, ""))
	}
	auth := &staticAuth{user: "robot", pass: "old"}
	c := &Client{Hosts: fastHosts, Auth: auth}
	for _, r := range repos {
		if _, err := c.ListTags(t.Context(), repoOf(t, reg, r)); err != nil {
			t.Fatal(err)
		}
	}
	if pings, tokens := reg.Count("ping", ""), reg.Count("token", ""); pings != 1 || tokens != len(repos) {
		t.Errorf("%d pings and %d token requests for %d repositories, want 1 and %d", pings, tokens, len(repos), len(repos))
	}
	reg.SetCredentials("robot", "new")
	auth.set("robot", "new")
	if _, err := c.ListTags(t.Context(), repoOf(t, reg, "team/a")); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if pings := reg.Count("ping", ""); pings != 2 {
		t.Errorf("%d pings after a credential refresh, want 2", pings)
	}
}
