package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// refusingWebhook records a webhook's requests and refuses each with
// status (429 with Retry-After: 7).
func refusingWebhook(t *testing.T, status int) *testnotify.Recorder {
	t.Helper()
	return testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer {
		a := testnotify.Answer{Status: status, Header: map[string]string{}, Body: "nope"}
		if status == http.StatusTooManyRequests {
			a.Header["Retry-After"] = "7"
		}
		return a
	}})
}

// newWebhook builds the webhook service name of c.
func newWebhook(t *testing.T, name string, c config.WebhookService, o svc.Options) *webhook.Sender {
	t.Helper()
	wh, err := webhook.New(name, &c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Close() })
	return wh
}

func TestWebhookSend(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
	secret := []byte("hmac-secret-value")
	wh := newWebhook(t, "github", config.WebhookService{
		URL:        srv.URL + "/base?q=1",
		Headers:    []config.Header{{Name: "X-Team", Value: "platform"}},
		Bearer:     config.InlineSecret("bearer-secret-token"),
		HMACSecret: config.InlineSecret(string(secret)),
	}, svc.Options{})
	n := notify.Notification{Webhook: map[string]notify.WebhookTemplate{
		"github": {Method: "put", Path: "/repos/org/app/statuses/abc", Body: `{"state":"success"}`},
	}}
	rc, err := wh.Send(t.Context(), n, notify.Destination{Service: "webhook.github"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.ID != "200 OK" {
		t.Errorf("receipt = %+v, want 200 OK", rc)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if diff := cmp.Diff(testnotify.Request{Method: "PUT", Path: "/base/repos/org/app/statuses/abc", Body: `{"state":"success"}`}, testnotify.Request{Method: got.Method, Path: got.Path, Body: got.Body}); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	for h, want := range map[string]string{"X-Team": "platform", "Authorization": "Bearer bearer-secret-token", "Content-Type": "application/json"} {
		if got.Header.Get(h) != want {
			t.Errorf("header %s = %q, want %q", h, got.Header.Get(h), want)
		}
	}
	// Verify the signature independently of webhook.Sign.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(got.Body))
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); got.Header.Get("X-Crowsnest-Signature") != want {
		t.Errorf("signature = %q, want %q", got.Header.Get("X-Crowsnest-Signature"), want)
	}

	// A notification without webhook.github is skipped, nothing sent.
	rc, err = wh.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Service: "webhook.github"})
	if err != nil || !rc.Skipped {
		t.Errorf("Send without a webhook template = %+v, %v; want skipped", rc, err)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("a skipped notification made a request")
	}
}

func TestWebhookBasicAuthDefaultMethodAndTLS(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{TLS: true})
	ca := x509.NewCertPool()
	ca.AddCert(srv.Certificate())
	wh := newWebhook(t, "hook", config.WebhookService{URL: srv.URL, BasicAuth: &config.BasicAuth{Username: "user", Password: config.InlineSecret("basic-password")}}, svc.Options{RootCAs: ca})
	n := notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {Body: "plain"}}}
	if _, err := wh.Send(t.Context(), n, notify.Destination{}); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.Method != http.MethodPost {
		t.Errorf("method = %s, want POST (crowsnest's default)", got.Method)
	}
	if u, p, ok := (&http.Request{Header: got.Header}).BasicAuth(); !ok || u != "user" || p != "basic-password" {
		t.Errorf("basic auth = %q %q %v", u, p, ok)
	}

	// Without the CA the server's certificate is refused.
	untrusted := newWebhook(t, "hook", config.WebhookService{URL: srv.URL}, svc.Options{})
	if _, err := untrusted.Send(t.Context(), n, notify.Destination{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted TLS: error = %v, want a certificate error", err)
	}
}

func TestWebhookErrors(t *testing.T) {
	tests := []struct {
		status        int
		wantPermanent bool
		wantRateLimit bool
	}{
		{status: http.StatusBadRequest, wantPermanent: true},
		{status: http.StatusNotFound, wantPermanent: true},
		{status: http.StatusTooManyRequests, wantRateLimit: true},
		{status: http.StatusBadGateway},
		{status: http.StatusRequestTimeout},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			srv := refusingWebhook(t, tt.status)
			wh := newWebhook(t, "hook", config.WebhookService{URL: srv.URL + "/secret-path-token", Bearer: config.InlineSecret("tok-123"),
				BasicAuth: &config.BasicAuth{Username: "u", Password: config.InlineSecret("pw-456")}}, svc.Options{})
			_, err := wh.Send(t.Context(), notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {Body: "{}"}}}, notify.Destination{})
			if err == nil {
				t.Fatal("want an error")
			}
			if got := notify.IsPermanent(err); got != tt.wantPermanent {
				t.Errorf("permanent = %v, want %v (%v)", got, tt.wantPermanent, err)
			}
			var rl *notify.RateLimitError
			if got := errors.As(err, &rl); got != tt.wantRateLimit || (got && rl.RetryAfter.Seconds() != 7) {
				t.Errorf("rate limit = %v %+v, want %v with 7s", got, rl, tt.wantRateLimit)
			}
			for _, secret := range []string{"secret-path-token", "tok-123", "pw-456"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q leaks %q", err, secret)
				}
			}
		})
	}
	// A connection error does not repeat the URL's secret path either.
	wh := newWebhook(t, "hook", config.WebhookService{URL: "http://127.0.0.1:1/hooks/secret-path-token"}, svc.Options{})
	_, err := wh.Send(t.Context(), notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {}}}, notify.Destination{})
	if err == nil || strings.Contains(err.Error(), "secret-path-token") {
		t.Errorf("connection error = %v, want one without the URL path", err)
	}
}
