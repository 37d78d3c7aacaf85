package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/ocireq"
	"github.com/crowsnest-dev/crowsnest/internal/retryafter"
)

// HostConfig tunes how crowsnest talks to one registry. Zero fields take
// the defaults below.
type HostConfig struct {
	// RateLimit is the most requests per second sent to the registry;
	// negative means unlimited.
	RateLimit float64
	// Burst is how many requests may go at once before RateLimit paces
	// them; DefaultBurstWindow of RateLimit when zero.
	Burst int
	// MaxConcurrency bounds requests in flight to the registry.
	MaxConcurrency int
	// APIURL, when set, is where requests for this registry really go
	// ("https://registry-1.docker.io" for docker.io).
	APIURL string
	// Insecure allows plain HTTP and skips TLS verification.
	Insecure bool
	// TLS carries a custom CA pool; nil uses the system roots.
	TLS *tls.Config
	// MaxAttempts bounds tries of one request on 429, 5xx and timeouts.
	MaxAttempts int
	// RetryBaseDelay and RetryMaxDelay bound exponential backoff.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After crowsnest waits out; a
	// registry asking for more fails the request at once.
	MaxRetryAfter time.Duration
	// AttemptTimeout bounds one request, body included.
	AttemptTimeout time.Duration
	// PageSize asks for tag lists in pages of this many (the n parameter);
	// zero lets the registry choose. Pages are followed either way.
	PageSize int
	// Configured says the operator's config names this registry: its
	// metric series keep their own registry label whatever else
	// annotations name (MaxHostSeries).
	Configured bool
}

// Host defaults. Docker Hub allows roughly 100-200 manifest pulls per six
// hours but does not count HEAD or tag lists; 20 req/s with 8 in flight
// keeps a busy crowsnest far below what registries throttle, while a poll
// of hundreds of repositories still finishes in seconds. The burst is five
// seconds of that rate (100 requests): a cold start or a poll of up to a
// hundred repositories lists them at once instead of at 20/s (the S2
// benchmark's 50 lists took 2 s under a burst of 10), and a sustained load
// is paced all the same. Four attempts with 0.5s..30s backoff ride out a
// registry restart without hammering it.
const (
	DefaultRateLimit      = 20
	DefaultBurstWindow    = 5 * time.Second
	DefaultMaxConcurrency = 8
	DefaultMaxAttempts    = 4
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 30 * time.Second
	DefaultMaxRetryAfter  = 10 * time.Minute
	DefaultAttemptTimeout = 30 * time.Second
)

func (c HostConfig) withDefaults() HostConfig {
	if c.RateLimit == 0 {
		c.RateLimit = DefaultRateLimit
	}
	if c.Burst <= 0 {
		c.Burst = max(1, int(math.Ceil(c.RateLimit*DefaultBurstWindow.Seconds())))
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBaseDelay <= 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.RetryMaxDelay <= 0 {
		c.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	return c
}

// ErrRateLimited is returned when a registry asks crowsnest to wait longer
// than it may (MaxRetryAfter or the caller's deadline).
var ErrRateLimited = errors.New("rate limited by registry")

// RetryError says a request failed every attempt.
type RetryError struct {
	Host     string
	Attempts int
	// Last is the last failure: a status line or a transport error.
	Last error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("registry %s: giving up after %d attempts: %v", e.Host, e.Attempts, e.Last)
}

func (e *RetryError) Unwrap() error { return e.Last }

// StatusError is an HTTP status that ended a retried request.
type StatusError struct{ Status string }

func (e *StatusError) Error() string { return e.Status }

// hostTransport is the per-registry request pipeline under
// go-containerregistry's auth: pacing, a concurrency bound, Retry-After,
// retries with backoff and jitter, per-attempt timeouts and metrics.
type hostTransport struct {
	host string
	cfg  HostConfig
	base http.RoundTripper
	api  *url.URL
	// pace is the host's own pacing, for requests of repositories no
	// Endpoint claims; endpoints have theirs (endpointTransport).
	pace    *pacer
	metrics *Metrics
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) error

	mu           sync.Mutex
	blockedUntil time.Time // set by 429 Retry-After; every request waits
	// pings holds the registry's answer to GET /v2/ by scheme and host.
	// go-containerregistry pings once per repository it opens, but the
	// answer (anonymous, or which auth challenge) is the registry's, so it
	// is asked once per set of credentials (forgetPings on a change).
	pings      map[string]cachedPing
	pingFlight singleflight.Group
}

// maxPingBody bounds the ping response body kept; registries send an
// empty or tiny JSON body.
const maxPingBody = 4 << 10

type cachedPing struct {
	status int
	header http.Header
	body   []byte
}

func (p cachedPing) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: fmt.Sprintf("%d %s", p.status, http.StatusText(p.status)), StatusCode: p.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: p.header.Clone(),
		Body: io.NopCloser(bytes.NewReader(p.body)), ContentLength: int64(len(p.body)), Request: req,
	}
}

func pingKey(req *http.Request) string { return req.URL.Scheme + "://" + req.URL.Host }

// rememberPing reads a ping's answer and keeps it when it is one a client
// acts on (200 anonymous access, 401 with the auth challenge).
func (t *hostTransport) rememberPing(req *http.Request, resp *http.Response) cachedPing {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPingBody))
	_ = resp.Body.Close()
	p := cachedPing{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	if err == nil && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized) {
		t.mu.Lock()
		if t.pings == nil {
			t.pings = map[string]cachedPing{}
		}
		t.pings[pingKey(req)] = p
		t.mu.Unlock()
	}
	return p
}

// forgetPings makes the next ping ask the registry, when credentials
// change.
func (t *hostTransport) forgetPings() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pings = nil
}

// newHostTransport builds a host's pipeline; pace is its own pacing, nil
// for a new one from cfg.
func newHostTransport(host string, cfg HostConfig, m *Metrics, pace *pacer) (*hostTransport, error) {
	cfg = cfg.withDefaults()
	if pace == nil {
		pace = newPacer(pacing{rate: cfg.RateLimit, burst: cfg.Burst, concurrency: cfg.MaxConcurrency})
	}
	t := &hostTransport{host: host, cfg: cfg, pace: pace, metrics: m, now: time.Now, sleep: backoff.Sleep}
	if cfg.APIURL != "" {
		u, err := url.Parse(cfg.APIURL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("registry %s: invalid api URL %q", host, cfg.APIURL)
		}
		t.api = u
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.MaxConcurrency
	switch {
	case cfg.TLS != nil:
		tr.TLSClientConfig = cfg.TLS.Clone()
	case cfg.Insecure:
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the user asked for it per registry
	}
	if cfg.Insecure && tr.TLSClientConfig != nil {
		tr.TLSClientConfig.InsecureSkipVerify = true
	}
	t.base = tr
	return t, nil
}

// series is the registry label of the host's metrics.
func (t *hostTransport) series() string { return t.metrics.hostLabel(t.host, t.cfg.Configured) }

func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, t.pace)
}

// endpointTransport sends an endpoint's requests through its host's
// pipeline under the endpoint's pacing.
type endpointTransport struct {
	*hostTransport
	pace *pacer
}

func (e endpointTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return e.roundTrip(req, e.pace)
}

func (t *hostTransport) roundTrip(req *http.Request, p *pacer) (*http.Response, error) {
	kind := ocireq.Kind(req)
	if kind == "ping" && req.Method == http.MethodGet {
		return t.ping(req, p)
	}
	return t.send(req, kind, p)
}

// ping answers GET /v2/ from the cache, or asks the registry once for all
// callers asking at the same time.
func (t *hostTransport) ping(req *http.Request, pace *pacer) (*http.Response, error) {
	key := pingKey(req)
	t.mu.Lock()
	p, ok := t.pings[key]
	t.mu.Unlock()
	if ok {
		return p.response(req), nil
	}
	v, err, _ := t.pingFlight.Do(key, func() (any, error) {
		resp, err := t.send(req, "ping", pace)
		if err != nil {
			return nil, err
		}
		return t.rememberPing(req, resp), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(cachedPing).response(req), nil
}

// send runs a request through pacing, retries and metrics.
func (t *hostTransport) send(req *http.Request, kind string, pace *pacer) (*http.Response, error) {
	ctx := req.Context()
	var last error
	for attempt := 1; ; attempt++ {
		if err := t.wait(ctx, pace); err != nil {
			return nil, err
		}
		resp, release, err := t.attempt(req, kind, attempt, pace)
		delay, reason, retry := t.classify(ctx, resp, err, attempt)
		if !retry {
			if err != nil {
				release()
				if certificateError(err) {
					return nil, fmt.Errorf("registry %s: its TLS certificate is not trusted (not retried: trust its CA, or set insecure for this registry only): %w", t.host, err)
				}
				return nil, err
			}
			resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
			return resp, nil
		}
		if err != nil {
			last = err
		} else {
			last = &StatusError{Status: resp.Status}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		release()
		if attempt >= t.cfg.MaxAttempts {
			return nil, &RetryError{Host: t.host, Attempts: attempt, Last: last}
		}
		if reason == "429" {
			if err := t.block(ctx, delay); err != nil {
				return nil, err
			}
			delay = 0 // wait() honours the block, for every request
		}
		t.metrics.retry(t.series(), reason)
		if err := t.sleep(ctx, delay); err != nil {
			return nil, err
		}
		if req.Body != nil && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// attempt sends one try with its own timeout. release frees the
// concurrency slot and the timeout; for a returned response it runs when
// the body is closed (or the timeout fires, should a caller never close).
func (t *hostTransport) attempt(req *http.Request, kind string, n int, pace *pacer) (*http.Response, func(), error) {
	actx, cancel := context.WithTimeout(req.Context(), t.cfg.AttemptTimeout)
	var once sync.Once
	free := func() { once.Do(func() { <-pace.sem }) }
	stop := context.AfterFunc(actx, free)
	release := func() { stop(); cancel(); free() }
	r := req.Clone(actx)
	if n > 1 && req.Body != nil && req.GetBody == nil {
		release()
		return nil, func() {}, fmt.Errorf("registry %s: cannot retry a request whose body cannot be replayed", t.host)
	}
	if t.api != nil && r.URL.Host == t.host {
		r.URL.Scheme, r.URL.Host = t.api.Scheme, t.api.Host
		r.Host = ""
	}
	start := t.now()
	resp, err := t.base.RoundTrip(r)
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	t.metrics.request(t.series(), kind, code, t.now().Sub(start))
	return resp, release, err
}

// certificateError reports a TLS certificate that failed verification:
// retrying meets the same certificate, so it is a configuration error,
// not a network one.
func certificateError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// classify decides whether a try is retried, after how long and why.
func (t *hostTransport) classify(ctx context.Context, resp *http.Response, err error, attempt int) (time.Duration, string, bool) {
	if ctx.Err() != nil {
		return 0, "", false // the caller gave up: no retry
	}
	delay := t.backoff(attempt)
	if err != nil {
		if certificateError(err) {
			return 0, "", false // the same certificate is refused again
		}
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return delay, "timeout", true
		}
		return delay, "network", true
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), t.now()); ok {
			return d, "429", true
		}
		return delay, "429", true
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return delay, "5xx", true
	}
	return 0, "", false
}

// backoff is exponential with full jitter in its upper half, so clients
// that failed together do not retry together.
func (t *hostTransport) backoff(attempt int) time.Duration {
	return backoff.Delay(t.cfg.RetryBaseDelay, t.cfg.RetryMaxDelay, attempt)
}

// block makes every request to the host wait d, as a 429 asks.
func (t *hostTransport) block(ctx context.Context, d time.Duration) error {
	if d > t.cfg.MaxRetryAfter {
		return fmt.Errorf("%w: %s asks to wait %s (more than the %s crowsnest waits)", ErrRateLimited, t.host, d, t.cfg.MaxRetryAfter)
	}
	until := t.now().Add(d)
	if dl, ok := ctx.Deadline(); ok && until.After(dl) {
		return fmt.Errorf("%w: %s asks to wait %s, past this request's deadline", ErrRateLimited, t.host, d)
	}
	t.mu.Lock()
	if until.After(t.blockedUntil) {
		t.blockedUntil = until
	}
	t.mu.Unlock()
	return nil
}

// wait holds a request until Retry-After has passed, the rate limiter
// of its endpoint (pace) allows it and a concurrency slot is free.
func (t *hostTransport) wait(ctx context.Context, pace *pacer) error {
	t.mu.Lock()
	until := t.blockedUntil
	t.mu.Unlock()
	if d := until.Sub(t.now()); d > 0 {
		t.metrics.waited(t.series(), "retry-after", d)
		if err := t.sleep(ctx, d); err != nil {
			return err
		}
	}
	if r := pace.limiter.Reserve(); r.OK() {
		if d := r.Delay(); d > 0 {
			t.metrics.waited(t.series(), "rate", d)
			if err := t.sleep(ctx, d); err != nil {
				r.Cancel()
				return err
			}
		}
	}
	select {
	case pace.sem <- struct{}{}:
		return nil
	default:
	}
	start := t.now()
	select {
	case pace.sem <- struct{}{}:
		t.metrics.waited(t.series(), "concurrency", t.now().Sub(start))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
