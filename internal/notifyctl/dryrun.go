package notifyctl

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// The delivery IDs of a dry run's sends, where the daemon's outbox gives
// each message its own: a webhook carries it in notify.DeliveryHeader, an
// email in its Message-ID, a Slack message in its metadata. A later
// message of a Slack group is a delivery of its own.
const (
	dryRunDeliveryID      = "00000000000000000000000000000001"
	dryRunLaterDeliveryID = "00000000000000000000000000000002"
)

// What the dry run's Slack API answers a post or an update with: the
// channel's ID and the message's timestamp, which the sender keeps as the
// thread of a grouping key.
const (
	slackDryRunChannel = "CDRYRUN01"
	slackDryRunTS      = "1700000000.000100"
	slackDryRunAnswer  = `{"ok":true,"channel":"` + slackDryRunChannel + `","ts":"` + slackDryRunTS + `"}`
)

// recordingMailer keeps each message an email sender hands it; nothing
// connects.
type recordingMailer struct {
	mails []svc.Mail
}

func (m *recordingMailer) Mail(_ context.Context, x svc.Mail) error {
	m.mails = append(m.mails, x)
	return nil
}

// dryRun is a sender built with recorders, and its destination.
type dryRun struct {
	sender notify.Service
	http   *recordingTransport
	mail   *recordingMailer
	dest   notify.Destination
}

// send sends n and returns what the sender did, credentials redacted. A
// failure before any request is an error; one after is Failed, with the
// requests.
func (d *dryRun) send(ctx context.Context, n notify.Notification) (Recording, error) {
	d.http.reqs, d.mail.mails = nil, nil
	rc, err := d.sender.Send(ctx, n, d.dest)
	out := Recording{Requests: redactRequests(d.http.reqs), Mails: d.mail.mails}
	if err != nil && len(out.Requests) == 0 && len(out.Mails) == 0 {
		if d.dest.Recipient == "" {
			return Recording{}, fmt.Errorf("service %s: %w (the recipient is --recipient)", d.dest.Service, err)
		}
		return Recording{}, fmt.Errorf("service %s: %w", d.dest.Service, err)
	}
	if err != nil {
		out.Failed = err.Error()
	}
	if rc.Skipped {
		out.Skipped = cmp.Or(rc.Detail, "the sender skipped the message")
	}
	return out, nil
}

// record makes the send of r.Notification to recipient through the
// configured service s with recorders, and fills r's Recorded, Send,
// Later and StandIns.
func (r *Rendered) record(ctx context.Context, s config.Service, recipient string) error {
	s, standIns := dryRunService(r.Service, s, r.secret)
	d := &dryRun{http: &recordingTransport{}, mail: &recordingMailer{}, dest: notify.Destination{Service: r.Service, Recipient: recipient}}
	if r.Type == config.ServiceSlack {
		d.http.answer = slackDryRunAnswer
	}
	var err error
	d.sender, err = setup.BuildWith(r.Service, s, services.Options{Transport: d.http, Mailer: d.mail, Threads: &outbox.MemoryStore{}})
	if err != nil {
		return fmt.Errorf("service %s: %w", r.Service, err)
	}
	if c, ok := d.sender.(io.Closer); ok {
		defer c.Close()
	}
	if r.Send, err = d.send(notify.WithDeliveryID(ctx, dryRunDeliveryID), r.Notification); err != nil {
		return err
	}
	if st := r.Notification.Slack; r.Type == config.ServiceSlack && st != nil && st.GroupingKey != "" {
		if err := r.recordSlackLater(ctx, d, st); err != nil {
			return err
		}
	}
	if r.Type == config.ServiceWebhook {
		for i := range r.Send.Requests {
			r.Send.Requests[i].Verbatim = true
		}
	}
	for _, si := range standIns {
		r.StandIns = append(r.StandIns, si.field+" ("+si.ref+")")
		if si.field != "webhook.hmacSecret" {
			continue
		}
		header := cmp.Or(s.Webhook.HMACHeader, webhook.DefaultSignatureHeader)
		for i := range r.Send.Requests {
			r.Send.Requests[i].Header.Set(header, "<not computed: hmacSecret "+si.ref+" cannot be read here>")
		}
	}
	r.Recorded = true
	return nil
}

// recordSlackLater records, after the send of a Slack message with a
// grouping key (the group's first: it starts the thread), the send of a
// later message of the group, which replies in the thread or updates its
// first message. An update policy's first message sends nothing; a post
// starts the thread for the later one, as another template of the group
// would.
func (r *Rendered) recordSlackLater(ctx context.Context, d *dryRun, st *notify.SlackTemplate) error {
	r.Send.Note = fmt.Sprintf("the first message of grouping key %q: no thread yet", st.GroupingKey)
	if r.Send.Skipped != "" {
		post := r.Notification
		start := *st
		start.DeliveryPolicy = notify.PolicyPost
		post.Slack = &start
		if _, err := d.send(notify.WithDeliveryID(ctx, dryRunDeliveryID), post); err != nil {
			return err
		}
	}
	later, err := d.send(notify.WithDeliveryID(ctx, dryRunLaterDeliveryID), r.Notification)
	if err != nil {
		return err
	}
	later.Note = fmt.Sprintf("a later message of grouping key %q, once its thread exists (message %s in channel %s)",
		st.GroupingKey, slackDryRunTS, slackDryRunChannel)
	r.Later = &later
	return nil
}

// standIn is a credential the dry run cannot read: its field
// (config.Service.SecretFields) and its reference.
type standIn struct{ field, ref string }

// dryRunService returns a copy of s with its secrets resolved from the
// notifications Secret as the daemon resolves them, and a stand-in for
// each credential that cannot be read here: its reference. The requests
// show a credential redacted whatever its value; only an HMAC signature
// depends on it (record).
func dryRunService(name string, s config.Service, secret map[string][]byte) (config.Service, []standIn) {
	n := &config.Notifications{Services: map[string]config.Service{name: setup.CloneService(s)}}
	_ = n.ResolveSecrets(secret) // what it cannot fill gets a stand-in below
	s = n.Services[name]
	var out []standIn
	for _, f := range s.SecretFields() {
		if _, err := f.Ref.Value(); err != nil {
			out = append(out, standIn{f.Name, f.Ref.String()})
			*f.Ref = config.InlineSecret(f.Ref.String())
		}
	}
	return s, out
}

var _ http.RoundTripper = (*recordingTransport)(nil)
var _ svc.Mailer = (*recordingMailer)(nil)
