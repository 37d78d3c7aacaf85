package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
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
	starttls, implicit := newSMTPServer(t, false), newSMTPServer(t, true)

	slackWith := func(opts ...notify.SlackOption) notify.Service {
		s, err := notify.NewSlack("slack", token, append([]notify.SlackOption{notify.WithSlackAPIURL(slackSrv.APIURL()), notify.WithSlackTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	hookWith := func(opts ...notify.WebhookOption) notify.Service {
		w, err := notify.NewWebhook("hook", hook.URL, append([]notify.WebhookOption{notify.WithBasicAuth("u", password)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	mailWith := func(srv *smtpServer, opts ...notify.EmailOption) notify.Service {
		e, err := notify.NewEmail("email", "127.0.0.1", srv.port(t), "crowsnest@example.com",
			append([]notify.EmailOption{notify.WithEmailAuth("", smtpUser, smtpPassword)}, opts...)...)
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
		{"slack, default", slackWith(), "#deploys", false},
		{"slack, insecureSkipVerify false", slackWith(notify.WithSlackTLS(false)), "#deploys", false},
		{"slack, insecureSkipVerify", slackWith(notify.WithSlackTLS(true)), "#deploys", true},
		{"webhook, default", hookWith(), "", false},
		{"webhook, insecureSkipVerify false", hookWith(notify.WithWebhookTLS(false, nil)), "", false},
		{"webhook, insecureSkipVerify", hookWith(notify.WithWebhookTLS(true, nil)), "", true},
		{"email starttls, default", mailWith(starttls), "dev@example.com", false},
		{"email starttls, insecureSkipVerify", mailWith(starttls, notify.WithEmailTLS(notify.TLSStartTLS, true, nil)), "dev@example.com", true},
		{"email implicit TLS, default", mailWith(implicit, notify.WithEmailTLS(notify.TLSImplicit, false, nil)), "dev@example.com", false},
		{"email implicit TLS, insecureSkipVerify", mailWith(implicit, notify.WithEmailTLS(notify.TLSImplicit, true, nil)), "dev@example.com", true},
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
			for _, secret := range []string{token, password, smtpPassword} {
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
