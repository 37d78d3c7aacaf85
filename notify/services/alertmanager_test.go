package services_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const (
	alertmanagerPassword = "am-secret-password"
	alertmanagerBearer   = "am-secret-bearer-token"
)

func hostOf(s *svctest.Sink) string { return s.Listener.Addr().String() }

// alertmanagerCM targets the sinks with settings (a YAML fragment after
// targets).
func alertmanagerCM(settings string, targets ...*svctest.Sink) map[string]string {
	svc := "targets:\n"
	for _, s := range targets {
		svc += "- " + hostOf(s) + "\n"
	}
	return map[string]string{
		"service.alertmanager": svc + settings,
		"template.app-deployed": `message: Application {{.app.metadata.name}} has been healthy.
alertmanager:
  labels:
    fault_priority: "P5"
    app: "{{.app.metadata.name}}"
    recipient: "{{.recipient}}"
  annotations:
    application: '<a href="{{.context.argocdUrl}}/applications/{{.app.metadata.name}}">{{.app.metadata.name}}</a>'
`,
		"template.app-git": `message: m
alertmanager:
  labels:
    alertname: Deployed
  generatorURL: "git@github.com:example/{{.app.metadata.name}}.git"
`,
		"template.no-labels": "message: m\nalertmanager:\n  generatorURL: http://x\n",
	}
}

func alertmanagerSecret() map[string][]byte {
	return map[string][]byte{"am-password": []byte(alertmanagerPassword), "am-token": []byte(alertmanagerBearer)}
}

const alertmanagerBasicAuth = "basicAuth:\n  username: argocd\n  password: $am-password\n"

// alertmanagerAlerts decodes a request's body, an array of alerts.
func alertmanagerAlerts(t *testing.T, body string) []map[string]any {
	t.Helper()
	var alerts []map[string]any
	if err := json.Unmarshal([]byte(body), &alerts); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return alerts
}

func TestAlertmanagerThroughOutboxToEveryTarget(t *testing.T) {
	a, b := svctest.NewSink(t, false), svctest.NewSink(t, false)
	before := time.Now()
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: alertmanagerCM(alertmanagerBasicAuth, a, b), Secret: alertmanagerSecret(),
		Service: "alertmanager", Template: "app-deployed", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.Detail != "accepted by 2 of 2 targets" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("argocd:"+alertmanagerPassword))
	for i, s := range []*svctest.Sink{a, b} {
		reqs := s.Requests()
		if len(reqs) != 1 {
			t.Fatalf("target %d got %d requests, want 1", i, len(reqs))
		}
		r := reqs[0]
		if r.Method != http.MethodPost || r.Path != "/api/v2/alerts" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("target %d: %s %s (%s)", i, r.Method, r.Path, r.Header.Get("Content-Type"))
		}
		if got := r.Header.Get("Authorization"); got != wantAuth {
			t.Errorf("target %d: Authorization = %q", i, got)
		}
		alerts := alertmanagerAlerts(t, r.Body)
		if len(alerts) != 1 {
			t.Fatalf("target %d: %d alerts", i, len(alerts))
		}
		startsAt, err := time.Parse(time.RFC3339Nano, alerts[0]["startsAt"].(string))
		if err != nil || startsAt.Before(before.Add(-time.Second)) || startsAt.After(time.Now()) {
			t.Errorf("target %d: startsAt %v (%v)", i, alerts[0]["startsAt"], err)
		}
		delete(alerts[0], "startsAt")
		want := map[string]any{
			"labels": map[string]any{"alertname": "app-deployed", "fault_priority": "P5", "app": "guestbook", "recipient": ""},
			"annotations": map[string]any{
				"application": `<a href="/applications/guestbook">guestbook</a>`,
			},
			"generatorURL": "https://github.com/example/guestbook.git",
		}
		if d := cmp.Diff(want, alerts[0]); d != "" {
			t.Errorf("target %d alert (-want +got):\n%s", i, d)
		}
	}
}

// TestAlertmanagerHTTPSBearerGitURL: https with insecureSkipVerify, a
// custom apiPath, bearerToken, alertname set in the template and a git@
// generatorURL turned into https.
func TestAlertmanagerHTTPSBearerGitURL(t *testing.T) {
	s := svctest.NewSink(t, true)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM:     alertmanagerCM("scheme: https\ninsecureSkipVerify: true\napiPath: /api/events\nbearerToken: $am-token\n", s),
		Secret: alertmanagerSecret(), Service: "alertmanager", Template: "app-git", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	r := s.Requests()[0]
	if r.Path != "/api/events" || r.Header.Get("Authorization") != "Bearer "+alertmanagerBearer {
		t.Errorf("request %s, Authorization %q", r.Path, r.Header.Get("Authorization"))
	}
	alert := alertmanagerAlerts(t, r.Body)[0]
	if d := cmp.Diff(map[string]any{"alertname": "Deployed"}, alert["labels"]); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if alert["generatorURL"] != "https://github.com/example/guestbook.git" || alert["annotations"] != nil {
		t.Errorf("alert %v", alert)
	}
}

// TestAlertmanagerSomeTargetsFail: one target accepting the alert is a
// delivery, as in Argo CD; the receipt names the failures.
func TestAlertmanagerSomeTargetsFail(t *testing.T) {
	up, down := svctest.NewSink(t, false), svctest.NewSink(t, false, svctest.Answer{Status: http.StatusServiceUnavailable, Body: "draining"})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: alertmanagerCM(alertmanagerBasicAuth, up, down), Secret: alertmanagerSecret(),
		Service: "alertmanager", Template: "app-deployed", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Attempts != 1 || len(up.Requests()) != 1 || len(down.Requests()) != 1 {
		t.Fatalf("state %s attempts %d requests %d/%d: %s", rec.State, rec.Attempts, len(up.Requests()), len(down.Requests()), rec.LastError)
	}
	svctest.MustContain(t, "receipt", rec.Receipt.Detail, "accepted by 1 of 2 targets", "503", "draining")
	svctest.MustNotContain(t, "receipt", rec.Receipt.Detail, alertmanagerPassword)
}

// TestAlertmanagerAllTargetsFail: a refusal by one target and an outage
// of the other is retried (the outage may end); refusals by all are
// dead-lettered.
func TestAlertmanagerAllTargetsFail(t *testing.T) {
	t.Run("one refuses, one is down: retried", func(t *testing.T) {
		refuses := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusBadRequest, Body: "bad alert"})
		down := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusBadGateway}, svctest.Answer{Status: http.StatusOK})
		rec := svctest.Deliver(t, svctest.Delivery{
			CM: alertmanagerCM(alertmanagerBasicAuth, refuses, down), Secret: alertmanagerSecret(),
			Service: "alertmanager", Template: "app-deployed", App: svctest.App("guestbook"),
		})
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 {
			t.Fatalf("state %s attempts %d: %s", rec.State, rec.Attempts, rec.LastError)
		}
	})
	t.Run("all refuse: dead-lettered naming each", func(t *testing.T) {
		a := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusUnauthorized, Body: "who are you"})
		b := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusBadRequest, Body: "bad alert"})
		rec := svctest.Deliver(t, svctest.Delivery{
			CM: alertmanagerCM(alertmanagerBasicAuth, a, b), Secret: alertmanagerSecret(),
			Service: "alertmanager", Template: "app-deployed", App: svctest.App("guestbook"),
		})
		if rec.State != outbox.StateDead || rec.Attempts != 1 {
			t.Fatalf("state %s attempts %d", rec.State, rec.Attempts)
		}
		svctest.MustContain(t, "last error", rec.LastError, "no target accepted the alert", hostOf(a), "who are you", hostOf(b), "bad alert")
		svctest.MustNotContain(t, "last error", rec.LastError, alertmanagerPassword)
	})
}

func TestAlertmanagerWithoutLabelsDeadLetters(t *testing.T) {
	s := svctest.NewSink(t, false)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: alertmanagerCM("", s), Service: "alertmanager", Template: "no-labels", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, "at least one label")
}

func TestAlertmanagerStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		ok:      svctest.Answer{Status: http.StatusOK},
		secrets: []string{alertmanagerBearer},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: alertmanagerCM("bearerToken: $am-token\n", s), Secret: alertmanagerSecret(),
				Service: "alertmanager", Template: "app-deployed", App: svctest.App("a")}
		},
	})
}

func TestAlertmanagerValidate(t *testing.T) {
	for _, tc := range []struct{ name, svc, want string }{
		{name: "defaults", svc: "insecureSkipVerify: false\n"},
		{name: "targets", svc: "targets: [10.5.39.39:9093, am.example.com]\nscheme: https\n"},
		{name: "bad scheme", svc: "scheme: ftp\n", want: "scheme: want http or https"},
		{name: "bad target", svc: "targets: [\"10.5.39.39:9093/x\"]\n", want: "targets[0]: want host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseArgoCDConfigMap(map[string]string{"service.alertmanager": tc.svc}, nil)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("ParseArgoCDConfigMap = %v, want %q", err, tc.want)
			}
		})
	}
}
