package notify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
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

func TestWebhookSend(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
	secret := []byte("hmac-secret-value")
	wh, err := notify.NewWebhook("github", srv.URL+"/base?q=1",
		notify.WithHeader("X-Team", "platform"),
		notify.WithBearerToken("bearer-secret-token"),
		notify.WithHMAC(secret, ""),
	)
	if err != nil {
		t.Fatal(err)
	}
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
	// Verify the signature independently of notify.Sign.
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
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	wh, err := notify.NewWebhook("hook", srv.URL, notify.WithBasicAuth("user", "basic-password"), notify.WithWebhookTLS(false, ca))
	if err != nil {
		t.Fatal(err)
	}
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
	untrusted, err := notify.NewWebhook("hook", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
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
			wh, err := notify.NewWebhook("hook", srv.URL+"/secret-path-token", notify.WithBearerToken("tok-123"), notify.WithBasicAuth("u", "pw-456"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = wh.Send(t.Context(), notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {Body: "{}"}}}, notify.Destination{})
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
	wh, err := notify.NewWebhook("hook", "http://127.0.0.1:1/hooks/secret-path-token")
	if err != nil {
		t.Fatal(err)
	}
	_, err = wh.Send(t.Context(), notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {}}}, notify.Destination{})
	if err == nil || strings.Contains(err.Error(), "secret-path-token") {
		t.Errorf("connection error = %v, want one without the URL path", err)
	}
}
