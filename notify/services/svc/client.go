package svc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// maxResponse bounds a response body read into memory (error snippets,
// JSON answers such as a GitHub deployment ID).
const maxResponse = 1 << 20

// Client is the HTTP client of one configured service, shared by all its
// sends: connections are reused, every request carries the send's
// context and the service's timeout, and errors are shaped for the
// outbox.
type Client struct {
	// Service names the configured service in errors ("teams.ops").
	Service string
	http    *http.Client
	timeout time.Duration
	now     func() time.Time
}

// NewClient returns the shared client of service name. insecure skips TLS
// verification (the service's insecureSkipVerify).
func NewClient(name string, insecure bool, o Options) *Client {
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if insecure {
			t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the operator's insecureSkipVerify
		}
		tr = t
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Client{Service: name, http: &http.Client{Transport: tr}, timeout: timeout, now: now}
}

// Now is the client's clock.
func (c *Client) Now() time.Time { return c.now() }

// Request is one HTTP request a sender makes.
type Request struct {
	Method string
	URL    string
	Header http.Header
	// Body is sent as is; JSON, when set, is marshalled instead with
	// Content-Type application/json.
	Body []byte
	JSON any
	// OK lists extra statuses that are not failures (404 for a lookup).
	OK []int
}

// Response is a finished request's status, headers and body (at most
// 1 MiB).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body as JSON into out.
func (r *Response) Decode(out any) error { return json.Unmarshal(r.Body, out) }

// Do sends r within ctx and the client's timeout. A 2xx answer (or one in
// r.OK) returns the Response. 429 returns a *notify.RateLimitError when
// the server says how long to wait (Retry-After, or X-RateLimit-Reset as
// GitHub and others send), other 4xx (except 408) are permanent, and 5xx
// and network errors are retried by the outbox. Errors carry the method,
// the URL without path or query (they often hold the secret) and the
// start of the answer.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	body := r.Body
	if r.JSON != nil {
		b, err := json.Marshal(r.JSON)
		if err != nil {
			return nil, notify.Permanent(fmt.Errorf("%s: encoding request: %w", c.Service, err))
		}
		body = b
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(body))
	if err != nil {
		return nil, notify.Permanent(fmt.Errorf("%s: building request to %s: invalid URL or method", c.Service, notify.RedactURL(r.URL)))
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if r.JSON != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "crowsnest")
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Service, notify.CleanURLError(err, r.URL))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
	if resp.StatusCode/100 == 2 || slices.Contains(r.OK, resp.StatusCode) {
		return out, nil
	}
	return out, c.statusError(r.Method, r.URL, resp, data)
}

func (c *Client) statusError(method, rawURL string, resp *http.Response, data []byte) error {
	snippet := strings.TrimSpace(string(data))
	if len(snippet) > 512 {
		snippet = snippet[:512] + "..."
	}
	err := fmt.Errorf("%s: %s %s: %s: %s", c.Service, method, notify.RedactURL(rawURL), resp.Status, snippet)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := notify.RetryAfter(resp.Header, c.now()); ok {
			return fmt.Errorf("%w: %w", &notify.RateLimitError{Service: c.Service, RetryAfter: d}, err)
		}
		return err
	case resp.StatusCode == http.StatusRequestTimeout:
		return err
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return notify.Permanent(err)
	}
	return err
}

// Close releases idle connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}
