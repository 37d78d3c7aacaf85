package nats_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
	natssvc "github.com/crowsnest-dev/crowsnest/notify/services/nats"
)

// startNATS runs a real NATS server on 127.0.0.1 in the test process.
func startNATS(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	s, err := server.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// subscribe listens on subject with nats.go as user (or anonymously).
func subscribe(t *testing.T, s *server.Server, subject string, opts ...nats.Option) *nats.Subscription {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server has the subscription
		t.Fatal(err)
	}
	return sub
}

const natsTemplate = `message: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.sync.revision}}"}'`

func TestNATSThroughOutbox(t *testing.T) {
	s := startNATS(t, server.Options{})
	sub := subscribe(t, s, "argocd.>")
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.nats":      "url: " + s.ClientURL() + "\nheaders:\n  X-Argo-App: guestbook\n  content-type: application/json\n",
			"template.deployed": natsTemplate,
		},
		Service: "nats", Template: "deployed", Recipient: "argocd.deploys", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Attempts != 1 {
		t.Fatalf("state %s after %d attempts: %s", rec.State, rec.Attempts, rec.LastError)
	}
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "argocd.deploys" {
		t.Errorf("subject %q", msg.Subject)
	}
	if want := `{"app": "guestbook", "revision": "0123456789abcdef0123456789abcdef01234567"}`; string(msg.Data) != want {
		t.Errorf("data %q, want %q", msg.Data, want)
	}
	// NATS headers keep their case, as Argo CD sends them.
	if msg.Header.Get("X-Argo-App") != "guestbook" || msg.Header.Get("content-type") != "application/json" || len(msg.Header) != 2 {
		t.Errorf("headers %v", msg.Header)
	}
}

func TestNATSUserPassword(t *testing.T) {
	const password = "nats-very-secret-pw"
	s := startNATS(t, server.Options{Users: []*server.User{{Username: "argocd", Password: password}}})
	sub := subscribe(t, s, "deploys", nats.UserInfo("argocd", password))
	cm := map[string]string{
		"service.nats":      "url: " + s.ClientURL() + "\nusername: argocd\npassword: $nats-password\n",
		"template.deployed": natsTemplate,
	}
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: cm, Secret: map[string][]byte{"nats-password": []byte(password)},
		Service: "nats", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	if _, err := sub.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("subscriber: %v", err)
	}

	t.Run("wrong password", func(t *testing.T) {
		const wrong = "not-the-password-123"
		rec := svctest.Deliver(t, svctest.Delivery{
			CM: cm, Secret: map[string][]byte{"nats-password": []byte(wrong)},
			Service: "nats", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), MaxAttempts: 5,
		})
		if rec.State != outbox.StateDead || rec.Attempts != 1 {
			t.Fatalf("state %s after %d attempts, want dead at once: %s", rec.State, rec.Attempts, rec.LastError)
		}
		svctest.MustContain(t, "LastError", rec.LastError, "Authorization Violation")
		svctest.MustNotContain(t, "LastError", rec.LastError, wrong, password)
	})
}

func TestNATSNKey(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	s := startNATS(t, server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	sub := subscribe(t, s, "deploys", nats.Nkey(pub, user.Sign))
	cm := map[string]string{
		"service.nats":      "url: " + s.ClientURL() + "\nnkey: $nats-nkey\n",
		"template.deployed": natsTemplate,
	}
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: cm, Secret: map[string][]byte{"nats-nkey": seed},
		Service: "nats", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	if msg, err := sub.NextMsg(10 * time.Second); err != nil || msg.Subject != "deploys" {
		t.Fatalf("subscriber: %v %v", msg, err)
	}

	t.Run("unknown key", func(t *testing.T) {
		other, _ := nkeys.CreateUser()
		otherSeed, _ := other.Seed()
		rec := svctest.Deliver(t, svctest.Delivery{
			CM: cm, Secret: map[string][]byte{"nats-nkey": otherSeed},
			Service: "nats", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), MaxAttempts: 5,
		})
		if rec.State != outbox.StateDead || rec.Attempts != 1 {
			t.Fatalf("state %s after %d attempts, want dead at once: %s", rec.State, rec.Attempts, rec.LastError)
		}
		svctest.MustNotContain(t, "LastError", rec.LastError, string(otherSeed), string(otherSeed[:20]))
	})
}

func TestNATSServerDownIsRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // nothing listens on port now
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.nats":      "url: nats://127.0.0.1:" + strconv.Itoa(port) + "\n",
			"template.deployed": natsTemplate,
		},
		Service: "nats", Template: "deployed", Recipient: "deploys", App: svctest.App("guestbook"), MaxAttempts: 3,
	})
	if rec.State != outbox.StateDead || rec.Attempts != 3 {
		t.Fatalf("state %s after %d attempts, want every attempt spent: %s", rec.State, rec.Attempts, rec.LastError)
	}
	svctest.MustContain(t, "LastError", rec.LastError, "connecting to 127.0.0.1:"+strconv.Itoa(port))
}

// TestNATSTLS: a server that requires TLS is reached with nats:// and
// tls:// (verified against the test's root); an untrusted certificate is
// permanent.
func TestNATSTLS(t *testing.T) {
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // only for its 127.0.0.1 certificate
	certSrv.Close()
	s := startNATS(t, server.Options{TLSConfig: &tls.Config{Certificates: certSrv.TLS.Certificates, MinVersion: tls.VersionTLS12}})
	roots := x509.NewCertPool()
	roots.AddCert(certSrv.Certificate())
	sub := subscribe(t, s, "deploys", nats.Secure(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	kind, _ := services.Lookup("nats")
	port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
	for _, u := range []string{"nats://127.0.0.1:" + port, "tls://127.0.0.1:" + port} {
		svc, err := kind.New("nats", &servicetypes.NATSSettings{URL: u}, services.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Send(t.Context(), notify.Notification{Message: "over TLS"}, notify.Destination{Recipient: "deploys"}); err == nil || !notify.IsPermanent(err) {
			t.Errorf("%s with the system's roots: %v, want a permanent certificate error", u, err)
		}
		natssvc.SetRoots(svc, roots)
		if _, err := svc.Send(t.Context(), notify.Notification{Message: "over TLS"}, notify.Destination{Recipient: "deploys"}); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if m, err := sub.NextMsg(10 * time.Second); err != nil || string(m.Data) != "over TLS" {
			t.Fatalf("%s: subscriber: %v %v", u, m, err)
		}
	}
}

// TestNATSDryRun: with a transport (`notify template render --service`)
// the publish is handed to it as a pseudo request and no connection is
// made.
func TestNATSDryRun(t *testing.T) {
	var got *http.Request
	rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	kind, _ := services.Lookup("nats")
	svc, err := kind.New("nats", &servicetypes.NATSSettings{URL: "nats://nats.invalid:4222", Headers: map[string]string{"X-App": "web"},
		Username: "u", Password: "p"}, services.Options{Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Send(t.Context(), notify.Notification{Message: "hello"}, notify.Destination{Recipient: "deploys"}); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	if got.Method != "HPUB" || got.URL.String() != "nats://nats.invalid:4222/deploys" || got.Header.Get("X-App") != "web" || string(body) != "hello" {
		t.Errorf("recorded %s %s %v %q", got.Method, got.URL, got.Header, body)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
