package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/retryafter"
)

// Webhook defaults: most receivers answer in well under a second; ten
// seconds tolerates a slow one without letting a hanging one hold a
// delivery slot for long. Error bodies are read up to 4 KiB for the log.
const (
	DefaultWebhookTimeout  = 10 * time.Second
	DefaultWebhookMethod   = http.MethodPost
	DefaultSignatureHeader = "X-Crowsnest-Signature"
	// DeliveryHeader carries the delivery ID, the same on every attempt
	// of a message, for receivers to drop a repeat.
	DeliveryHeader          = "X-Crowsnest-Delivery"
	maxWebhookResponseBytes = 4 << 10
)

// Webhook sends the notification's webhook.<name> request (method, path
// appended to the URL, body) to one HTTP endpoint.
type Webhook struct {
	name            string
	url             *url.URL
	method          string
	headers         http.Header
	username        string
	password        string
	bearer          string
	hmacSecret      []byte
	signatureHeader string
	timeout         time.Duration
	tls             *tls.Config
	client          *http.Client
	sendMessage     bool
}

var _ Service = (*Webhook)(nil)

// WebhookOption configures a Webhook.
type WebhookOption func(*Webhook) error

// NewWebhook builds the webhook service called name (the key templates use
// under webhook:) that sends to rawURL.
func NewWebhook(name, rawURL string, opts ...WebhookOption) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook %s: the URL must be http or https with a host", name)
	}
	w := &Webhook{name: name, url: u, method: DefaultWebhookMethod, headers: http.Header{},
		signatureHeader: DefaultSignatureHeader, timeout: DefaultWebhookTimeout}
	for _, opt := range opts {
		if err := opt(w); err != nil {
			return nil, fmt.Errorf("webhook %s: %w", name, err)
		}
	}
	if w.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = w.tls
		w.client = &http.Client{Transport: tr}
	}
	return w, nil
}

// WithWebhookMethod sets the method used when a template names none
// (crowsnest's default is POST).
func WithWebhookMethod(m string) WebhookOption {
	return func(w *Webhook) error {
		if m == "" || strings.ContainsAny(m, " \t\r\n") {
			return fmt.Errorf("invalid method %q", m)
		}
		w.method = strings.ToUpper(m)
		return nil
	}
}

// WithHeader adds a request header.
func WithHeader(name, value string) WebhookOption {
	return func(w *Webhook) error {
		if name == "" {
			return errors.New("empty header name")
		}
		w.headers.Add(name, value)
		return nil
	}
}

// WithBasicAuth sends HTTP basic credentials.
func WithBasicAuth(username, password string) WebhookOption {
	return func(w *Webhook) error { w.username, w.password = username, password; return nil }
}

// WithBearerToken sends Authorization: Bearer token.
func WithBearerToken(token string) WebhookOption {
	return func(w *Webhook) error { w.bearer = token; return nil }
}

// WithHMAC signs each body with HMAC-SHA256 under secret, sent in header
// (DefaultSignatureHeader when empty) as "sha256=<hex>", GitHub's format.
func WithHMAC(secret []byte, header string) WebhookOption {
	return func(w *Webhook) error {
		if len(secret) == 0 {
			return errors.New("empty HMAC secret")
		}
		w.hmacSecret = append([]byte(nil), secret...)
		if header != "" {
			w.signatureHeader = header
		}
		return nil
	}
}

// WithWebhookTLS trusts caPEM (in addition to nothing else: a private CA)
// when given, and skips verification when insecure is set.
func WithWebhookTLS(insecureSkipVerify bool, caPEM []byte) WebhookOption {
	return func(w *Webhook) error {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecureSkipVerify} // opt-in by config
		if len(caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				return errors.New("no certificate found in the CA bundle")
			}
			cfg.RootCAs = pool
		}
		w.tls = cfg
		return nil
	}
}

// WithWebhookTimeout bounds one request, response included.
func WithWebhookTimeout(d time.Duration) WebhookOption {
	return func(w *Webhook) error {
		if d <= 0 {
			return fmt.Errorf("timeout %s must be positive", d)
		}
		w.timeout = d
		return nil
	}
}

// WithMessageBody sends the notification's message as the body (with the
// service's method and URL) when it has no webhook.<name> request, as
// argocd-notifications' webhook service does, instead of skipping it.
func WithMessageBody() WebhookOption {
	return func(w *Webhook) error { w.sendMessage = true; return nil }
}

// WithWebhookHTTPClient sends through c (its transport's TLS settings then
// win over WithWebhookTLS).
func WithWebhookHTTPClient(c *http.Client) WebhookOption {
	return func(w *Webhook) error { w.client = c; return nil }
}

// Send makes the request of n.Webhook[name]. A notification without one
// is skipped, or sent as its message (WithMessageBody). 4xx other than 408
// and 429 is permanent.
func (w *Webhook) Send(ctx context.Context, n Notification, _ Destination) (Receipt, error) {
	wt, ok := n.Webhook[w.name]
	contentType := "application/json"
	switch {
	case !ok && w.sendMessage:
		wt, contentType = WebhookTemplate{Body: n.Message}, "text/plain; charset=utf-8"
	case !ok:
		return Receipt{Skipped: true, Detail: "template has no webhook." + w.name}, nil
	}
	method := w.method
	if wt.Method != "" {
		method = strings.ToUpper(wt.Method)
	}
	target := *w.url
	if wt.Path != "" {
		target.Path = strings.TrimSuffix(target.Path, "/") + "/" + strings.TrimPrefix(wt.Path, "/")
		target.RawPath = ""
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	body := []byte(wt.Body)
	req, err := http.NewRequestWithContext(ctx, method, target.String(), strings.NewReader(wt.Body))
	if err != nil {
		return Receipt{}, Permanent(fmt.Errorf("webhook %s: building request: %w", w.name, cleanURLError(err, target.String())))
	}
	for k, v := range w.headers {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" && len(body) > 0 {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", userAgent)
	if id := DeliveryIDFrom(ctx); id != "" {
		req.Header.Set(DeliveryHeader, id)
	}
	switch {
	case w.bearer != "":
		req.Header.Set("Authorization", "Bearer "+w.bearer)
	case w.username != "" || w.password != "":
		req.SetBasicAuth(w.username, w.password)
	}
	if w.hmacSecret != nil {
		req.Header.Set(w.signatureHeader, Sign(w.hmacSecret, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return Receipt{}, fmt.Errorf("webhook %s: %w", w.name, cleanURLError(err, target.String()))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return Receipt{ID: resp.Status}, nil
	}
	err = fmt.Errorf("webhook %s: %s %s: %s: %s", w.name, method, redactURL(target.String()), resp.Status, strings.TrimSpace(string(snippet)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); ok {
			return Receipt{}, fmt.Errorf("%w: %w", &RateLimitError{Service: "webhook " + w.name, RetryAfter: d}, err)
		}
		return Receipt{}, err
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout:
		return Receipt{}, Permanent(err)
	}
	return Receipt{}, err
}

// Sign returns the signature header value for body: "sha256=" and the hex
// HMAC-SHA256 of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

const userAgent = "crowsnest"

// Close releases idle connections.
func (w *Webhook) Close() error {
	w.client.CloseIdleConnections()
	return nil
}
