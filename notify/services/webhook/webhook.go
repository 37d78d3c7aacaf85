// Package webhook is crowsnest's webhook sender (service type webhook):
// each notification's webhook.<name> request (method, path appended to the
// service's URL, body), with headers, basic or bearer auth and an HMAC
// signature, the delivery ID in notify.DeliveryHeader, and 4xx answers
// dead-lettered at once. Its settings are config.WebhookService; Kind is
// how package services builds it.
package webhook

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/retryafter"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Webhook defaults: most receivers answer in well under a second; ten
// seconds tolerates a slow one without letting a hanging one hold a
// delivery slot for long. Error bodies are read up to 4 KiB for the log.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultMethod          = http.MethodPost
	DefaultSignatureHeader = "X-Crowsnest-Signature"
	maxResponseBytes       = 4 << 10
)

// Kind describes service type webhook; package services lists it.
var Kind = &svc.Kind{
	Name: config.ServiceWebhook,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return New(name, s.(*config.WebhookService), o)
	},
}

// Sender sends the notification's webhook.<name> request to one HTTP
// endpoint.
type Sender struct {
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
	client          *http.Client
	sendMessage     bool
}

var _ notify.Service = (*Sender)(nil)

// New builds the webhook service called name (the key templates use under
// webhook:) from its settings; its secret references must be resolved.
// Errors name the setting, never a secret.
func New(name string, c *config.WebhookService, o svc.Options) (*Sender, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook %s: the URL must be http or https with a host", name)
	}
	method := cmp.Or(c.Method, DefaultMethod)
	if strings.ContainsAny(method, " \t\r\n") {
		return nil, fmt.Errorf("webhook %s: invalid method %q", name, method)
	}
	w := &Sender{name: name, url: u, method: strings.ToUpper(method), headers: http.Header{},
		signatureHeader: cmp.Or(c.HMACHeader, DefaultSignatureHeader), timeout: cmp.Or(c.Timeout.Duration, DefaultTimeout),
		sendMessage: c.SendMessage}
	for _, h := range c.Headers {
		if h.Name == "" {
			return nil, fmt.Errorf("webhook %s: empty header name", name)
		}
		w.headers.Add(h.Name, h.Value)
	}
	if err := w.credentials(c); err != nil {
		return nil, err
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs, InsecureSkipVerify: c.InsecureSkipVerify} // opt-in by config
		tr = t
	}
	w.client = &http.Client{Transport: tr}
	return w, nil
}

// credentials reads the basic auth password, bearer token and HMAC secret.
func (w *Sender) credentials(c *config.WebhookService) error {
	if c.BasicAuth != nil {
		pw, err := c.BasicAuth.Password.Value()
		if err != nil {
			return fmt.Errorf("basicAuth.password: %w", err)
		}
		w.username, w.password = c.BasicAuth.Username, pw
	}
	if !c.Bearer.IsZero() {
		tok, err := c.Bearer.Value()
		if err != nil {
			return fmt.Errorf("bearer: %w", err)
		}
		w.bearer = tok
	}
	if !c.HMACSecret.IsZero() {
		sec, err := c.HMACSecret.Value()
		if err != nil {
			return fmt.Errorf("hmacSecret: %w", err)
		}
		if sec == "" {
			return fmt.Errorf("webhook %s: empty HMAC secret", w.name)
		}
		w.hmacSecret = []byte(sec)
	}
	return nil
}

// Send makes the request of n.Webhook[name]. A notification without one
// is skipped, or sent as its message (config.WebhookService.SendMessage). 4xx other than 408
// and 429 is permanent.
func (w *Sender) Send(ctx context.Context, n notify.Notification, _ notify.Destination) (notify.Receipt, error) {
	wt, ok := n.Webhook[w.name]
	contentType := "application/json"
	switch {
	case !ok && w.sendMessage:
		wt, contentType = notify.WebhookTemplate{Body: n.Message}, "text/plain; charset=utf-8"
	case !ok:
		return notify.Receipt{Skipped: true, Detail: "template has no webhook." + w.name}, nil
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
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("webhook %s: building request: %w", w.name, notify.CleanURLError(err, target.String())))
	}
	for k, v := range w.headers {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" && len(body) > 0 {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", userAgent)
	if id := notify.DeliveryIDFrom(ctx); id != "" {
		req.Header.Set(notify.DeliveryHeader, id)
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
		return notify.Receipt{}, fmt.Errorf("webhook %s: %w", w.name, notify.CleanURLError(err, target.String()))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return notify.Receipt{ID: resp.Status}, nil
	}
	err = fmt.Errorf("webhook %s: %s %s: %s: %s", w.name, method, notify.RedactURL(target.String()), resp.Status, strings.TrimSpace(string(snippet)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); ok {
			return notify.Receipt{}, fmt.Errorf("%w: %w", &notify.RateLimitError{Service: "webhook " + w.name, RetryAfter: d}, err)
		}
		return notify.Receipt{}, err
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout:
		return notify.Receipt{}, notify.Permanent(err)
	}
	return notify.Receipt{}, err
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
func (w *Sender) Close() error {
	w.client.CloseIdleConnections()
	return nil
}
