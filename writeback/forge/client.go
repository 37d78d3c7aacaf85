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
// header, errors shaped for the caller (RateLimitError, PermanentError)
// without the credential.
type client struct {
	http    *http.Client
	timeout time.Duration
	// authorize sets the credential on a request.
	authorize func(*http.Request)
}

func newClient(o Options, authorize func(*http.Request)) *client {
	c := &client{http: &http.Client{Transport: o.Transport}, timeout: o.Timeout, authorize: authorize}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c
}

// call sends method to r.API+path with in as its JSON body (nil: none)
// and decodes a 2xx answer into out (nil: discarded).
func (c *client) call(ctx context.Context, r Repo, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("forge %s: %s %s: %w", r, method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.API+path, body)
	if err != nil {
		return &PermanentError{fmt.Errorf("forge %s: %s %s: %w", r, method, path, cleanErr(err))}
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "crowsnest")
	c.authorize(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("forge %s: %s %s: %w", r, method, path, cleanErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.failure(r, method, path, resp)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody)).Decode(out); err != nil {
		return fmt.Errorf("forge %s: %s %s: reading the answer: %w", r, method, path, err)
	}
	return nil
}

// failure shapes a non-2xx answer: 429 and a 403 that says the rate limit
// is spent are a RateLimitError; other 4xx but 408 are permanent.
func (c *client) failure(r Repo, method, path string, resp *http.Response) error {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorSnippet))
	err := fmt.Errorf("forge %s: %s %s: %s: %s", r, method, path, resp.Status, strings.TrimSpace(string(snippet)))
	limited := resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" ||
			bytes.Contains(bytes.ToLower(snippet), []byte("secondary rate limit"))))
	if limited {
		wait, ok := retryafter.FromHeader(resp.Header, time.Now())
		if !ok {
			wait = defaultRateLimitWait
		}
		return fmt.Errorf("%w: %w", &RateLimitError{Repo: r.String(), RetryAfter: wait}, err)
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
