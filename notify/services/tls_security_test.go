package services_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/email"
	"github.com/crowsnest-dev/crowsnest/notify/services/slack"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// TLS verification is on by default for every service: a server on
// 127.0.0.1 with a self-signed certificate is refused, with an error
// about the certificate that shows no credential, and nothing reaches
// it; the explicit insecureSkipVerify option of that one service lets it
// through.
func TestServicesVerifyTLSByDefault(t *testing.T) {
	const token, password = "xoxb-tls-test-token", "tls-basic-password"
	slackSrv := testnotify.NewFakeSlackTLS(t)
	hook := testnotify.NewRecorder(t, testnotify.RecorderOptions{TLS: true})
	starttls, implicit := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{}), testnotify.NewSMTPServer(t, testnotify.SMTPOptions{ImplicitTLS: true})

	slackWith := func(insecure bool) notify.Service {
		s, err := slack.New("slack", &config.SlackService{Token: config.InlineSecret(token), APIURL: slackSrv.APIURL(), InsecureSkipVerify: insecure,
			Timeout: config.Duration{Duration: 5 * time.Second}}, svc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	hookWith := func(insecure bool) notify.Service {
		w, err := webhook.New("hook", &config.WebhookService{URL: hook.URL, InsecureSkipVerify: insecure,
			BasicAuth: &config.BasicAuth{Username: "u", Password: config.InlineSecret(password)}}, svc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	mailWith := func(srv *testnotify.SMTPServer, mode email.TLSMode, insecure bool) notify.Service {
		e, err := email.New("email", &config.EmailService{Host: "127.0.0.1", Port: srv.Port(t), TLS: string(mode), InsecureSkipVerify: insecure,
			From: "crowsnest@example.com", Username: testnotify.SMTPUser, Password: config.InlineSecret(testnotify.SMTPPassword)}, svc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	received := func() int {
		return len(slackSrv.Calls()) + len(hook.Requests()) + len(starttls.Mail()) + len(implicit.Mail())
	}
	n := notify.Notification{Message: "deployed", Email: &notify.EmailTemplate{Subject: "s"}, Webhook: map[string]notify.WebhookTemplate{"hook": {Body: "deployed"}}}
	tests := []struct {
		name      string
		svc       notify.Service
		recipient string
		wantOK    bool
	}{
		{"slack, default", slackWith(false), "#deploys", false},
		{"slack, insecureSkipVerify", slackWith(true), "#deploys", true},
		{"webhook, default", hookWith(false), "", false},
		{"webhook, insecureSkipVerify", hookWith(true), "", true},
		{"email starttls, default", mailWith(starttls, "", false), "dev@example.com", false},
		{"email starttls, insecureSkipVerify", mailWith(starttls, email.TLSStartTLS, true), "dev@example.com", true},
		{"email implicit TLS, default", mailWith(implicit, email.TLSImplicit, false), "dev@example.com", false},
		{"email implicit TLS, insecureSkipVerify", mailWith(implicit, email.TLSImplicit, true), "dev@example.com", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := received()
			_, err := tt.svc.Send(t.Context(), n, notify.Destination{Recipient: tt.recipient})
			if tt.wantOK {
				if err != nil || received() != before+1 {
					t.Fatalf("err = %v, %d delivered; want one delivery", err, received()-before)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("err = %v, want a certificate error", err)
			}
			for _, secret := range []string{token, password, testnotify.SMTPPassword} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a credential: %v", err)
				}
			}
			if received() != before {
				t.Errorf("the untrusted server received %d messages", received()-before)
			}
		})
	}
}
