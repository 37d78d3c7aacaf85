package config

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Registries configures how crowsnest talks to container registries: the
// poll cadence and caches shared by every registry, per-registry settings
// (list, optionally merged with an argocd-image-updater registries.conf)
// and the webhook senders that trigger an immediate refresh.
type Registries struct {
	// ConfFile is an argocd-image-updater registries.conf, read unchanged;
	// relative paths start at the config file's folder. Entries of List
	// replace its entries with the same prefix.
	ConfFile string `yaml:"confFile"`
	// PollInterval is the default time between tag-list polls of one
	// repository.
	PollInterval Duration `yaml:"pollInterval"`
	// TagCacheTTL is how long one tag list serves every Application that
	// uses the repository; 0 means PollInterval.
	TagCacheTTL Duration `yaml:"tagCacheTTL"`
	// MetadataCacheSize bounds the digest-keyed metadata cache (entries).
	MetadataCacheSize int `yaml:"metadataCacheSize"`
	// RequestTimeout bounds one registry operation, retries included.
	RequestTimeout Duration `yaml:"requestTimeout"`
	// List holds per-registry settings.
	List RegistryList `yaml:"list"`
	// Webhook configures the push-notification receiver.
	Webhook RegistryWebhook `yaml:"webhook"`
}

// Registries defaults. Two minutes is argocd-image-updater's cycle and the
// registry client's tag TTL; polls below 5s would only burn registries'
// rate limits (webhooks exist for immediacy). 10,000 metadata entries of a
// few hundred bytes is a few MB. Two minutes per operation covers the
// client's four attempts with backoff.
const (
	DefaultPollInterval      = 2 * time.Minute
	MinPollInterval          = 5 * time.Second
	DefaultMetadataCacheSize = 10000
	MaxMetadataCacheSize     = 10_000_000
	DefaultRequestTimeout    = 2 * time.Minute
)

func (r *Registries) setDefaults() {
	r.PollInterval.orDefault(DefaultPollInterval)
	if r.MetadataCacheSize == 0 {
		r.MetadataCacheSize = DefaultMetadataCacheSize
	}
	r.RequestTimeout.orDefault(DefaultRequestTimeout)
	for i := range r.List {
		r.List[i].setDefaults()
	}
}

// TagTTL returns the tag cache lifetime in force: TagCacheTTL, or
// PollInterval when it is zero.
func (r *Registries) TagTTL() time.Duration {
	if r.TagCacheTTL.Duration > 0 {
		return r.TagCacheTTL.Duration
	}
	return r.PollInterval.Duration
}

func (r *Registries) validate(path string, errs *fieldErrors) {
	if r.PollInterval.Duration < MinPollInterval {
		errs.invalid(fieldpath.Join(path, "pollInterval"), "must be at least %s, got %s", MinPollInterval, r.PollInterval)
	}
	switch ttl := r.TagCacheTTL.Duration; {
	case ttl < 0:
		errs.invalid(fieldpath.Join(path, "tagCacheTTL"), "must not be negative, got %s", r.TagCacheTTL)
	case ttl > r.PollInterval.Duration:
		errs.invalid(fieldpath.Join(path, "tagCacheTTL"), "must not exceed pollInterval (%s), or polls would read stale tag lists; got %s",
			r.PollInterval, r.TagCacheTTL)
	}
	if r.MetadataCacheSize < 1 || r.MetadataCacheSize > MaxMetadataCacheSize {
		errs.invalid(fieldpath.Join(path, "metadataCacheSize"), "must be between 1 and %d, got %d", MaxMetadataCacheSize, r.MetadataCacheSize)
	}
	if r.RequestTimeout.Duration <= 0 {
		errs.invalid(fieldpath.Join(path, "requestTimeout"), "must be positive, got %s", r.RequestTimeout)
	}
	r.List.validate(fieldpath.Join(path, "list"), crowsnestKeys, errs)
	r.Webhook.validate(fieldpath.Join(path, "webhook"), errs)
}

// Registry is the settings of one registry, from the list or a
// registries.conf.
type Registry struct {
	// Name is for people and logs; empty means the prefix.
	Name string `yaml:"name"`
	// Prefix selects the images this entry applies to: a registry host
	// ("ghcr.io", "registry.local:5000") optionally followed by a path
	// ("ghcr.io/my-org"); the longest matching prefix wins, on whole path
	// segments. Connection settings (APIURL, Insecure, CAFile, CAData)
	// belong to the host, not the prefix: see MatchHost. RateLimit and
	// MaxConcurrency belong to the prefix: the images it serves are
	// paced together, apart from other prefixes of the host.
	Prefix string `yaml:"prefix"`
	// APIURL is where the registry API really lives, without /v2
	// ("https://registry-1.docker.io"); empty means https://<host>.
	APIURL string `yaml:"apiURL"`
	// Credentials used for the images under Prefix unless the image names
	// its own; empty means anonymous.
	Credentials CredentialRef `yaml:"credentials"`
	// CredsExpire re-reads the credentials after this long; 0 keeps them
	// until the registry refuses them.
	CredsExpire Duration `yaml:"credsExpire"`
	// Insecure skips TLS verification and allows plain HTTP; CAFile and
	// CAData are then ignored.
	Insecure bool `yaml:"insecure"`
	// CAFile and CAData add PEM CA certificates to the system roots.
	CAFile string `yaml:"caFile"`
	CAData string `yaml:"caData"`
	// DefaultNamespace completes image names with one path segment
	// ("nginx" -> "library/nginx" on Docker Hub, "registry.local/app" ->
	// "registry.local/<ns>/app"). Only an entry for a whole host, or the
	// default entry, may set it (see Qualify).
	DefaultNamespace string `yaml:"defaultNamespace"`
	// RateLimit is the most requests per second sent for the images this
	// entry serves (see Match).
	RateLimit float64 `yaml:"rateLimit"`
	// MaxConcurrency bounds requests in flight for the images this entry
	// serves.
	MaxConcurrency int `yaml:"maxConcurrency"`
	// Link is the page of an image on this registry, shown in pull
	// request bodies: a Go text/template over .Registry (the host),
	// .Repository (the path) and .Tag, rendering an https:// URL
	// ("https://harbor.example.com/harbor/projects/{{.Repository}}").
	// Empty uses the well-known registries' pages, none for others.
	Link string `yaml:"link"`
	// Default makes this the registry of image names without a registry
	// host ("nginx", "team/app"), instead of docker.io: they are read as
	// written under Prefix. At most one entry may set it.
	Default bool `yaml:"default"`
}

// Per-registry defaults: argocd-image-updater's 20 requests per second,
// and the registry client's 8 requests in flight, which keep a busy
// crowsnest far below what registries throttle.
const (
	DefaultRegistryRateLimit      = 20
	DefaultRegistryMaxConcurrency = 8
	MaxRegistryConcurrency        = 1000
)

func (r *Registry) setDefaults() {
	if r.RateLimit == 0 {
		r.RateLimit = DefaultRegistryRateLimit
	}
	if r.MaxConcurrency == 0 {
		r.MaxConcurrency = DefaultRegistryMaxConcurrency
	}
}

// registryKeys names Registry's fields in one file format, so validation
// errors use the keys the user wrote.
type registryKeys struct {
	prefix, apiURL, credsExpire, caFile, caData, defaultNamespace, rateLimit, maxConcurrency, isDefault string
}

var crowsnestKeys = registryKeys{
	prefix: "prefix", apiURL: "apiURL", credsExpire: "credsExpire", caFile: "caFile", caData: "caData",
	defaultNamespace: "defaultNamespace", rateLimit: "rateLimit", maxConcurrency: "maxConcurrency", isDefault: "default",
}

var (
	hostRE          = regexp.MustCompile(`^(?i)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(?::[0-9]{1,5})?$`)
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
)

func (r *Registry) validate(path string, keys registryKeys, errs *fieldErrors) {
	if err := checkPrefix(r.Prefix); err != nil {
		errs.invalid(fieldpath.Join(path, keys.prefix), "%v", err)
	}
	if err := checkAPIURL(r.APIURL); err != nil {
		errs.invalid(fieldpath.Join(path, keys.apiURL), "%v", err)
	}
	if r.CredsExpire.Duration < 0 {
		errs.invalid(fieldpath.Join(path, keys.credsExpire), "must not be negative, got %s", r.CredsExpire)
	}
	if r.CAData != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(r.CAData)) {
		errs.invalid(fieldpath.Join(path, keys.caData), "no PEM certificate found")
	}
	switch {
	case r.DefaultNamespace == "":
	case !pathComponentRE.MatchString(r.DefaultNamespace):
		errs.invalid(fieldpath.Join(path, keys.defaultNamespace), "invalid repository path component %q", r.DefaultNamespace)
	case strings.Contains(r.Prefix, "/") && !r.Default:
		errs.invalid(fieldpath.Join(path, keys.defaultNamespace), "only for an entry whose prefix is a registry host, or the default entry: "+
			"names under %q already have more than one path segment", r.Prefix)
	}
	if r.Link != "" {
		if _, err := r.LinkTemplate(); err != nil {
			errs.invalid(fieldpath.Join(path, "link"), "%v", err)
		}
	}
	if r.RateLimit < 0 {
		errs.invalid(fieldpath.Join(path, keys.rateLimit), "must be positive (requests per second), got %v", r.RateLimit)
	}
	if r.MaxConcurrency < 1 || r.MaxConcurrency > MaxRegistryConcurrency {
		errs.invalid(fieldpath.Join(path, keys.maxConcurrency), "must be between 1 and %d, got %d", MaxRegistryConcurrency, r.MaxConcurrency)
	}
}

// checkPrefix accepts host[:port][/path...].
func checkPrefix(p string) error {
	if p == "" {
		return fmt.Errorf("required: a registry host, optionally with a path, e.g. ghcr.io or ghcr.io/my-org")
	}
	host, rest, _ := strings.Cut(p, "/")
	if !hostRE.MatchString(host) {
		return fmt.Errorf("invalid registry host %q in %q (want e.g. ghcr.io or registry.local:5000, no scheme)", host, p)
	}
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("invalid registry host %q: no dot or port, so image references read it as a Docker Hub namespace", host)
	}
	if rest == "" && strings.HasSuffix(p, "/") {
		return fmt.Errorf("invalid prefix %q: trailing slash", p)
	}
	for c := range strings.SplitSeq(rest, "/") {
		if rest != "" && !pathComponentRE.MatchString(c) {
			return fmt.Errorf("invalid repository path component %q in %q", c, p)
		}
	}
	return nil
}

// checkAPIURL accepts http(s)://host[:port] with an optional trailing
// slash. Errors print the URL redacted: it might carry a password.
func checkAPIURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid URL: %s", strings.ReplaceAll(err.Error(), s, "<url>"))
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("must not carry credentials (%s); use credentials instead", u.Redacted())
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http:// or https:// URL, got %q", u.Redacted())
	case u.Host == "" || !hostRE.MatchString(u.Host):
		return fmt.Errorf("invalid host in %q", u.Redacted())
	case u.Path != "" && u.Path != "/":
		return fmt.Errorf("must not have a path (got %q): crowsnest calls <apiURL>/v2/", u.Path)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must not have a query or fragment: %q", u.Redacted())
	}
	return nil
}

// RegistryHost returns the canonical form of a registry host as written in
// an image reference, URL or Docker config key: lower case, without scheme
// or path, with Docker Hub's aliases folded into docker.io.
func RegistryHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	s, _, _ = strings.Cut(s, "/")
	switch s {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return s
}

// RegistryList is the registries in force, in file order.
type RegistryList []Registry

func (l RegistryList) validate(path string, keys registryKeys, errs *fieldErrors) {
	prefixes := map[string]int{}
	def := -1
	for i := range l {
		p := fieldpath.Index(path, i)
		l[i].validate(p, keys, errs)
		if l[i].Prefix != "" {
			key := CanonicalPrefix(l[i].Prefix)
			if j, dup := prefixes[key]; dup {
				errs.invalid(fieldpath.Join(p, keys.prefix), "duplicate prefix %q (also %s)", l[i].Prefix, fieldpath.Index(path, j))
			} else {
				prefixes[key] = i
			}
		}
		if l[i].Default {
			if def >= 0 {
				errs.invalid(fieldpath.Join(p, keys.isDefault), "only one registry may be the default (%s is)", fieldpath.Index(path, def))
			} else {
				def = i
			}
		}
	}
	name := func(i int) string { return fmt.Sprintf("%s (prefix %s)", fieldpath.Index(path, i), l[i].Prefix) }
	for _, c := range l.hostConflicts() {
		errs.invalid(fieldpath.Join(fieldpath.Index(path, c.entry), c.field(keys)), "%s", c.message(l, name))
	}
}

// Validate checks a list assembled in code, such as the registries in
// force with command-line overrides; errors name entries "registries[i]".
// The error is a *ValidationError.
func (l RegistryList) Validate() error {
	errs := &fieldErrors{}
	l.validate("registries", crowsnestKeys, errs)
	return errs.err()
}

// CanonicalPrefix folds a prefix's host like RegistryHost and keeps its
// path: two entries with the same canonical prefix are duplicates.
func CanonicalPrefix(p string) string {
	host, rest, ok := strings.Cut(p, "/")
	if !ok {
		return RegistryHost(host)
	}
	return RegistryHost(host) + "/" + rest
}

// Default returns the registry of unqualified image names, or nil when
// none is configured (Docker Hub then).
func (l RegistryList) Default() *Registry {
	for i := range l {
		if l[i].Default {
			return &l[i]
		}
	}
	return nil
}

// Qualify completes an image reference the way the registries read it,
// for registry lookups (what is written back stays as the user wrote it):
//
//   - a name without a registry host ("nginx", "team/app:1.0") is under the
//     default entry's prefix, when there is one, else on docker.io;
//   - a repository path of one segment ("nginx", "registry.local/app") gets
//     the defaultNamespace of the default entry (for names without a host)
//     or of the entry for the whole host, when set: "nginx" is
//     "registry.local/library/nginx" with a default entry
//     {prefix: registry.local, defaultNamespace: library}.
//
// The tag and digest are kept. A reference nothing applies to comes back
// unchanged, so without a default entry "nginx" stays "nginx", which image
// parsing reads as docker.io/library/nginx.
func (l RegistryList) Qualify(image string) string {
	repo, suffix := splitRef(image)
	host, path, ok := strings.Cut(repo, "/")
	if ok && isHost(host) {
		if e := l.wholeHost(host); e != nil && e.DefaultNamespace != "" && !strings.Contains(path, "/") {
			return host + "/" + e.DefaultNamespace + "/" + path + suffix
		}
		return image
	}
	var e *Registry
	if e = l.Default(); e == nil {
		if e = l.wholeHost(dockerHub); e == nil || e.DefaultNamespace == "" {
			return image
		}
	}
	if e.DefaultNamespace != "" && !ok {
		repo = e.DefaultNamespace + "/" + repo
	}
	return CanonicalPrefix(e.Prefix) + "/" + repo + suffix
}

const dockerHub = "docker.io"

// splitRef cuts an image reference into its repository and what follows
// it (":tag", "@digest", ":tag@digest" or ""). A colon after the last
// slash starts a tag; one before it is a registry port.
func splitRef(image string) (repo, suffix string) {
	repo, digest, hasDigest := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, suffix = repo[:i], repo[i:]
	}
	if hasDigest {
		suffix += "@" + digest
	}
	return repo, suffix
}

// isHost reports whether the first segment of an image name is a registry
// host, by the rule image references use: a dot, a port or "localhost".
func isHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost"
}

// repoKey returns the repository an image names, fully qualified and
// folded ("docker.io/library/nginx", "ghcr.io/org/app"), after Qualify.
func (l RegistryList) repoKey(image string) string {
	repo, _ := splitRef(l.Qualify(image))
	host, path, ok := strings.Cut(repo, "/")
	if !ok || !isHost(host) {
		host, path = dockerHub, repo
	}
	host = RegistryHost(host)
	if host == dockerHub && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return host + "/" + path
}

// Match returns the entry for an image or repository ("ghcr.io/org/app",
// "nginx:1.27", "registry.local:5000/team/app@sha256:..."), whose
// credentials apply to it, or nil when no entry does. The name is read as
// Qualify reads it, then the longest prefix wins, matched on whole path
// segments after folding Docker Hub's aliases. An image of another host
// never falls back to the default: that would send one registry's
// credentials to another.
func (l RegistryList) Match(image string) *Registry {
	return l.longestPrefix(l.repoKey(image))
}

// MatchHost returns the entry whose connection settings (APIURL,
// Insecure, CAFile, CAData) apply to a
// registry host ("ghcr.io", "registry.local:5000"), or nil: the entry for
// the whole host, else the one with the shortest prefix on the host (the
// first in order among equals). Validation makes the other entries of the
// host agree with it.
func (l RegistryList) MatchHost(host string) *Registry {
	if i := l.hostEntry(RegistryHost(host)); i >= 0 {
		return &l[i]
	}
	return nil
}

// hostEntry is MatchHost's index; host is folded.
func (l RegistryList) hostEntry(host string) int {
	best := -1
	for i := range l {
		p := CanonicalPrefix(l[i].Prefix)
		if (p == host || strings.HasPrefix(p, host+"/")) && (best < 0 || len(p) < len(CanonicalPrefix(l[best].Prefix))) {
			best = i
		}
	}
	return best
}

// wholeHost returns the entry whose prefix is the host alone, or nil.
func (l RegistryList) wholeHost(host string) *Registry {
	host = RegistryHost(host)
	for i := range l {
		if CanonicalPrefix(l[i].Prefix) == host {
			return &l[i]
		}
	}
	return nil
}

func (l RegistryList) longestPrefix(repo string) *Registry {
	var best *Registry
	bestLen := -1
	for i := range l {
		p := CanonicalPrefix(l[i].Prefix)
		if (repo == p || strings.HasPrefix(repo, p+"/")) && len(p) > bestLen {
			best, bestLen = &l[i], len(p)
		}
	}
	return best
}

// RegistryLinkData is what a Registry.Link template sees.
type RegistryLinkData struct {
	Registry, Repository, Tag string
}

// LinkTemplate parses Link and checks it renders an https:// URL for an
// example image.
func (r *Registry) LinkTemplate() (*template.Template, error) {
	t, err := template.New("link").Option("missingkey=error").Parse(r.Link)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := t.Execute(&b, RegistryLinkData{Registry: "registry.example.com", Repository: "team/app", Tag: "1.0.0"}); err != nil {
		return nil, err
	}
	if u, err := url.Parse(b.String()); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("want an https:// URL, got %q for an example image", b.String())
	}
	return t, nil
}
