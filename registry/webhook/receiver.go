package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"path"
	"regexp"
	"strconv"

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
	// DefaultRateLimit is the sustained requests per second per source: far
	// above what a registry sends for real pushes, low enough that a flood
	// cannot keep the receiver busy hashing bodies.
	DefaultRateLimit rate.Limit = 5
	// DefaultBurst lets a CI run that pushes many tags or platforms at once
	// through without a 429.
	DefaultBurst = 50
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

// Config configures a Receiver.
type Config struct {
	Sources []Source
	// OnPush marks a repository for refresh. It runs on the request's
	// goroutine and must be quick (Poller.Refresh is).
	OnPush func(ctx context.Context, ev PushEvent)
	// AllowUnauthenticated accepts sources without a secret. Off by
	// default: anyone who can reach the endpoint could otherwise make
	// crowsnest poll registries at will.
	AllowUnauthenticated bool
	// MaxBodyBytes bounds request bodies; zero is DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// RateLimit and Burst shape each source's token bucket; zero values
	// use the defaults and rate.Inf turns limiting off.
	RateLimit rate.Limit
	Burst     int
	Metrics   *Metrics
	Log       *slog.Logger
}

// Receiver is the http.Handler for registry webhooks. Mount it so that the
// last path segment names the source, e.g.
// mux.Handle("/webhooks/registry/{source}", recv).
type Receiver struct {
	onPush  func(context.Context, PushEvent)
	maxBody int64
	metrics *Metrics
	log     *slog.Logger
	sources map[string]*source
}

type source struct {
	Source
	limiter *rate.Limiter
}

var _ http.Handler = (*Receiver)(nil)

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// NewReceiver validates cfg and builds a Receiver.
func NewReceiver(cfg Config) (*Receiver, error) {
	if cfg.OnPush == nil {
		return nil, errors.New("webhook receiver: OnPush is required")
	}
	if cfg.MaxBodyBytes < 0 || cfg.RateLimit < 0 || cfg.Burst < 0 {
		return nil, errors.New("webhook receiver: MaxBodyBytes, RateLimit and Burst must not be negative")
	}
	rv := &Receiver{
		onPush:  cfg.OnPush,
		maxBody: cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		metrics: cfg.Metrics,
		log:     cfg.Log,
		sources: make(map[string]*source, len(cfg.Sources)),
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

// ServeHTTP authenticates, parses and hands push events to OnPush.
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
	// Limit before reading or hashing the body, so a flood costs little. A
	// dropped webhook only delays a refresh to the next poll.
	if res := src.limiter.Reserve(); res.Delay() > 0 {
		res.Cancel()
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(res.Delay().Seconds()))))
		rv.log.Debug("registry webhook rate limited", "source", srcName)
		rv.reply(w, srcName, ResultRateLimited, http.StatusTooManyRequests, "rate limit exceeded")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rv.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			rv.log.Warn("registry webhook body too large", "source", srcName, "limit", rv.maxBody)
			rv.reply(w, srcName, ResultTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", rv.maxBody))
			return
		}
		rv.reply(w, srcName, ResultBadRequest, http.StatusBadRequest, "reading body failed")
		return
	}
	if !src.authenticate(r, body) {
		// Never log what was sent: it may be a mistyped secret.
		rv.log.Warn("registry webhook unauthorized", "source", srcName, "remote", r.RemoteAddr)
		rv.reply(w, srcName, ResultUnauthorized, http.StatusUnauthorized, "missing or invalid credentials")
		return
	}
	events, err := parse(&src.Source, r.Header, body)
	if err != nil {
		rv.log.Warn("registry webhook bad payload", "source", srcName, "err", err)
		rv.reply(w, srcName, ResultBadRequest, http.StatusBadRequest, err.Error())
		return
	}
	if len(events) == 0 {
		rv.log.Debug("registry webhook ignored", "source", srcName)
		rv.metrics.request(srcName, ResultIgnored)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	for _, ev := range events {
		rv.log.Debug("registry webhook push", "source", srcName, "repository", ev.Repository, "tags", ev.Tags, "digest", ev.Digest)
		rv.onPush(r.Context(), ev)
	}
	rv.reply(w, srcName, ResultAccepted, http.StatusAccepted, fmt.Sprintf("accepted %d repository refresh(es)", len(events)))
}

func (rv *Receiver) reply(w http.ResponseWriter, source, result string, code int, msg string) {
	rv.metrics.request(source, result)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}
