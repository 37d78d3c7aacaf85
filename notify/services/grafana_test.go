package services_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const grafanaKey = "glsa_secret_service_account_token"

func grafanaCM(apiURL string) map[string]string {
	return map[string]string{
		"service.grafana":       "apiUrl: " + apiURL + "/api\napiKey: $grafana-api-key\n",
		"template.app-deployed": "message: Application {{.app.metadata.name}} is now running a new version.\n",
	}
}

func grafanaSecret() map[string][]byte {
	return map[string][]byte{"grafana-api-key": []byte(grafanaKey)}
}

func TestGrafanaThroughOutbox(t *testing.T) {
	for _, tc := range []struct {
		name, recipient string
		tags            []any
	}{
		{name: "tags", recipient: "argocd|deploy", tags: []any{"argocd", "deploy"}},
		{name: "no recipient", recipient: "", tags: []any{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusOK, Body: `{"message":"Annotation added","id":42}`})
			before := time.Now().Unix() * 1000
			rec := svctest.Deliver(t, svctest.Delivery{
				CM: grafanaCM(s.URL), Secret: grafanaSecret(),
				Service: "grafana", Template: "app-deployed", Recipient: tc.recipient, App: svctest.App("guestbook"),
			})
			if rec.State != outbox.StateDelivered || rec.Receipt.ID != "42" {
				t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
			}
			r := s.Requests()[0]
			if r.Method != http.MethodPost || r.Path != "/api/annotations" || r.Header.Get("Authorization") != "Bearer "+grafanaKey {
				t.Errorf("request %s %s, Authorization %q", r.Method, r.Path, r.Header.Get("Authorization"))
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
				t.Fatalf("body %s: %v", r.Body, err)
			}
			if ts, _ := body["time"].(float64); int64(ts) < before || int64(ts) > time.Now().Unix()*1000 || int64(ts)%1000 != 0 {
				t.Errorf("time %v: not whole seconds since the send began", body["time"])
			}
			delete(body, "time")
			want := map[string]any{"isRegion": false, "tags": tc.tags, "text": "Application guestbook is now running a new version."}
			if d := cmp.Diff(want, body); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
		})
	}
}

func TestGrafanaStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		ok:      svctest.Answer{Status: http.StatusOK, Body: `{"id":1}`},
		secrets: []string{grafanaKey},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: grafanaCM(s.URL), Secret: grafanaSecret(),
				Service: "grafana", Template: "app-deployed", Recipient: "argocd", App: svctest.App("a")}
		},
	})
}
