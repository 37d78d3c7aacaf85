package outbox_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// A destination whose error answer echoes the request's Authorization
// header: the delivery log (the record's LastError) shows the status and
// not the token.
func TestOutboxLastErrorRedacted(t *testing.T) {
	const token = "hook-bearer-S3CR3T-41aa"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = fmt.Fprintf(w, "rejected request with Authorization: %s", r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	wh, err := webhook.New("hook", &config.WebhookService{URL: srv.URL, Bearer: config.InlineSecret(token), Timeout: config.Duration{Duration: 5 * time.Second}}, svc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": wh}, nil)
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("k-echo", "a/b", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	got := waitState(t, o, rec.ID, outbox.StateDead)
	if strings.Contains(got.LastError, token) || !strings.Contains(got.LastError, "422") || !strings.Contains(got.LastError, "Authorization: Bearer ***") {
		t.Errorf("LastError = %q", got.LastError)
	}
}
