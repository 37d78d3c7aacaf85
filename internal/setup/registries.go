package setup

import (
	"context"
	"crypto/x509"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// Registries is the daemon's registry side, built from the config's
// registries section: one client (shared tag and metadata caches, pacing
// per registry entry), its credentials and the poller. A reload swaps the registry list
// in place; caches survive it.
type Registries struct {
	Client   *registry.Client
	Poller   *registry.Poller
	resolver *creds.Resolver
	list     atomic.Pointer[config.RegistryList]
	log      *slog.Logger
	metrics  *registry.Metrics

	// tenantResolver reads the credentials images name themselves
	// (pull-secret): Secrets Argo CD and Kubernetes keep for themselves
	// are refused unless the operator's config names them.
	tenantResolver *creds.Resolver
	// cfg is the operator's config in force, whose credential
	// references the guard lets through.
	cfg atomic.Pointer[config.Config]

	mu       sync.Mutex
	bySecret map[string]*registry.Client // per pull-secret reference
	// secretOrder is, per namespace of the Secret a reference names,
	// bySecret's keys, least recently asked for first.
	secretOrder map[string][]string
}

// MaxPullSecretClients caps the clients kept for the pull-secret
// references of one namespace (the Secret's: annotations may name only
// their own namespace's): whoever writes annotations names them, and each
// client keeps caches of its own. Past the cap the namespace's least
// recently asked for is dropped (a reconcile still holding it finishes
// with it; the next asks anew), so many references churn only their own
// namespace's clients.
const MaxPullSecretClients = 64

// ForPullSecret returns the client for images that name their own
// credentials (the pull-secret annotation): same registry settings, its own
// caches, since other credentials may see other tags. "" is the shared
// client.
func (r *Registries) ForPullSecret(ref string) *registry.Client {
	if ref == "" {
		return r.Client
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	parsed, err := creds.Parse(ref)
	if err != nil {
		// Annotations are validated before this; be safe anyway.
		r.log.Error("invalid pull secret reference; using the registry's credentials", "error", err)
		return r.Client
	}
	if c := r.bySecret[ref]; c != nil {
		r.touchSecret(parsed.Namespace, ref)
		return c
	}
	if r.bySecret == nil {
		r.bySecret, r.secretOrder = map[string]*registry.Client{}, map[string][]string{}
	}
	c := &registry.Client{
		Hosts:             r.Client.Hosts,
		Endpoints:         r.Client.Endpoints,
		Pacers:            r.Client.Pacers, // one limit per entry, whatever the credentials
		Auth:              refAuth{resolver: r.tenantResolver, ref: parsed},
		TagTTL:            r.Client.TagTTL,
		MetadataCacheSize: r.Client.MetadataCacheSize,
		RequestTimeout:    r.Client.RequestTimeout,
		Metrics:           r.metrics,
		Log:               r.log,
	}
	order := r.secretOrder[parsed.Namespace]
	if len(order) >= MaxPullSecretClients {
		delete(r.bySecret, order[0])
		order = order[1:]
	}
	r.bySecret[ref] = c
	r.secretOrder[parsed.Namespace] = append(order, ref)
	return c
}

// touchSecret moves ref to the end of its namespace's order; called with
// r.mu held.
func (r *Registries) touchSecret(namespace, ref string) {
	order := r.secretOrder[namespace]
	if i := slices.Index(order, ref); i >= 0 && i != len(order)-1 {
		r.secretOrder[namespace] = append(slices.Delete(order, i, i+1), ref)
	}
}

var _ creds.Binding = (*Registries)(nil)

// refAuth authenticates every repository with one credentials reference.
type refAuth struct {
	resolver *creds.Resolver
	ref      creds.Ref
}

func (a refAuth) Authenticator(ctx context.Context, repo string) (authn.Authenticator, error) {
	return a.resolver.Authenticator(ctx, a.ref, config.RegistryHost(repo), 0)
}

func (a refAuth) Invalidate(repo string) { a.resolver.Invalidate(a.ref, config.RegistryHost(repo)) }

// Assigned reports whether the registries config names ref for some
// repository, and whether it names it for repo (tenancy.Rules):
// credentials the config assigns stay with the repositories it assigns
// them to, whatever an annotation says.
func (r *Registries) Assigned(ref config.CredentialRef, repo string) (configured, here bool) {
	list := *r.list.Load()
	for i := range list {
		if list[i].Credentials == ref {
			configured = true
			break
		}
	}
	if e := list.Match(repo); e != nil && e.Credentials == ref {
		here = true
	}
	return configured, here
}

// SendsTo implements creds.Binding: whether the operator's config sends
// the credentials ref to registryHost: a tenancy.credentials entry lists
// that registry for it, or the registries config assigns it to an entry
// on that host. An annotation's secret: reference goes elsewhere only
// when its Secret's url names the registry (creds.Resolver.Bound).
func (r *Registries) SendsTo(ref creds.Ref, registryHost string) bool {
	if cfg := r.cfg.Load(); cfg != nil && cfg.Tenancy.ListsRegistry(ref, registryHost) {
		return true
	}
	list := *r.list.Load()
	for i := range list {
		if e := &list[i]; e.Credentials == ref && config.RegistryHost(e.Prefix) == registryHost {
			return true
		}
	}
	return false
}

// CredentialsFor returns the credentials of repo's entry in the
// registries list in force (the longest prefix), for the client's
// creds.RepoAuth.
func (r *Registries) CredentialsFor(repo string) (creds.Ref, time.Duration) {
	return creds.RegistryList(*r.list.Load()).CredentialsFor(repo)
}

// TrustsSecret reports whether the operator's config names the Secret
// namespace/name as credentials: in the registries list, an image
// policy or tenancy.credentials. The tenants' creds.TenantSecrets ask it.
func (r *Registries) TrustsSecret(namespace, name string) bool {
	is := func(ref config.CredentialRef) bool {
		return (ref.Source == config.CredsPullSecret || ref.Source == config.CredsSecret) && ref.Namespace == namespace && ref.Name == name
	}
	list := *r.list.Load()
	for i := range list {
		if is(list[i].Credentials) {
			return true
		}
	}
	cfg := r.cfg.Load()
	for i := range cfg.Tenancy.Credentials {
		if is(cfg.Tenancy.Credentials[i].PullSecret) {
			return true
		}
	}
	for i := range cfg.ImagePolicies {
		for j := range cfg.ImagePolicies[i].Images {
			if ref, err := config.ParseCredentialRef(cfg.ImagePolicies[i].Images[j].PullSecret); err == nil && is(ref) {
				return true
			}
		}
	}
	return false
}

// NewRegistries builds the client and poller. baseDir resolves a relative
// registries.conf path (the config file's folder); secrets reads pull
// secrets and may be nil (local mode without a cluster).
func NewRegistries(cfg *config.Config, baseDir string, secrets creds.SecretGetter, metrics *registry.Metrics, log *slog.Logger) (*Registries, error) {
	list, err := cfg.Registries.Resolved(baseDir)
	if err != nil {
		return nil, err
	}
	// The first TLS connection to a registry, a caFile's pool included,
	// needs the system roots (30 ms to load): load them now, while the
	// Applications are listed, not when the first pass is waiting.
	go func() { _, _ = x509.SystemCertPool() }()
	return NewRegistriesFor(cfg, list, secrets, metrics, log), nil
}

// NewRegistriesFor builds the client and poller for a resolved registry
// list; cfg gives the caches and poll interval.
func NewRegistriesFor(cfg *config.Config, list config.RegistryList, secrets creds.SecretGetter, metrics *registry.Metrics, log *slog.Logger) *Registries {
	r := &Registries{
		resolver: &creds.Resolver{Secrets: secrets, Log: log},
		log:      log,
		metrics:  metrics,
	}
	r.cfg.Store(cfg)
	r.tenantResolver = &creds.Resolver{Log: log, Bound: r}
	if secrets != nil {
		r.tenantResolver.Secrets = &creds.TenantSecrets{Secrets: secrets, Trust: r}
	}
	r.list.Store(&list)
	// Credentials follow the repository's entry (longest prefix), so
	// ghcr.io/team-a and ghcr.io/team-b may use different ones; their
	// tags are cached per repository, hence per credentials.
	auth := &creds.RepoAuth{Resolver: r.resolver, Registries: r}
	r.Client = &registry.Client{
		Hosts:             r,
		Endpoints:         r,
		Pacers:            &registry.Pacers{},
		Auth:              auth,
		TagTTL:            cfg.Registries.TagTTL(),
		MetadataCacheSize: cfg.Registries.MetadataCacheSize,
		RequestTimeout:    cfg.Registries.RequestTimeout.Duration,
		Metrics:           metrics,
		Log:               log,
	}
	r.Poller = &registry.Poller{
		Client:   r.Client,
		Interval: cfg.Registries.PollInterval.Duration,
		Metrics:  metrics,
		Log:      log,
	}
	return r
}

// Qualify completes image names the way the registries in force read
// them (default entry, defaultNamespace), for the ImageReconciler: it
// reads the list at each call, so a reload applies at once.
func (r *Registries) Qualify(image string) string { return r.list.Load().Qualify(image) }

// HostConfig is the client's view of one registry's connection settings:
// those of config.RegistryList.MatchHost's entry, which validation makes
// the host's other entries agree with. Its pacing (the defaults) is for
// images no entry serves, as argocd-image-updater infers an endpoint at
// its default limit for them; the others are paced by their entry
// (endpoint).
func (r *Registries) HostConfig(host string) registry.HostConfig {
	e := r.list.Load().MatchHost(host)
	if e == nil {
		return registry.HostConfig{}
	}
	hc := registry.HostConfig{
		APIURL:     e.APIURL,
		Insecure:   e.Insecure,
		Configured: true, // its metric series keep their label
	}
	tlsCfg, err := e.TLSConfig()
	if err != nil {
		// Validation read the CA already; a file that went bad since is
		// logged and the system roots are used.
		r.log.Error("registry CA unusable; using the system roots", "registry", host, "error", err)
	} else {
		hc.TLS = tlsCfg
	}
	return hc
}

// Endpoint names the entry serving a repository (config.RegistryList.Match)
// and its pacing: each entry has its own rate limit and concurrency bound,
// as each registries.conf entry has its own limiter in
// argocd-image-updater.
func (r *Registries) Endpoint(repo string) registry.Endpoint {
	e := r.list.Load().Match(repo)
	if e == nil {
		return registry.Endpoint{}
	}
	return registry.Endpoint{Prefix: config.CanonicalPrefix(e.Prefix), RateLimit: e.RateLimit, MaxConcurrency: e.MaxConcurrency}
}

// Reload applies a new registries section: the list (and with it rate
// limits, endpoints, TLS, credential references, the default registry and
// default namespaces) takes effect for the next request and reconcile;
// cached credentials are dropped. Cache sizes, TTL and poll
// interval need a restart.
func (r *Registries) Reload(cfg *config.Config, baseDir string) error {
	list, err := cfg.Registries.Resolved(baseDir)
	if err != nil {
		return err
	}
	r.list.Store(&list)
	r.cfg.Store(cfg)
	r.resolver.Reset()
	r.tenantResolver.Reset()
	r.Client.ResetHosts()
	r.mu.Lock()
	for _, c := range r.bySecret {
		c.ResetHosts()
	}
	r.mu.Unlock()
	return nil
}
