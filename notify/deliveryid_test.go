package notify_test

import (
	"bytes"
	"net/http"
	"net/mail"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
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
	o := fastOutbox(&notify.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", srv.URL)}, nil)
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("k-id", "argocd/web", `{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, notify.StateDelivered)
	var ids []string
	for _, r := range srv.Requests() {
		ids = append(ids, r.Header.Get(notify.DeliveryHeader))
	}
	if want := []string{rec.ID, rec.ID, rec.ID}; rec.ID == "" || !slices.Equal(ids, want) {
		t.Errorf("%s headers %q, want %q", notify.DeliveryHeader, ids, want)
	}
}

// An email's Message-ID is made of the delivery ID, the same on every
// attempt; without one it is random.
func TestEmailMessageIDFollowsTheDeliveryID(t *testing.T) {
	srv := newSMTPServer(t, false)
	em, err := notify.NewEmail("email", "127.0.0.1", srv.port(t), "crowsnest@example.com",
		notify.WithEmailTLS(notify.TLSStartTLS, false, srv.ca), notify.WithEmailAuth("", smtpUser, smtpPassword))
	if err != nil {
		t.Fatal(err)
	}
	const id = "555a2887cc230664740826dc3906a3b6"
	for range 2 {
		if _, err := em.Send(notify.WithDeliveryID(t.Context(), id), notify.Notification{Message: "x"}, notify.Destination{Recipient: "dev@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := em.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Recipient: "dev@example.com"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range srv.Mail() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.Header.Get("Message-Id"))
	}
	want := "<" + id + "@example.com>"
	if len(got) != 3 || got[0] != want || got[1] != want || got[2] == want || got[2] == "" {
		t.Errorf("Message-IDs %q, want %s twice, then a random one", got, want)
	}
}
