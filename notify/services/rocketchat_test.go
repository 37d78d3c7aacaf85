package services_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const (
	rocketPassword = "rc-secret-password"
	rocketToken    = "rc-auth-token-9f8e"
	rocketLoginOK  = `{"status":"success","data":{"authToken":"` + rocketToken + `","userId":"user-1","me":{"username":"argocd"}}}`
	rocketPostOK   = `{"success":true,"message":{"_id":"msg-7","rid":"GENERAL","msg":"hi"}}`
)

func rocketCM(server string) map[string]string {
	return map[string]string{
		"service.rocketchat": "serverUrl: " + server + "\nemail: argocd@example.com\npassword: $rocketchat-password\nalias: Argo CD\nicon: \":rocket:\"\navatar: https://example.com/argo.png\n",
		"template.app-sync-succeeded": `message: Application {{.app.metadata.name}} has been successfully synced.
rocketchat:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "https://argocd.example.com/applications/{{.app.metadata.name}}",
      "color": "#18be52", "unknown": "dropped",
      "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true},
                 {"title": "Repository", "value": "{{.app.spec.source.repoURL}}"}]}]
`,
	}
}

var rocketSecret = map[string][]byte{"rocketchat-password": []byte(rocketPassword)}

// rocketLogin answers Rocket.Chat's login; other requests get the script.
func rocketLogin(r svctest.Received) (svctest.Answer, bool) {
	if r.Path == "/api/v1/login" {
		return svctest.Answer{Body: rocketLoginOK}, true
	}
	return svctest.Answer{}, false
}

func TestRocketChatThroughOutbox(t *testing.T) {
	for _, c := range []struct{ recipient, key string }{{"#deployments", "channel"}, {"@alice", "channel"}, {"GENERAL", "roomId"}} {
		t.Run(c.recipient, func(t *testing.T) {
			s := svctest.NewSink(t, false)
			s.Route = func(r svctest.Received) svctest.Answer {
				if a, ok := rocketLogin(r); ok {
					return a
				}
				return svctest.Answer{Body: rocketPostOK}
			}
			rec := svctest.Deliver(t, svctest.Delivery{CM: rocketCM(s.URL), Secret: rocketSecret, Service: "rocketchat",
				Template: "app-sync-succeeded", Recipient: c.recipient, App: svctest.App("guestbook")})
			if rec.State != outbox.StateDelivered || rec.Receipt.ID != "msg-7" {
				t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
			}
			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("got %d requests, want login and chat.postMessage", len(reqs))
			}
			login, post := reqs[0], reqs[1]
			form, _ := url.ParseQuery(login.Body)
			if login.Method != http.MethodPost || login.Path != "/api/v1/login" ||
				form.Get("user") != "argocd@example.com" || form.Get("password") != rocketPassword {
				t.Errorf("login %s %s %s", login.Method, login.Path, login.Body)
			}
			if post.Path != "/api/v1/chat.postMessage" || post.Header.Get("X-Auth-Token") != rocketToken ||
				post.Header.Get("X-User-Id") != "user-1" || post.Header.Get("Content-Type") != "application/json" {
				t.Errorf("post %s %v", post.Path, post.Header)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(post.Body), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				c.key: c.recipient, "text": "Application guestbook has been successfully synced.",
				"alias": "Argo CD", "emoji": ":rocket:", "avatar": "https://example.com/argo.png",
				"attachments": []any{map[string]any{
					"title": "guestbook", "title_link": "https://argocd.example.com/applications/guestbook",
					"color": "#18be52", "collapsed": false,
					"fields": []any{
						map[string]any{"title": "Sync Status", "value": "Synced", "short": true},
						map[string]any{"title": "Repository", "value": "https://github.com/example/guestbook.git", "short": false},
					},
				}},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// The login is kept between messages and made again when Rocket.Chat
// refuses it.
func TestRocketChatKeepsLogin(t *testing.T) {
	s := svctest.NewSink(t, false)
	expired := false
	logins := 0
	s.Route = func(r svctest.Received) svctest.Answer {
		if r.Path == "/api/v1/login" {
			logins++
			return svctest.Answer{Body: strings.Replace(rocketLoginOK, rocketToken, "token-"+strconv.Itoa(logins), 1)}
		}
		if expired && r.Header.Get("X-Auth-Token") == "token-1" {
			return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"status":"error","message":"You must be logged in to do this."}`}
		}
		return svctest.Answer{Body: rocketPostOK}
	}
	k, _ := services.Lookup("rocketchat")
	svc, err := k.New("rocketchat", &servicetypes.RocketChatSettings{ServerURL: s.URL, Email: "a@example.com", Password: rocketPassword}, services.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := notify.Destination{Service: "rocketchat", Recipient: "#c"}
	for range 2 {
		if _, err := svc.Send(t.Context(), notify.Notification{Message: "hi"}, d); err != nil {
			t.Fatal(err)
		}
	}
	s.Mu.Lock()
	expired = true
	s.Mu.Unlock()
	if _, err := svc.Send(t.Context(), notify.Notification{Message: "hi"}, d); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range s.Requests() {
		paths = append(paths, r.Path+" "+r.Header.Get("X-Auth-Token"))
	}
	want := []string{"/api/v1/login ", "/api/v1/chat.postMessage token-1", "/api/v1/chat.postMessage token-1",
		"/api/v1/chat.postMessage token-1", "/api/v1/login ", "/api/v1/chat.postMessage token-2"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestRocketChatRefused(t *testing.T) {
	t.Run("bad password", func(t *testing.T) {
		s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusUnauthorized, Body: `{"status":"error","error":"Unauthorized","message":"Unauthorized"}`})
		rec := svctest.Deliver(t, svctest.Delivery{CM: rocketCM(s.URL), Secret: rocketSecret, Service: "rocketchat",
			Template: "app-sync-succeeded", Recipient: "#c", App: svctest.App("a")})
		if rec.State != outbox.StateDead || len(s.Requests()) != 1 {
			t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, "logging in", "401")
		svctest.MustNotContain(t, "last error", rec.LastError, rocketPassword)
	})
	t.Run("200 without success", func(t *testing.T) {
		s := svctest.NewSink(t, false)
		s.Route = func(r svctest.Received) svctest.Answer {
			if a, ok := rocketLogin(r); ok {
				return a
			}
			return svctest.Answer{Body: `{"success":false,"error":"error-not-allowed"}`}
		}
		rec := svctest.Deliver(t, svctest.Delivery{CM: rocketCM(s.URL), Secret: rocketSecret, Service: "rocketchat",
			Template: "app-sync-succeeded", Recipient: "#c", App: svctest.App("a")})
		if rec.State != outbox.StateDead || rec.Attempts != 1 {
			t.Fatalf("state %s attempts %d", rec.State, rec.Attempts)
		}
		svctest.MustContain(t, "last error", rec.LastError, "error-not-allowed")
		svctest.MustNotContain(t, "last error", rec.LastError, rocketToken)
	})
}

func TestRocketChatStatuses(t *testing.T) {
	setup := func(s *svctest.Sink) svctest.Delivery {
		return svctest.Delivery{CM: rocketCM(s.URL), Secret: rocketSecret, Service: "rocketchat",
			Template: "app-sync-succeeded", Recipient: "#c", App: svctest.App("a")}
	}
	svctest.CheckStatuses(t, svctest.StatusCase{Setup: setup, Route: rocketLogin, OK: svctest.Answer{Body: rocketPostOK}, Secrets: []string{rocketPassword, rocketToken}})
	// Rocket.Chat's rate limiter gives the end of the wait in Unix milliseconds.
	t.Run("X-RateLimit-Reset in milliseconds", func(t *testing.T) {
		reset := strconv.FormatInt(time.Now().Add(300*time.Millisecond).UnixMilli(), 10)
		svctest.CheckStatuses(t, svctest.StatusCase{Setup: setup, Route: rocketLogin, OK: svctest.Answer{Body: rocketPostOK},
			RateLimited: &svctest.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"X-RateLimit-Reset": reset},
				Body: `{"success":false,"error":"Error, too many requests. Please slow down. [error-too-many-requests]"}`}})
	})
}
