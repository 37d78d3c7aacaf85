package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// announceTemplate replaces the catalog's image-updated template for the
// Slack and email destinations (a YAML block of the notifications
// section): the message is the catalog webhook body's announcement, so
// messageKey reads what a post or a mail announces. Slack keeps the
// catalog's thread per Application, and email a subject like the catalog's.
const announceTemplate = `  templates:
    image-updated:
      message: |
        {"event": "image-updated", "app": {{toJson .app.metadata.name}}, "namespace": {{toJson .app.metadata.namespace}}, "image": {{toJson .event.image}}, "to": {{toJson .event.to}}}
      email:
        subject: "Image updated: {{.app.metadata.name}} {{.event.image}}:{{.event.to}}"
      slack:
        groupingKey: "{{.app.metadata.namespace}}/{{.app.metadata.name}}"
`

// The Slack destination fails in each way of the issue while crowsnest
// announces the updates; every message must arrive once it recovers, and
// none twice. The scenarios run two at a time.
func TestSlackFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault sinkFault
		desc  string
	}{
		{"slack 429", sink429, "429 with Retry-After: 1"},
		{"slack 500/503", sink5xx, "500 and 503 in turn"},
		{"slack hanging", sinkHang, "requests never answered (15s client timeout)"},
		{"slack down", sinkDown, "listener closed (connections refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			chat := startChatSink(t)
			failed := destinationFault(t, tc.name, chat, "slack: "+tc.desc, func(on bool) {
				if on {
					chat.setFault(t, tc.fault)
				} else {
					chat.setFault(t, sinkOK)
				}
			}, func() string {
				switch injected, abandoned := chat.faultsMet(); tc.fault {
				case sinkDown:
					return "connections refused"
				case sinkHang:
					return fmt.Sprintf("%d requests held, %d given up by the client", injected, abandoned)
				default:
					return fmt.Sprintf("%d requests met it", injected)
				}
			})
			injected, abandoned := chat.faultsMet()
			if failed == 0 || (tc.fault != sinkDown && injected == 0) {
				t.Errorf("no delivery attempt met the fault (%.0f failed attempts, %d requests): the scenario tested nothing", failed, injected)
			}
			if tc.fault == sinkHang && abandoned == 0 {
				t.Error("no hanging request was given up by the client: the timeout was not tested")
			}
		})
	}
}

// The SMTP server fails in each way of the issue while crowsnest announces
// the updates; every mail must be accepted once it recovers, and none
// twice. The scenarios run two at a time.
func TestEmailFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault mailFault
		desc  string
	}{
		{"email 421/451", mailTempFail, "421 greeting, 451 to RCPT and 451 after DATA in turn"},
		{"email hanging", mailHang, "connections accepted, never greeted (2s client timeout)"},
		{"email down", mailDown, "listener closed (connections refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mta := startMailSink(t)
			failed := destinationFault(t, tc.name, mta, "email: "+tc.desc, func(on bool) {
				if on {
					mta.setFault(t, tc.fault)
				} else {
					mta.setFault(t, mailOK)
				}
			}, func() string {
				if tc.fault == mailDown {
					return "connections refused"
				}
				return fmt.Sprintf("%d connections or replies met it", mta.faultsMet())
			})
			if failed == 0 || (tc.fault != mailDown && mta.faultsMet() == 0) {
				t.Errorf("no delivery attempt met the fault (%.0f failed attempts, %d injected): the scenario tested nothing", failed, mta.faultsMet())
			}
		})
	}
}

// destinationFault runs a scenario of 8 Applications notifying dest: the
// fault (desc) is on from the start and ends sinkFaultFor after the first
// image update; then every update must land and every message arrive,
// once. It records the row, with what met says met the fault, and returns
// crowsnest's failed and rate-limited delivery attempts.
func destinationFault(t *testing.T, scenario string, dest destination, desc string, setFault func(on bool), met func() string) float64 {
	t.Helper()
	w := newWorld(t, "notify", worldOptions{kubeApps: 4, gitApps: 4, repos: 2, dest: dest})
	setFault(true)
	start := time.Now()
	d := w.daemon(t, "crowsnest")
	d.start(t)
	// The fault starts counting once there is something to send.
	testwait.Within(t, "the first image update", time.Minute, func() bool { return d.count(`"msg":"images updated"`) > 0 })
	time.Sleep(sinkFaultFor) // sleep-ok: fault duration
	setFault(false)
	var failed float64
	finish(t, w, start, scenario, func() string {
		// Read once everything settled: a hanging Slack request fails
		// only when its client gives up, after the fault.
		ctx := context.WithoutCancel(t.Context())
		failed = d.deliveryAttempts(ctx, "failed", "rate_limited")
		return fmt.Sprintf("%s for %s after the first update (%s, %.0f failed attempts)", desc, sinkFaultFor, met(), failed)
	}, 0, d)
	return failed
}
