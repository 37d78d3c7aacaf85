package email_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/email"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// settings are the settings of an email service that sends through srv
// as testnotify.SMTPUser with password, STARTTLS and a 5 s timeout.
func settings(t *testing.T, srv *testnotify.SMTPServer, password string) *config.EmailService {
	t.Helper()
	return &config.EmailService{Host: "127.0.0.1", Port: srv.Port(t), From: "crowsnest@example.com",
		Username: testnotify.SMTPUser, Password: config.InlineSecret(password), Timeout: config.Duration{Duration: 5 * time.Second}}
}

// newEmail builds the email service "email" of c, trusting srv's
// certificate.
func newEmail(t *testing.T, srv *testnotify.SMTPServer, c *config.EmailService) *email.Sender {
	t.Helper()
	em, err := email.New("email", c, svc.Options{RootCAs: srv.CA})
	if err != nil {
		t.Fatal(err)
	}
	return em
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
			srv := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{ImplicitTLS: tt.implicit})
			c := settings(t, srv, testnotify.SMTPPassword)
			c.From = "Crowsnest <crowsnest@example.com>"
			if tt.implicit {
				c.TLS = string(email.TLSImplicit)
			}
			em := newEmail(t, srv, c)
			email.SetMechanism(em, tt.mech)
			body := "guestbook synced to abc123.\nA long line: " + strings.Repeat("é", 60) + "\n"
			if tt.html {
				body = "<p>guestbook synced to abc123.</p>\n<p>A long line: " + strings.Repeat("é", 60) + "</p>\n"
			}
			n := notify.Notification{Message: body, Email: &notify.EmailTemplate{Subject: "Sync succeeded: guestbook ✓"}}
			rc, err := em.Send(t.Context(), n, notify.Destination{Service: "email", Recipient: "dev@example.com, Ops <ops@example.com>"})
			if err != nil {
				t.Fatal(err)
			}
			got := srv.Mail()
			if len(got) != 1 {
				t.Fatalf("server got %d messages, want 1", len(got))
			}
			wantUser := testnotify.SMTPUser + "/" + tt.mech
			if tt.mech == "" {
				wantUser = testnotify.SMTPUser + "/PLAIN"
			}
			if diff := cmp.Diff(testnotify.ReceivedMail{User: wantUser, From: "crowsnest@example.com", To: []string{"dev@example.com", "ops@example.com"}},
				testnotify.ReceivedMail{User: got[0].User, From: got[0].From, To: got[0].To}); diff != "" {
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
	srv := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{})
	send := func(t *testing.T, password, recipient string) error {
		t.Helper()
		_, err := newEmail(t, srv, settings(t, srv, password)).Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Recipient: recipient})
		return err
	}
	t.Run("wrong password", func(t *testing.T) {
		err := send(t, "wrong-password-value", "dev@example.com")
		if err == nil || !notify.IsPermanent(err) || strings.Contains(err.Error(), "wrong-password-value") {
			t.Errorf("error = %v, want a permanent one without the password", err)
		}
	})
	t.Run("rejected recipient", func(t *testing.T) {
		err := send(t, testnotify.SMTPPassword, "dev@example.com,nobody@rejected.example")
		if err == nil || !notify.IsPermanent(err) || !strings.Contains(err.Error(), "nobody@rejected.example") {
			t.Errorf("error = %v, want a permanent rejection naming the recipient", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		em, err := email.New("email", settings(t, srv, testnotify.SMTPPassword), svc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = em.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Recipient: "dev@example.com"})
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("error = %v, want a certificate error", err)
		}
	})
	t.Run("no credentials without TLS", func(t *testing.T) {
		_, err := email.New("email", &config.EmailService{Host: "127.0.0.1", Port: 25, TLS: string(email.TLSNone), From: "crowsnest@example.com",
			Username: "u", Password: config.InlineSecret("p")}, svc.Options{})
		if err == nil {
			t.Error("want an error for AUTH without TLS")
		}
	})
	if n := len(srv.Mail()); n != 0 {
		t.Errorf("server accepted %d messages, want 0", n)
	}
}

// recordingMailer is a svc.Mailer that keeps each Mail and answers err.
type recordingMailer struct {
	mails []svc.Mail
	err   error
}

func (m *recordingMailer) Mail(_ context.Context, x svc.Mail) error {
	m.mails = append(m.mails, x)
	return m.err
}

// A Mailer takes the message in place of the SMTP session: the session's
// server, TLS and user, the envelope and the message a server would get,
// never the password. Nothing connects (the host does not resolve), and a
// 5xx from the Mailer is permanent as the server's would be.
func TestMailerTakesTheMessage(t *testing.T) {
	const password = "smtp-password-value"
	m := &recordingMailer{}
	em, err := email.New("email", &config.EmailService{Host: "smtp.invalid", Port: 587, From: "Crowsnest <crowsnest@example.com>",
		Username: "bot", Password: config.InlineSecret(password)}, svc.Options{Mailer: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := notify.WithDeliveryID(t.Context(), "0123456789abcdef")
	n := notify.Notification{Message: "web deployed", Email: &notify.EmailTemplate{Subject: "Deployed"}}
	rc, err := em.Send(ctx, n, notify.Destination{Recipient: "dev@example.com, Ops <ops@example.com>"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.mails) != 1 {
		t.Fatalf("mailer got %d messages, want 1", len(m.mails))
	}
	got := m.mails[0]
	want := svc.Mail{Server: "smtp.invalid:587", TLS: "starttls", Username: "bot", From: "crowsnest@example.com",
		To: []string{"dev@example.com", "ops@example.com"}}
	if diff := cmp.Diff(want, svc.Mail{Server: got.Server, TLS: got.TLS, Username: got.Username, From: got.From, To: got.To}); diff != "" {
		t.Errorf("session and envelope (-want +got):\n%s", diff)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Message))
	if err != nil {
		t.Fatal(err)
	}
	if id := msg.Header.Get("Message-ID"); id != "<0123456789abcdef@example.com>" || id != rc.ID {
		t.Errorf("Message-ID %q, receipt %q, want <0123456789abcdef@example.com>", id, rc.ID)
	}
	if body, _ := io.ReadAll(msg.Body); string(body) != "web deployed" {
		t.Errorf("body %q", body)
	}
	if strings.Contains(fmt.Sprintf("%+v", m.mails), password) {
		t.Error("the Mailer was given the password")
	}

	m.err = &textproto.Error{Code: 550, Msg: "no such user"}
	if _, err := em.Send(ctx, n, notify.Destination{Recipient: "dev@example.com"}); !notify.IsPermanent(err) {
		t.Errorf("error = %v, want a permanent one", err)
	}
}
