package email_test

import (
	"bytes"
	"net/mail"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
)

// An email's Message-ID is made of the delivery ID, the same on every
// attempt; without one it is random.
func TestEmailMessageIDFollowsTheDeliveryID(t *testing.T) {
	srv := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{})
	em := newEmail(t, srv, settings(t, srv, testnotify.SMTPPassword))
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
