package outbox_test

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// Every attempt of a webhook delivery carries the same delivery ID, the
// outbox record's, so a receiver can drop a repeat.
func TestWebhookAttemptsCarryTheDeliveryID(t *testing.T) {
	var attempts atomic.Int32
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer {
		if attempts.Add(1) <= 2 {
			return testnotify.Answer{Status: http.StatusBadGateway, Body: "upstream down"}
		}
		return testnotify.Answer{}
	}})
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", srv.URL)}, nil)
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("k-id", "argocd/web", `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	var ids []string
	for _, r := range srv.Requests() {
		ids = append(ids, r.Header.Get(notify.DeliveryHeader))
	}
	if want := []string{rec.ID, rec.ID, rec.ID}; rec.ID == "" || !slices.Equal(ids, want) {
		t.Errorf("%s headers %q, want %q", notify.DeliveryHeader, ids, want)
	}
}
