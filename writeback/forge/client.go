package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/retryafter"
)

// Options are what every Forge's client shares.
type Options struct {
	// Transport replaces the default HTTP transport (a custom CA, a
	// recorder for `run --dry-run`).
	Transport http.RoundTripper
	// Timeout bounds one request; DefaultTimeout when zero.
	Timeout time.Duration
	// Metrics, when set, counts the calls (Resolver.Resolve labels them
	// with the forge's kind).
	Metrics *Metrics
}

// Defaults: a forge answers a pull-request call in well under a second;
// thirty seconds tolerates a slow self-hosted one without holding a
// repository's writes for long. A rate limit without a stated wait is
// waited out for a minute, the window GitHub's secondary limits use.
const (
	DefaultTimeout             = 30 * time.Second
	defaultRateLimitWait       = time.Minute
	maxErrorSnippet            = 2 << 10
	maxResponseBody      int64 = 4 << 20
)

// client is the HTTP side of a Forge: JSON in and out, the credential
// and the forge's fixed headers, errors shaped for the caller
// (RateLimitError, PermanentError) without the credential.
type client struct {
	http    *http.Client
	timeout time.Duration
	cred    credential
	// header is set on every request (a forge's media type and API
	// version).
	header http.Header
}

// credential puts a forge credential on requests.
type credential interface {
	// set puts the credential on r and returns its secret part, which
	// errors mask should an answer quote it.
	set(ctx context.Context, r *http.Request) (secret string, err error)
	// refused drops secret after the forge answered 401 to it, and
	// reports whether another one may be had (a GitHub App's token).
	refused(secret string) bool
}

// headerToken is a fixed token in one header: name: prefix+token.
type headerToken struct{ name, prefix, token string }

func (h headerToken) set(_ context.Context, r *http.Request) (string, error) {
	r.Header.Set(h.name, h.prefix+h.token)
	return h.token, nil
}

func (headerToken) refused(string) bool { return false }

// basicAuth is HTTP basic authentication: a user and a password, an app
// password or a personal access token.
type basicAuth struct{ user, password string }

func (b basicAuth) set(_ context.Context, r *http.Request) (string, error) {
	r.SetBasicAuth(b.user, b.password)
	return b.password, nil
}

func (basicAuth) refused(string) bool { return false }

func newClient(o Options, cred credential, header http.Header) *client {
	c := &client{http: &http.Client{Transport: o.Transport}, timeout: o.Timeout, cred: cred, header: header}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c
}

// request is one API call: method to url (path is the part errors name),
// with in as its JSON body (nil: none) and a 2xx answer decoded into out
// (nil: discarded); target names the repository in errors.
type request struct {
	target       string
	method, path string
	url          string
	in, out      any
	cred         credential
}

// call sends method to r.API+path with in as its JSON body (nil: none)
// and decodes a 2xx answer into out (nil: discarded).
func (c *client) call(ctx context.Context, r Repo, method, path string, in, out any) error {
	return c.send(ctx, request{target: r.String(), method: method, path: path, url: r.API + path, in: in, out: out, cred: c.cred})
}

// send makes req; a 401 to a credential that can be renewed is tried once
// more with a new one.
func (c *client) send(ctx context.Context, req request) error {
	var body []byte
	if req.in != nil {
		// Not HTML-escaped, as the official clients send it: a body's
		// <!-- markers --> stay readable in a recording.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(req.in); err != nil {
			return fmt.Errorf("forge %s: %s %s: %w", req.target, req.method, req.path, err)
		}
		body = buf.Bytes()
	}
	for attempt := 0; ; attempt++ {
		secret, status, err := c.once(ctx, req, body)
		if status == http.StatusUnauthorized && attempt == 0 && req.cred.refused(secret) {
			continue
		}
		return err
	}
}

// once sends req once, within the client's timeout, and returns the
// credential's secret it used and the answer's status.
func (c *client) once(ctx context.Context, req request, body []byte) (secret string, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, req.url, rd)
	if err != nil {
		return "", 0, &PermanentError{fmt.Errorf("forge %s: %s %s: %w", req.target, req.method, req.path, cleanErr(err))}
	}
	hr.Header.Set("Accept", "application/json")
	for k, v := range c.header {
		hr.Header[k] = v
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("User-Agent", "crowsnest")
	if secret, err = req.cred.set(ctx, hr); err != nil {
		return "", 0, fmt.Errorf("forge %s: %s %s: %w", req.target, req.method, req.path, err)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return secret, 0, fmt.Errorf("forge %s: %s %s: %w", req.target, req.method, req.path, cleanErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return secret, resp.StatusCode, failure(req, resp, secret)
	}
	if req.out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
		return secret, resp.StatusCode, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody)).Decode(req.out); err != nil {
		return secret, resp.StatusCode, fmt.Errorf("forge %s: %s %s: reading the answer: %w", req.target, req.method, req.path, err)
	}
	return secret, resp.StatusCode, nil
}

// failure shapes a non-2xx answer: 429 and a 403 that says the rate limit
// is spent are a RateLimitError; other 4xx but 408 are permanent. secret
// is masked should the answer quote it.
func failure(req request, resp *http.Response, secret string) error {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorSnippet))
	text := strings.TrimSpace(string(snippet))
	if secret != "" {
		text = strings.ReplaceAll(text, secret, "***")
	}
	err := fmt.Errorf("forge %s: %s %s: %s: %s", req.target, req.method, req.path, resp.Status, text)
	limited := resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" ||
			bytes.Contains(bytes.ToLower(snippet), []byte("secondary rate limit"))))
	if limited {
		wait, ok := retryafter.FromHeader(resp.Header, time.Now())
		if !ok {
			wait = defaultRateLimitWait
		}
		return fmt.Errorf("%w: %w", &RateLimitError{Repo: req.target, RetryAfter: wait}, err)
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout {
		return &PermanentError{err}
	}
	return err
}

// cleanErr is err with the URL net/http put in it redacted.
func cleanErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, textredact.URL(ue.URL), ue.Err)
	}
	return err
}
