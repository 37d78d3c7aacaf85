package services_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const (
	pushoverToken = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
	pushoverUser  = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
)

func pushoverCM() map[string]string {
	return map[string]string{
		"service.pushover":      "token: $pushover-token\n",
		"template.app-deployed": "message: Application {{.app.metadata.name}} is now running a new version.\n",
		"template.too-long":     "message: '{{repeat 1025 \"x\"}}'\n",
	}
}

func pushoverSecret() map[string][]byte {
	return map[string][]byte{"pushover-token": []byte(pushoverToken)}
}

const pushoverOK = `{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b"}`

func TestPushoverThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusOK, Body: pushoverOK})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pushoverCM(), Secret: pushoverSecret(), Transport: svctest.Redirect(s),
		Service: "pushover", Template: "app-deployed", Recipient: pushoverUser, App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "647d2300-702c-4b38-8b2f-d56326ae460b" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/1/messages.json" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("request %s %s (%s)", r.Method, r.Path, r.Header.Get("Content-Type"))
	}
	form, err := url.ParseQuery(r.Body)
	if err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := url.Values{
		"token": {pushoverToken}, "user": {pushoverUser}, "priority": {"0"},
		"message": {"Application guestbook is now running a new version."},
	}
	if d := cmp.Diff(want, form); d != "" {
		t.Errorf("form (-want +got):\n%s", d)
	}
}

func TestPushoverRefusedBeforeSending(t *testing.T) {
	for _, tc := range []struct{ name, template, recipient, want string }{
		{name: "bad user key", template: "app-deployed", recipient: "someone", want: "recipient: want a user or group key"},
		{name: "message too long", template: "too-long", recipient: pushoverUser, want: "longer than Pushover's 1024 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svctest.NewSink(t, true)
			rec := svctest.Deliver(t, svctest.Delivery{
				CM: pushoverCM(), Secret: pushoverSecret(), Transport: svctest.Redirect(s),
				Service: "pushover", Template: tc.template, Recipient: tc.recipient, App: svctest.App("guestbook"),
			})
			if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
				t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
			}
			svctest.MustContain(t, "last error", rec.LastError, tc.want)
			svctest.MustNotContain(t, "last error", rec.LastError, pushoverToken)
		})
	}
}

// TestPushoverInvalidUser: Pushover's 400 answer names the problem.
func TestPushoverInvalidUser(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusBadRequest, Body: `{"user":"invalid","errors":["user identifier is not a valid user, group, or subscribed user key"],"status":0,"request":"r"}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pushoverCM(), Secret: pushoverSecret(), Transport: svctest.Redirect(s),
		Service: "pushover", Template: "app-deployed", Recipient: pushoverUser, App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || rec.Attempts != 1 {
		t.Fatalf("state %s attempts %d", rec.State, rec.Attempts)
	}
	svctest.MustContain(t, "last error", rec.LastError, "400", "user identifier is not a valid")
	if strings.Contains(rec.LastError, pushoverToken) {
		t.Errorf("last error leaks the token: %s", rec.LastError)
	}
}

func TestPushoverStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		tls:     true,
		ok:      svctest.Answer{Status: http.StatusOK, Body: pushoverOK},
		secrets: []string{pushoverToken},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: pushoverCM(), Secret: pushoverSecret(), Transport: svctest.Redirect(s),
				Service: "pushover", Template: "app-deployed", Recipient: pushoverUser, App: svctest.App("a")}
		},
	})
}
