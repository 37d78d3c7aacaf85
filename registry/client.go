package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/lru"

	"github.com/crowsnest-dev/crowsnest/registry/imageref"
)

// Authorizer supplies credentials per repository, named as RepoKey names
// it ("ghcr.io/team-a/app"): repositories of one host may need different
// ones. Authenticator may return the same value until it expires; it must
// return comparable values (pointers), so the client notices new
// credentials. Invalidate drops cached credentials after the registry
// refused them.
type Authorizer interface {
	Authenticator(ctx context.Context, repo string) (authn.Authenticator, error)
	Invalidate(repo string)
}

// Client defaults: a tag list is reused for one poll interval's worth of
// time (the poller refreshes it sooner when a webhook says so); metadata
// is immutable per digest, and 10,000 entries of a few hundred bytes is a
// few MB for thousands of repositories; two minutes covers four attempts
// with backoff.
const (
	DefaultTagTTL            = 2 * time.Minute
	DefaultMetadataCacheSize = 10000
	DefaultRequestTimeout    = 2 * time.Minute
	userAgent                = "crowsnest"
)

// Hosts gives the connection settings of a registry host
// (setup.Registries: the registries config in force).
type Hosts interface {
	HostConfig(host string) HostConfig
}

// Endpoints names the endpoint serving a repository, as RepoKey names
// it (setup.Registries); a zero Prefix leaves its pacing to the host's.
type Endpoints interface {
	Endpoint(repo string) Endpoint
}

// Client reads tags and metadata from registries. It is safe for
// concurrent use; the zero value works (anonymous, defaults everywhere).
type Client struct {
	// Hosts gives the settings of each registry host; nil uses defaults.
	Hosts Hosts
	// Endpoints names the endpoint serving each repository, whose pacing
	// its requests take instead of the host's; nil leaves them to the
	// host's.
	Endpoints Endpoints
	// Pacers, when shared by several clients, paces their requests to an
	// endpoint or host together; nil gives the client its own.
	Pacers *Pacers
	// Auth supplies credentials; nil means anonymous.
	Auth Authorizer
	// TagTTL is how long a tag list serves every caller.
	TagTTL time.Duration
	// MetadataCacheSize bounds the digest-keyed metadata cache.
	MetadataCacheSize int
	// RequestTimeout bounds one operation, retries included.
	RequestTimeout time.Duration
	Metrics        *Metrics
	Log            *slog.Logger
	// Now is the clock for cache ages; nil is time.Now.
	Now func() time.Time

	initOnce sync.Once
	mu       sync.Mutex
	hosts    map[string]*hostState
	tags     map[string]*tagEntry
	digests  map[string]*digestEntry
	flight   singleflight.Group
	meta     *lru.Cache
}

// hostState is one registry host's transport (pacing, retries, TLS) and
// a puller per repository, each made with the credentials its repository
// uses. A repository's tags are cached under its key, and every request
// for it carries its own credentials, so two repositories of one host
// with different credentials never share a puller or a tag list.
type hostState struct {
	transport *hostTransport
	repos     map[string]repoPuller
}

type repoPuller struct {
	auth   authn.Authenticator
	pace   *pacer
	puller *remote.Puller
}

type tagEntry struct {
	tags    []string
	fetched time.Time
	stale   bool
}

type digestEntry struct {
	digest  string
	fetched time.Time
}

func (c *Client) init() {
	c.initOnce.Do(func() {
		if c.TagTTL <= 0 {
			c.TagTTL = DefaultTagTTL
		}
		if c.MetadataCacheSize <= 0 {
			c.MetadataCacheSize = DefaultMetadataCacheSize
		}
		if c.RequestTimeout <= 0 {
			c.RequestTimeout = DefaultRequestTimeout
		}
		if c.Log == nil {
			c.Log = slog.New(slog.DiscardHandler)
		}
		if c.Now == nil {
			c.Now = time.Now
		}
		c.hosts = map[string]*hostState{}
		c.tags = map[string]*tagEntry{}
		c.digests = map[string]*digestEntry{}
		c.meta = lru.New(c.MetadataCacheSize)
		if c.Pacers == nil {
			c.Pacers = &Pacers{}
		}
	})
}

// puller returns the repository's puller, making a new one when its
// credentials changed. A Puller reuses token exchanges per repository.
func (c *Client) puller(ctx context.Context, repo Repository, reg name.Registry) (*remote.Puller, *hostTransport, error) {
	host, key := reg.RegistryStr(), RepoKey(repo)
	auth := authn.Anonymous
	if c.Auth != nil {
		a, err := c.Auth.Authenticator(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("credentials for %s: %w", key, err)
		}
		if a != nil {
			auth = a
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hs := c.hosts[host]
	if hs == nil {
		var cfg HostConfig
		if c.Hosts != nil {
			cfg = c.Hosts.HostConfig(Host(reg))
		}
		def := cfg.withDefaults()
		hostPace := c.Pacers.get(hostPacer+host, pacing{rate: def.RateLimit, burst: def.Burst, concurrency: def.MaxConcurrency})
		tr, err := newHostTransport(host, cfg, c.Metrics, hostPace)
		if err != nil {
			return nil, nil, err
		}
		hs = &hostState{transport: tr, repos: map[string]repoPuller{}}
		c.hosts[host] = hs
	}
	tr := hs.transport // pacing state outlives credential changes
	pace := tr.pace
	if c.Endpoints != nil {
		if ep := c.Endpoints.Endpoint(key); ep.Prefix != "" {
			pace = c.Pacers.get(endpointPacer+ep.Prefix, ep.pacing())
		}
	}
	rp, known := hs.repos[key]
	if known && rp.auth == auth && rp.pace == pace {
		return rp.puller, tr, nil
	}
	if known {
		tr.forgetPings()
	}
	opts := []remote.Option{
		remote.WithTransport(capTagLists{endpointTransport{hostTransport: tr, pace: pace}}),
		remote.WithAuth(auth),
		// Retries live in hostTransport, which knows Retry-After and
		// counts them; go-containerregistry's own would multiply them.
		remote.WithRetryPredicate(func(error) bool { return false }),
		remote.WithRetryStatusCodes(),
		remote.WithUserAgent(userAgent),
	}
	if tr.cfg.PageSize > 0 {
		opts = append(opts, remote.WithPageSize(tr.cfg.PageSize))
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("registry %s: %w", Host(reg), err)
	}
	hs.repos[key] = repoPuller{auth: auth, pace: pace, puller: p}
	return p, tr, nil
}

// do runs op with a puller for repo's registry under the request timeout.
// op gets repo back, marked for plain HTTP when the registry is configured
// insecure. When the registry refuses the credentials (401/403) and they
// come from an Authorizer, it retries once with fresh ones. Its errors say
// the registry's status, never the body of its answer (remoteError).
func (c *Client) do(ctx context.Context, repo Repository, op func(ctx context.Context, p *remote.Puller, repo name.Repository) error) (err error) {
	defer func() { err = remoteError(err) }()
	c.init()
	ctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
	defer cancel()
	named, err := ggcrRepository(repo)
	if err != nil {
		return err
	}
	reg := named.Registry
	for try := 0; ; try++ {
		p, tr, err := c.puller(ctx, repo, reg)
		if err != nil {
			return err
		}
		r := named
		if tr.cfg.Insecure {
			if r, err = ggcrRepository(repo, name.Insecure); err != nil {
				return err
			}
		}
		err = op(ctx, p, r)
		if err == nil || try > 0 || c.Auth == nil || !isAuthError(err) {
			return err
		}
		key := RepoKey(repo)
		c.Log.Debug("registry refused credentials, refreshing them", "registry", Host(reg), "repository", key)
		c.Metrics.retry(tr.series(), "auth")
		c.Auth.Invalidate(key)
		c.mu.Lock()
		if hs := c.hosts[reg.RegistryStr()]; hs != nil {
			if rp, ok := hs.repos[key]; ok {
				rp.auth = nil // forces a new puller
				hs.repos[key] = rp
			}
		}
		c.mu.Unlock()
	}
}

func isAuthError(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden)
}

// ListTags lists every tag of a repository now, following pagination.
func (c *Client) ListTags(ctx context.Context, repo Repository) ([]string, error) {
	var tags []string
	err := c.do(ctx, repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
		var err error
		tags, err = listTags(ctx, p, repo)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing tags of %s: %w", RepoKey(repo), err)
	}
	return tags, nil
}

// Tags returns a repository's tags, listing them at most once per TagTTL
// (or maxAge, when positive) however many callers ask; callers asking
// while a list is in flight share it. A negative maxAge always lists (the
// poller's refresh). The result must not be modified.
func (c *Client) Tags(ctx context.Context, repo Repository, maxAge time.Duration) ([]string, error) {
	c.init()
	if maxAge == 0 {
		maxAge = c.TagTTL
	}
	key := RepoKey(repo)
	if tags, ok := c.cachedTags(key, maxAge); ok {
		c.Metrics.cacheResult("tags", "hit")
		return tags, nil
	}
	v, err, shared := c.flight.Do("tags\x00"+key, func() (any, error) {
		// A flight that ended between our cache check and this one
		// filled the cache: do not list again.
		if tags, ok := c.cachedTags(key, maxAge); ok {
			return tags, nil
		}
		tags, err := c.ListTags(ctx, repo)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.tags[key] = &tagEntry{tags: tags, fetched: c.Now()}
		c.mu.Unlock()
		return tags, nil
	})
	c.countFlight("tags", shared)
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

// CachedTags returns a repository's tags when Tags would answer them from
// its cache (a list younger than maxAge, or the TTL when maxAge is 0, and
// not marked stale), without listing; ok is false otherwise.
func (c *Client) CachedTags(repo Repository, maxAge time.Duration) (tags []string, ok bool) {
	c.init()
	if maxAge == 0 {
		maxAge = c.TagTTL
	}
	return c.cachedTags(RepoKey(repo), maxAge)
}

func (c *Client) cachedTags(key string, maxAge time.Duration) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.tags[key]; e != nil && !e.stale && maxAge > 0 && c.Now().Sub(e.fetched) < maxAge {
		return e.tags, true
	}
	return nil, false
}

// cachedView is what the client last read of repo, however old or marked
// stale: its tags, sorted, and the digests of the tags of track it read;
// ok is false when it never listed repo.
func (c *Client) cachedView(repo Repository, track []string) (tags []string, digests map[string]string, ok bool) {
	c.init()
	key := RepoKey(repo)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.tags[key]
	if e == nil {
		return nil, nil, false
	}
	tags = slices.Sorted(slices.Values(e.tags))
	digests = map[string]string{}
	for _, tag := range track {
		if d := c.digests[key+":"+tag]; d != nil {
			digests[tag] = d.digest
		}
	}
	return tags, digests, true
}

// ResetHosts makes the client ask Hosts again for every registry, after
// the registry settings changed. Caches and credentials stay.
func (c *Client) ResetHosts() {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.hosts)
}

// Retain drops what the client keeps for repositories inUse does not
// list (as RepoKey names them): their pullers, tag lists and digests, and
// for hosts none of them is on, the host's transport and idle
// connections and its pacer. An annotation may name any repository on
// any host; the poller calls this when some fall out of use, so what is
// kept follows the repositories in use, not every one ever named. One
// used again starts afresh.
func (c *Client) Retain(inUse map[string]bool) {
	c.init()
	hosts := make(map[string]bool)
	for key := range inUse {
		hosts[ggcrHostOf(key)] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for host, hs := range c.hosts {
		if hosts[host] {
			for key := range hs.repos {
				if !inUse[key] {
					delete(hs.repos, key)
				}
			}
			continue
		}
		if tr, ok := hs.transport.base.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
		delete(c.hosts, host)
	}
	for key := range c.tags {
		if !inUse[key] {
			delete(c.tags, key)
		}
	}
	for key := range c.digests {
		if !inUse[repoOfDigestKey(key)] {
			delete(c.digests, key)
		}
	}
	c.Pacers.retainHosts(hosts)
}

// repoOfDigestKey is the repository of a digest cache key (RepoKey, ":",
// tag; a tag holds neither ':' nor '/').
func repoOfDigestKey(key string) string {
	i := strings.LastIndexByte(key, ':')
	if i < 0 || strings.Contains(key[i:], "/") {
		return key
	}
	return key[:i]
}

// ggcrHostOf is the host of a cache key (a RepoKey, with a tag after it
// for digests) as go-containerregistry names it.
func ggcrHostOf(key string) string {
	host, _, _ := strings.Cut(key, "/")
	return GGCRHost(host)
}

// GGCRHost names a registry host (as RepoKey and Repository.Host name it)
// as go-containerregistry does: the keys of Metrics.RetainHosts.
func GGCRHost(host string) string {
	if host == imageref.DockerHub {
		return name.DefaultRegistry
	}
	return host
}

// MarkStale makes the next Tags call for repo list again, for webhooks.
func (c *Client) MarkStale(repo string) {
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.tags[repo]; e != nil {
		e.stale = true
	}
	for k, d := range c.digests {
		if len(k) > len(repo) && k[:len(repo)] == repo && k[len(repo)] == ':' {
			d.fetched = time.Time{}
		}
	}
}

// Digest returns the digest a tag points to, with a HEAD request (which
// Docker Hub does not count as a pull), reused for TagTTL (or maxAge when
// positive; negative always asks).
func (c *Client) Digest(ctx context.Context, repo Repository, tag string, maxAge time.Duration) (string, error) {
	c.init()
	if maxAge == 0 {
		maxAge = c.TagTTL
	}
	key := RepoKey(repo) + ":" + tag
	c.mu.Lock()
	if e := c.digests[key]; e != nil && maxAge > 0 && c.Now().Sub(e.fetched) < maxAge {
		c.mu.Unlock()
		c.Metrics.cacheResult("digest", "hit")
		return e.digest, nil
	}
	c.mu.Unlock()
	v, err, shared := c.flight.Do("digest\x00"+key, func() (any, error) {
		c.mu.Lock()
		if e := c.digests[key]; e != nil && maxAge > 0 && c.Now().Sub(e.fetched) < maxAge {
			c.mu.Unlock()
			return e.digest, nil
		}
		c.mu.Unlock()
		var digest string
		err := c.do(ctx, repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
			d, err := p.Head(ctx, repo.Tag(tag))
			if err != nil {
				return err
			}
			digest = d.Digest.String()
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading digest of %s:%s: %w", RepoKey(repo), tag, err)
		}
		c.mu.Lock()
		c.digests[key] = &digestEntry{digest: digest, fetched: c.Now()}
		c.mu.Unlock()
		return digest, nil
	})
	c.countFlight("digest", shared)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// countFlight counts a cache miss: one that asked the registry, or that
// shared another caller's request in flight.
func (c *Client) countFlight(cache string, shared bool) {
	result := "miss"
	if shared {
		result = "shared"
	}
	c.Metrics.cacheResult(cache, result)
}
