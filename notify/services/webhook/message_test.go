package webhook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// A notification whose template has no webhook.<name> request (every
// template of Argo CD's catalog) is skipped, unless the service sends the
// message as argocd-notifications does: then it goes with the service's
// method and the message as a text body.
func TestWebhookMessageBody(t *testing.T) {
	type sent struct{ Method, Path, Body, ContentType string }
	tests := []struct {
		name     string
		settings config.WebhookService
		want     []sent
		wantSkip bool
	}{
		{name: "skipped by default", wantSkip: true},
		{
			name: "message as body", settings: config.WebhookService{Method: "GET", SendMessage: true},
			want: []sent{{Method: "GET", Path: "/hook", Body: "Application web is now running new version.", ContentType: "text/plain; charset=utf-8"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
			tt.settings.URL = rec.URL + "/hook"
			w := newWebhook(t, "hook", tt.settings, svc.Options{})
			r, err := w.Send(t.Context(), notify.Notification{Message: "Application web is now running new version."}, notify.Destination{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Skipped != tt.wantSkip {
				t.Errorf("Skipped = %v, want %v", r.Skipped, tt.wantSkip)
			}
			var got []sent
			for _, req := range rec.Requests() {
				got = append(got, sent{Method: req.Method, Path: req.Path, Body: req.Body, ContentType: req.Header.Get("Content-Type")})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
