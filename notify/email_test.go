package notify_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// selfSigned makes a certificate for 127.0.0.1 and returns it with its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

type receivedMail struct {
	User, From string
	To         []string
	Data       []byte
}

// smtpServer is a go-smtp server on 127.0.0.1 with STARTTLS (or implicit
// TLS), AUTH PLAIN and LOGIN for one user, recording what it receives.
type smtpServer struct {
	addr string
	ca   []byte
	mu   sync.Mutex
	mail []receivedMail
}

const smtpUser, smtpPassword = "crowsnest", "smtp-password-secret"

func newSMTPServer(t *testing.T, implicitTLS bool) *smtpServer {
	t.Helper()
	cert, ca := selfSigned(t)
	s := &smtpServer{ca: ca}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{srv: s}, nil }))
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	var l net.Listener
	var err error
	if implicitTLS {
		l, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return s
}

func (s *smtpServer) port(t *testing.T) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(s.addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *smtpServer) Mail() []receivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedMail(nil), s.mail...)
}

type smtpSession struct {
	srv  *smtpServer
	cur  receivedMail
	user string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != smtpUser || pass != smtpPassword {
			return smtp.ErrAuthFailed
		}
		s.user = user + "/" + mech
		return nil
	}
	if mech == sasl.Login {
		return &loginServer{check: check}, nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.cur = receivedMail{User: s.user, From: from}
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasSuffix(to, "@rejected.example") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.srv.mu.Lock()
	s.srv.mail = append(s.srv.mail, s.cur)
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.cur = receivedMail{} }
func (s *smtpSession) Logout() error { return nil }

// loginServer is the server side of SASL LOGIN, which go-sasl lacks.
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(resp []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if len(resp) > 0 { // initial response carries the user name
			l.user = string(resp)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(resp)
		return []byte("Password:"), false, nil
	default:
		return nil, true, l.check(l.user, string(resp))
	}
}

func TestEmail(t *testing.T) {
	tests := []struct {
		name     string
		implicit bool
		mech     string
		html     bool
	}{
		{name: "starttls plain text", mech: "PLAIN"},
		{name: "starttls login html", mech: "LOGIN", html: true},
		{name: "implicit tls", implicit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSMTPServer(t, tt.implicit)
			mode := notify.TLSStartTLS
			if tt.implicit {
				mode = notify.TLSImplicit
			}
			em, err := notify.NewEmail("email", "127.0.0.1", srv.port(t), "Crowsnest <crowsnest@example.com>",
				notify.WithEmailTLS(mode, false, srv.ca), notify.WithEmailAuth(tt.mech, smtpUser, smtpPassword),
				notify.WithHTML(tt.html), notify.WithEmailTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			body := "guestbook synced to abc123.\nA long line: " + strings.Repeat("é", 60) + "\n"
			n := notify.Notification{Message: body, Email: &notify.EmailTemplate{Subject: "Sync succeeded: guestbook ✓"}}
			rc, err := em.Send(t.Context(), n, notify.Destination{Service: "email", Recipient: "dev@example.com, Ops <ops@example.com>"})
			if err != nil {
				t.Fatal(err)
			}
			got := srv.Mail()
			if len(got) != 1 {
				t.Fatalf("server got %d messages, want 1", len(got))
			}
			wantUser := smtpUser + "/" + tt.mech
			if tt.mech == "" {
				wantUser = smtpUser + "/PLAIN"
			}
			if diff := cmp.Diff(receivedMail{User: wantUser, From: "crowsnest@example.com", To: []string{"dev@example.com", "ops@example.com"}},
				receivedMail{User: got[0].User, From: got[0].From, To: got[0].To}); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			msg, err := mail.ReadMessage(bytes.NewReader(got[0].Data))
			if err != nil {
				t.Fatal(err)
			}
			subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
			if err != nil {
				t.Fatal(err)
			}
			ctype := "text/plain; charset=UTF-8"
			if tt.html {
				ctype = "text/html; charset=UTF-8"
			}
			wantHeaders := map[string]string{
				"From": `"Crowsnest" <crowsnest@example.com>`, "To": `<dev@example.com>, "Ops" <ops@example.com>`,
				"MIME-Version": "1.0", "Content-Type": ctype, "Content-Transfer-Encoding": "quoted-printable",
				"Message-ID": rc.ID,
			}
			for h, want := range wantHeaders {
				if got := msg.Header.Get(h); got != want {
					t.Errorf("header %s = %q, want %q", h, got, want)
				}
			}
			if subject != "Sync succeeded: guestbook ✓" {
				t.Errorf("subject = %q", subject)
			}
			if _, err := msg.Header.Date(); err != nil {
				t.Errorf("Date header: %v", err)
			}
			if !strings.HasSuffix(rc.ID, "@example.com>") {
				t.Errorf("Message-ID = %q, want one in the sender's domain", rc.ID)
			}
			decoded, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.ReplaceAll(body, "\n", "\r\n"), string(decoded)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmailErrors(t *testing.T) {
	srv := newSMTPServer(t, false)
	send := func(t *testing.T, password, recipient string, opts ...notify.EmailOption) error {
		t.Helper()
		opts = append([]notify.EmailOption{notify.WithEmailTLS(notify.TLSStartTLS, false, srv.ca), notify.WithEmailAuth("", smtpUser, password)}, opts...)
		em, err := notify.NewEmail("email", "127.0.0.1", srv.port(t), "crowsnest@example.com", opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = em.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Recipient: recipient})
		return err
	}
	t.Run("wrong password", func(t *testing.T) {
		err := send(t, "wrong-password-value", "dev@example.com")
		if err == nil || !notify.IsPermanent(err) || strings.Contains(err.Error(), "wrong-password-value") {
			t.Errorf("error = %v, want a permanent one without the password", err)
		}
	})
	t.Run("rejected recipient", func(t *testing.T) {
		err := send(t, smtpPassword, "dev@example.com,nobody@rejected.example")
		if err == nil || !notify.IsPermanent(err) || !strings.Contains(err.Error(), "nobody@rejected.example") {
			t.Errorf("error = %v, want a permanent rejection naming the recipient", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		em, err := notify.NewEmail("email", "127.0.0.1", srv.port(t), "crowsnest@example.com", notify.WithEmailAuth("", smtpUser, smtpPassword))
		if err != nil {
			t.Fatal(err)
		}
		_, err = em.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Recipient: "dev@example.com"})
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("error = %v, want a certificate error", err)
		}
	})
	t.Run("no credentials without TLS", func(t *testing.T) {
		_, err := notify.NewEmail("email", "127.0.0.1", 25, "crowsnest@example.com", notify.WithEmailTLS(notify.TLSNone, false, nil), notify.WithEmailAuth("", "u", "p"))
		if err == nil {
			t.Error("want an error for AUTH without TLS")
		}
	})
	if n := len(srv.Mail()); n != 0 {
		t.Errorf("server accepted %d messages, want 0", n)
	}
}
