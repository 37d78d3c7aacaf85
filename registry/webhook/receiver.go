package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/time/rate"
)

// SourceType names a registry product whose push notifications the
// Receiver understands; it decides the payload format and how the sender
// authenticates.
type SourceType string

// Supported senders.
const (
	// DockerHub posts repository webhooks; it cannot sign, so the secret is
	// a ?secret= query parameter of the configured URL (or a bearer token).
	DockerHub SourceType = "dockerhub"
	// GHCR is GitHub's "package" (or older "registry_package") event,
	// signed with X-Hub-Signature-256.
	GHCR SourceType = "ghcr"
	// Harbor sends its webhook "Auth Header" value as the Authorization
	// header.
	Harbor SourceType = "harbor"
	// Quay cannot sign either: ?secret= or a bearer token.
	Quay SourceType = "quay"
	// Distribution is the CNCF distribution registry's notifications
	// envelope; its endpoint config sends "Authorization: Bearer <secret>".
	Distribution SourceType = "distribution"
	// Generic is {"repository": "host/path", "tag": "...", "digest": "..."}
	// signed with X-Crowsnest-Signature-256 ("sha256=<hex>") or a bearer
	// token, for CI pipelines and registries without a dedicated parser.
	Generic SourceType = "generic"
)

// Receiver defaults.
const (
	// DefaultMaxBodyBytes bounds a request body: the largest real payloads
	// (GitHub package events carrying a manifest and labels, distribution
	// envelopes batching many events) are tens of KiB, so 1 MiB leaves
	// ample room while capping the memory one request can take.
	DefaultMaxBodyBytes int64 = 1 << 20
	// DefaultRateLimit is the sustained authenticated requests per second
	// per source: far above what a registry sends for real pushes, low
	// enough that a sender with the secret cannot make crowsnest hammer
	// the registry with refreshes.
	DefaultRateLimit rate.Limit = 5
	// DefaultBurst lets a CI run that pushes many tags or platforms at once
	// through without a 429.
	DefaultBurst = 50
	// DefaultUnauthenticatedRateLimit is how often one client address may
	// fail to authenticate to one source, sustained. Refusing costs little
	// (most refusals never read the body), so this mainly keeps a flood
	// out of the logs and tells it to back off; one a second still shows
	// a sender with a stale secret its 401s.
	DefaultUnauthenticatedRateLimit = rate.Limit(1)
	// DefaultUnauthenticatedBurst lets a sender with a mistyped or rotated
	// secret retry a few deliveries and see 401, not 429.
	DefaultUnauthenticatedBurst = 10
	// DefaultMaxClients bounds the client addresses whose failures are
	// remembered: a few hundred bytes each, so at most about a MiB however
	// many addresses a flood comes from, and far more than the senders
	// that fail at once in practice.
	DefaultMaxClients = 4096
)

// Source is one configured sender.
type Source struct {
	// Name is the last path segment the sender posts to; "" uses the type
	// ("/webhooks/registry/harbor"). Names let two senders of one type
	// (two Harbor instances) use different secrets.
	Name string
	// Type is the sender's product.
	Type SourceType
	// Secret authenticates the sender. Empty is allowed only with
	// Config.AllowUnauthenticated.
	Secret []byte
	// Registry, when set, replaces the registry host of every event from
	// this source: the host Applications use, when the sender reports an
	// internal one (distribution's request host) or none.
	Registry string
}

// PushEvent asks for an immediate refresh of one repository.
type PushEvent struct {
	// Source is the product that sent the event.
	Source SourceType
	// Repository is "host/path" as registry.RepoKey writes it
	// ("docker.io/library/nginx"), the poller's key.
	Repository string
	// Tags and Digest are what the sender says was pushed: hints for logs,
	// never trusted as the registry's state.
	Tags   []string
	Digest string
}

// Listener hears of each authenticated push (the daemon's
// pushRefresher, which asks registry.Poller to poll the repository now).
type Listener interface {
	// Pushed marks a repository for refresh. It runs on the request's
	// goroutine and must be quick (Poller.Refresh is).
	Pushed(ctx context.Context, ev PushEvent)
}

// Config configures a Receiver.
type Config struct {
	Sources []Source
	// Listener hears of the pushes; required.
	Listener Listener
	// AllowUnauthenticated accepts sources without a secret. Off by
	// default: anyone who can reach the endpoint could otherwise make
	// crowsnest poll registries at will.
	AllowUnauthenticated bool
	// MaxBodyBytes bounds request bodies; zero is DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// RateLimit and Burst shape each source's token bucket, which only
	// authenticated requests draw from; zero values use the defaults and
	// rate.Inf turns limiting off.
	RateLimit rate.Limit
	Burst     int
	// UnauthenticatedRateLimit and UnauthenticatedBurst shape the bucket
	// of failed authentications per client address and source; once it is
	// spent, that client's unauthenticated requests to that source get
	// 429. Zero values use the defaults and rate.Inf turns limiting off.
	UnauthenticatedRateLimit rate.Limit
	UnauthenticatedBurst     int
	// MaxClients bounds the client addresses remembered for
	// UnauthenticatedRateLimit; zero is DefaultMaxClients.
	MaxClients int
	Metrics    *Metrics
	Log        *slog.Logger
}

// Receiver is the http.Handler for registry webhooks. Mount it so that the
// last path segment names the source, e.g.
// mux.Handle("/webhooks/registry/{source}", recv).
type Receiver struct {
	listener Listener
	maxBody  int64
	metrics  *Metrics
	log      *slog.Logger
	sources  map[string]*source
	failures *failures
}

type source struct {
	Source
	limiter *rate.Limiter
}

var _ http.Handler = (*Receiver)(nil)

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// NewReceiver validates cfg and builds a Receiver.
func NewReceiver(cfg Config) (*Receiver, error) {
	if cfg.Listener == nil {
		return nil, errors.New("webhook receiver: Listener is required")
	}
	if cfg.MaxBodyBytes < 0 || cfg.RateLimit < 0 || cfg.Burst < 0 ||
		cfg.UnauthenticatedRateLimit < 0 || cfg.UnauthenticatedBurst < 0 || cfg.MaxClients < 0 {
		return nil, errors.New("webhook receiver: MaxBodyBytes, rate limits, bursts and MaxClients must not be negative")
	}
	rv := &Receiver{
		listener: cfg.Listener,
		maxBody:  cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		metrics:  cfg.Metrics,
		log:      cfg.Log,
		sources:  make(map[string]*source, len(cfg.Sources)),
		failures: newFailures(cmp.Or(cfg.UnauthenticatedRateLimit, DefaultUnauthenticatedRateLimit),
			cmp.Or(cfg.UnauthenticatedBurst, DefaultUnauthenticatedBurst), cmp.Or(cfg.MaxClients, DefaultMaxClients)),
	}
	if rv.log == nil {
		rv.log = slog.New(slog.DiscardHandler)
	}
	limit, burst := cmp.Or(cfg.RateLimit, DefaultRateLimit), cmp.Or(cfg.Burst, DefaultBurst)
	for i, s := range cfg.Sources {
		if s.Name == "" {
			s.Name = string(s.Type)
		}
		if err := checkSource(s, cfg.AllowUnauthenticated); err != nil {
			return nil, fmt.Errorf("webhook source %d (%q): %w", i, s.Name, err)
		}
		if rv.sources[s.Name] != nil {
			return nil, fmt.Errorf("webhook source %d (%q): duplicate name", i, s.Name)
		}
		s.Secret = bytes.Clone(s.Secret) // the caller's slice may change later
		rv.sources[s.Name] = &source{Source: s, limiter: rate.NewLimiter(limit, burst)}
	}
	return rv, nil
}

func checkSource(s Source, allowUnauthenticated bool) error {
	if _, ok := parsers[s.Type]; !ok {
		return fmt.Errorf("unknown type %q (want dockerhub, ghcr, harbor, quay, distribution or generic)", s.Type)
	}
	if !validName.MatchString(s.Name) {
		return errors.New("name must be lower-case letters, digits, '.', '_' or '-'")
	}
	if len(s.Secret) == 0 && !allowUnauthenticated {
		return errors.New("secret is required (AllowUnauthenticated accepts unauthenticated requests)")
	}
	if s.Registry != "" {
		if _, err := name.NewRegistry(s.Registry); err != nil {
			return fmt.Errorf("registry: %w", err)
		}
	}
	return nil
}

// ServeHTTP authenticates, parses and hands push events to the Listener.
//
// Authentication comes first, so that only a sender with the secret can
// spend the source's tokens: a flood without it cannot delay a real push.
// Credentials in the header or query are checked before the body is read;
// a request with none the source accepts is refused unread. A signature
// is checked against the body (read up to MaxBodyBytes) even when its
// client has spent its failure budget: GitHub and a forger may share an
// address (a NAT, the proxy in front of crowsnest), and refusing unread
// would let the forger block GitHub. That costs one SHA-256 pass over
// bytes the client had to send, so it is no amplification.
func (rv *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srcName := r.PathValue("source")
	if srcName == "" {
		srcName = path.Base(r.URL.Path)
	}
	src := rv.sources[srcName]
	if src == nil {
		// The label is fixed: arbitrary paths must not create series.
		rv.reply(w, "unknown", ResultUnknownSource, http.StatusNotFound, "unknown webhook source")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rv.reply(w, srcName, ResultMethodNotAllowed, http.StatusMethodNotAllowed, "use POST")
		return
	}
	creds := src.checkCredentials(r)
	if creds == credentialsMissing {
		rv.refuse(w, r, srcName)
		return
	}
	// A valid token spends the source's token before the body is read, so
	// a burst over the limit costs little.
	if creds == credentialsValid && !rv.takeToken(w, src) {
		return
	}
	body, ok := rv.readBody(w, r, srcName)
	if !ok {
		return
	}
	if creds == credentialsSigned {
		if !src.validSignature(r, body) {
			rv.refuse(w, r, srcName)
			return
		}
		if !rv.takeToken(w, src) {
			return
		}
	}
	rv.deliver(w, r, src, body)
}

// takeToken spends one of the source's tokens on an authenticated request,
// or answers 429. A dropped webhook only delays a refresh to the next
// poll.
func (rv *Receiver) takeToken(w http.ResponseWriter, src *source) bool {
	wait := take(src.limiter)
	if wait == 0 {
		return true
	}
	setRetryAfter(w, wait)
	rv.log.Debug("registry webhook rate limited", "source", src.Name)
	rv.reply(w, src.Name, ResultRateLimited, http.StatusTooManyRequests, "rate limit exceeded")
	return false
}

// refuse answers a request that failed to authenticate: 401 while its
// client has failures left for this source, 429 after.
func (rv *Receiver) refuse(w http.ResponseWriter, r *http.Request, srcName string) {
	client := clientOf(r.RemoteAddr)
	if wait := rv.failures.spend(srcName, client); wait > 0 {
		setRetryAfter(w, wait)
		rv.log.Debug("registry webhook unauthenticated client rate limited", "source", srcName, "remote", client)
		rv.reply(w, srcName, ResultUnauthenticatedRateLimited, http.StatusTooManyRequests, "too many unauthenticated requests")
		return
	}
	// Never log what was sent: it may be a mistyped secret.
	rv.log.Warn("registry webhook unauthorized", "source", srcName, "remote", client)
	rv.reply(w, srcName, ResultUnauthorized, http.StatusUnauthorized, "missing or invalid credentials")
}

// readBody reads the body up to the limit, or answers 413 or 400.
func (rv *Receiver) readBody(w http.ResponseWriter, r *http.Request, srcName string) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rv.maxBody))
	if err == nil {
		return body, true
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		rv.log.Warn("registry webhook body too large", "source", srcName, "limit", rv.maxBody)
		rv.reply(w, srcName, ResultTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", rv.maxBody))
		return nil, false
	}
	rv.reply(w, srcName, ResultBadRequest, http.StatusBadRequest, "reading body failed")
	return nil, false
}

// deliver parses an authenticated body and hands its events to the
// Listener.
func (rv *Receiver) deliver(w http.ResponseWriter, r *http.Request, src *source, body []byte) {
	events, err := parse(&src.Source, r.Header, body)
	if err != nil {
		rv.log.Warn("registry webhook bad payload", "source", src.Name, "err", err)
		rv.reply(w, src.Name, ResultBadRequest, http.StatusBadRequest, err.Error())
		return
	}
	if len(events) == 0 {
		rv.log.Debug("registry webhook ignored", "source", src.Name)
		rv.metrics.request(src.Name, ResultIgnored)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	for _, ev := range events {
		rv.log.Debug("registry webhook push", "source", src.Name, "repository", ev.Repository, "tags", ev.Tags, "digest", ev.Digest)
		rv.listener.Pushed(r.Context(), ev)
	}
	rv.reply(w, src.Name, ResultAccepted, http.StatusAccepted, fmt.Sprintf("accepted %d repository refresh(es)", len(events)))
}

func (rv *Receiver) reply(w http.ResponseWriter, source, result string, code int, msg string) {
	rv.metrics.request(source, result)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}
