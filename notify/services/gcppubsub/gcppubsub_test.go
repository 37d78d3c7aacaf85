package gcppubsub_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const (
	gcpTokenURI   = "https://oauth2.googleapis.com/token"
	gcpEmail      = "argocd-notifications@my-project.iam.gserviceaccount.com"
	gcpKeyToken   = "ya29.key-token-very-secret"
	gcpMetaToken  = "ya29.metadata-token-very-secret"
	gcpPublishURL = "/v1/projects/my-project/topics/deploys:publish"
)

// googleDouble answers as Google's token endpoint, the metadata server
// and Pub/Sub's publish API; it verifies every JWT assertion with the
// test key's public half and notes what is wrong in problems.
type googleDouble struct {
	pub      *rsa.PublicKey
	mu       sync.Mutex
	problems []string
	tokens   int
	// publish answers a publish request that carries a valid token.
	publish func(r svctest.Received) svctest.Answer
}

func (g *googleDouble) problem(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.problems = append(g.problems, fmt.Sprintf(format, args...))
}

func (g *googleDouble) route(r svctest.Received) svctest.Answer {
	switch {
	case r.Method == http.MethodPost && r.Path == "/token":
		g.mu.Lock()
		g.tokens++
		g.mu.Unlock()
		form, _ := url.ParseQuery(r.Body)
		if form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			g.problem("grant_type %q", form.Get("grant_type"))
		}
		if err := g.verify(form.Get("assertion")); err != nil {
			g.problem("assertion: %v", err)
			return svctest.Answer{Status: http.StatusBadRequest, Body: `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`}
		}
		return svctest.Answer{Body: `{"access_token":"` + gcpKeyToken + `","expires_in":3599,"token_type":"Bearer"}`}
	case r.Method == http.MethodGet && r.Path == "/computeMetadata/v1/instance/service-accounts/default/token":
		if r.Header.Get("Metadata-Flavor") != "Google" {
			return svctest.Answer{Status: http.StatusForbidden, Body: "Missing Metadata-Flavor:Google header."}
		}
		return svctest.Answer{Body: `{"access_token":"` + gcpMetaToken + `","expires_in":3599,"token_type":"Bearer"}`}
	case r.Method == http.MethodPost && r.Path == gcpPublishURL:
		if a := r.Header.Get("Authorization"); a != "Bearer "+gcpKeyToken && a != "Bearer "+gcpMetaToken {
			return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`}
		}
		if g.publish != nil {
			return g.publish(r)
		}
		return svctest.Answer{Body: `{"messageIds":["4242"]}`}
	}
	return svctest.Answer{Status: http.StatusNotFound, Body: `{"error":{"code":404,"status":"NOT_FOUND"}}`}
}

// verify checks an assertion's RS256 signature and claims.
func (g *googleDouble) verify(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(g.pub, crypto.SHA256, sum[:], sig); err != nil {
		return err
	}
	var h struct{ Alg, Kid string }
	var c struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil {
		return errors.New("unreadable header or claims")
	}
	if h.Alg != "RS256" || h.Kid != "key-1" {
		return fmt.Errorf("header %+v", h)
	}
	if c.Iss != gcpEmail || c.Scope != "https://www.googleapis.com/auth/pubsub" || c.Aud != gcpTokenURI || c.Exp-c.Iat != 3600 {
		return fmt.Errorf("claims %+v", c)
	}
	return nil
}

// gcpRedirect sends https requests, whatever their host, to tlsSink
// (oauth2.googleapis.com, pubsub.googleapis.com) and http ones to
// plainSink (the metadata server).
func gcpRedirect(tlsSink, plainSink *svctest.Sink) http.RoundTripper {
	tr := svctest.Redirect(tlsSink).(*http.Transport)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		to := tlsSink.Listener.Addr().String()
		if strings.HasSuffix(addr, ":80") && plainSink != nil {
			to = plainSink.Listener.Addr().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
	return tr
}

// newGoogleKey returns a service account key file's JSON and its public
// key.
func newGoogleKey(t *testing.T) (string, *rsa.PublicKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	j, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "my-project", "private_key_id": "key-1",
		"private_key": string(pemKey), "client_email": gcpEmail, "token_uri": gcpTokenURI,
	})
	return string(j), &key.PublicKey
}

const pubsubTemplate = `message: '{"app": "{{.app.metadata.name}}"}'
gcppubsub:
  attributes:
    app: "{{.app.metadata.name}}"
    health: "{{.app.status.health.status}}"
`

// pubsubPublish decodes a publish request's body.
func pubsubPublish(t *testing.T, body string) (data string, attrs map[string]string) {
	t.Helper()
	var in struct {
		Messages []struct {
			Data       string
			Attributes map[string]string
		}
	}
	if err := json.Unmarshal([]byte(body), &in); err != nil || len(in.Messages) != 1 {
		t.Fatalf("publish body %s: %v", body, err)
	}
	d, err := base64.StdEncoding.DecodeString(in.Messages[0].Data)
	if err != nil {
		t.Fatalf("data: %v", err)
	}
	return string(d), in.Messages[0].Attributes
}

func TestGCPPubSubKeyFileThroughOutbox(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	keyJSON, pub := newGoogleKey(t)
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, []byte(keyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &googleDouble{pub: pub}
	s := svctest.NewSink(t, true)
	s.Route = g.route
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.gcppubsub": "project: my-project\ntopic: other\nkeyFile: " + keyFile + "\n",
			"template.deployed": pubsubTemplate,
		},
		Service: "gcppubsub", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), Transport: svctest.Redirect(s),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "4242" {
		t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
	}
	if len(g.problems) > 0 {
		t.Errorf("token request: %v", g.problems)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/token" || reqs[1].Path != gcpPublishURL {
		t.Fatalf("requests %+v, want the token, then the publish", reqs)
	}
	p := reqs[1]
	if p.Header.Get("Authorization") != "Bearer "+gcpKeyToken || p.Header.Get("Content-Type") != "application/json" {
		t.Errorf("publish headers %v", p.Header)
	}
	data, attrs := pubsubPublish(t, p.Body)
	if data != `{"app": "guestbook"}` {
		t.Errorf("data %q", data)
	}
	if diff := cmp.Diff(map[string]string{"app": "guestbook", "health": "Healthy"}, attrs); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
}

// TestGCPPubSubTokenCached sends twice with one sender: one token
// exchange; a 401 drops the token and one fresh one is fetched.
func TestGCPPubSubTokenCached(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	keyJSON, pub := newGoogleKey(t)
	g := &googleDouble{pub: pub}
	s := svctest.NewSink(t, true)
	s.Route = g.route
	kind, _ := services.Lookup("gcppubsub")
	svc, err := kind.New("gcppubsub", &servicetypes.GCPPubSubSettings{Project: "my-project", Topic: "deploys", KeyFile: keyJSON},
		services.Options{Transport: svctest.Redirect(s)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := svc.Send(t.Context(), notify.Notification{Message: "hi"}, notify.Destination{Service: "gcppubsub"}); err != nil {
			t.Fatal(err)
		}
	}
	if g.tokens != 1 || len(s.Requests()) != 3 {
		t.Errorf("%d token exchanges, %d requests; want 1 and 3", g.tokens, len(s.Requests()))
	}
	revoked := true
	g.publish = func(svctest.Received) svctest.Answer {
		if revoked {
			revoked = false
			return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"error":{"code":401}}`}
		}
		return svctest.Answer{Body: `{"messageIds":["7"]}`}
	}
	if r, err := svc.Send(t.Context(), notify.Notification{Message: "hi"}, notify.Destination{Service: "gcppubsub"}); err != nil || r.ID != "7" {
		t.Fatalf("after a 401: %+v %v", r, err)
	}
	if g.tokens != 2 {
		t.Errorf("%d token exchanges after a 401, want 2", g.tokens)
	}
}

func TestGCPPubSubMetadataServer(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("GCE_METADATA_HOST", "")
	g := &googleDouble{}
	api, metadata := svctest.NewSink(t, true), svctest.NewSink(t, false)
	api.Route, metadata.Route = g.route, g.route
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.gcppubsub": "project: my-project\ntopic: deploys\n",
			"template.deployed": pubsubTemplate,
		},
		Service: "gcppubsub", Template: "deployed", App: svctest.App("guestbook"), Transport: gcpRedirect(api, metadata),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	if m := metadata.Requests(); len(m) != 1 || m[0].Header.Get("Metadata-Flavor") != "Google" {
		t.Errorf("metadata server requests %+v", m)
	}
	reqs := api.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+gcpMetaToken {
		t.Fatalf("API requests %+v", reqs)
	}
}

func TestGCPPubSubApplicationCredentials(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	keyJSON, pub := newGoogleKey(t)
	keyFile := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(keyFile, []byte(keyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	g := &googleDouble{pub: pub}
	s := svctest.NewSink(t, true)
	s.Route = g.route
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.gcppubsub": "project: my-project\n",
			"template.deployed": pubsubTemplate,
		},
		Service: "gcppubsub", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), Transport: svctest.Redirect(s),
	})
	if rec.State != outbox.StateDelivered || g.tokens != 1 || len(g.problems) > 0 {
		t.Fatalf("state %s, %d token exchanges, problems %v: %s", rec.State, g.tokens, g.problems, rec.LastError)
	}
}

// TestGCPPubSubAnswers: 429 waits Retry-After, 5xx is retried, 4xx is
// dead-lettered at once; no key material or token in the error.
func TestGCPPubSubAnswers(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	keyJSON, pub := newGoogleKey(t)
	var key struct {
		PrivateKey string `json:"private_key"`
	}
	_ = json.Unmarshal([]byte(keyJSON), &key)
	keyLine := strings.Split(key.PrivateKey, "\n")[1]
	for _, tc := range []struct {
		name                string
		answers             []svctest.Answer
		state               outbox.State
		attempts, publishes int
	}{
		{"429 then success", []svctest.Answer{{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "1"},
			Body: `{"error":{"status":"RESOURCE_EXHAUSTED"}}`}, {Body: `{"messageIds":["1"]}`}}, outbox.StateDelivered, 1, 2}, // a rate-limited wait is no attempt
		{"503 retried", []svctest.Answer{{Status: http.StatusServiceUnavailable, Body: `{"error":{"status":"UNAVAILABLE"}}`}}, outbox.StateDead, 3, 3},
		{"404 at once", []svctest.Answer{{Status: http.StatusNotFound, Body: `{"error":{"code":404,"message":"Resource not found (resource=deploys).","status":"NOT_FOUND"}}`}}, outbox.StateDead, 1, 1},
		{"403 at once", []svctest.Answer{{Status: http.StatusForbidden, Body: `{"error":{"code":403,"status":"PERMISSION_DENIED"}}`}}, outbox.StateDead, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &googleDouble{pub: pub}
			var mu sync.Mutex
			answers, publishes := tc.answers, 0
			g.publish = func(svctest.Received) svctest.Answer {
				mu.Lock()
				defer mu.Unlock()
				publishes++
				a := answers[0]
				if len(answers) > 1 {
					answers = answers[1:]
				}
				return a
			}
			s := svctest.NewSink(t, true)
			s.Route = g.route
			rec := svctest.Deliver(t, svctest.Delivery{
				CM: map[string]string{
					"service.gcppubsub": "project: my-project\nkeyFile: $gcp-key\n",
					"template.deployed": pubsubTemplate,
				},
				Secret:  map[string][]byte{"gcp-key": []byte(keyJSON)},
				Service: "gcppubsub", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"),
				Transport: svctest.Redirect(s), MaxAttempts: 3,
			})
			mu.Lock()
			defer mu.Unlock()
			if rec.State != tc.state || rec.Attempts != tc.attempts || publishes != tc.publishes {
				t.Fatalf("state %s after %d attempts, %d publishes; want %s after %d, %d: %s",
					rec.State, rec.Attempts, publishes, tc.state, tc.attempts, tc.publishes, rec.LastError)
			}
			if g.tokens != 1 {
				t.Errorf("%d token exchanges, want 1 (cached across attempts)", g.tokens)
			}
			svctest.MustNotContain(t, "LastError", rec.LastError, keyLine, gcpKeyToken, "private_key", "assertion")
		})
	}
	t.Run("bad key", func(t *testing.T) {
		s := svctest.NewSink(t, true)
		s.Route = (&googleDouble{pub: pub}).route
		broken := strings.Replace(keyJSON, "BEGIN PRIVATE KEY", "BEGIN NOTHING", 1)
		rec := svctest.Deliver(t, svctest.Delivery{
			CM:      map[string]string{"service.gcppubsub": "project: my-project\nkeyFile: $gcp-key\n", "template.deployed": pubsubTemplate},
			Secret:  map[string][]byte{"gcp-key": []byte(broken)},
			Service: "gcppubsub", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), Transport: svctest.Redirect(s),
		})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 0 {
			t.Fatalf("state %s after %d attempts, %d requests: %s", rec.State, rec.Attempts, len(s.Requests()), rec.LastError)
		}
		svctest.MustNotContain(t, "LastError", rec.LastError, keyLine)
	})
}
