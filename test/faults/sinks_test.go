package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// sinkFaultFor is how long each webhook fault lasts: several delivery
// attempts (2s timeout, 2s doubling backoff) but less than the outbox's
// five attempts, after which a delivery is dead-lettered.
const sinkFaultFor = 8 * time.Second

// The webhook destination fails in each way of the issue while crowsnest
// announces the updates; every message must arrive once it recovers, and
// none twice. The scenarios run two at a time.
func TestWebhookSinkFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault sinkFault
		desc  string
	}{
		{"webhook 429", sink429, "429 with Retry-After: 1"},
		{"webhook 500/503", sink5xx, "500 and 503 in turn"},
		{"webhook hanging", sinkHang, "requests held without an answer (2s client timeout)"},
		{"webhook down", sinkDown, "listener closed (connections refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "sink", worldOptions{kubeApps: 4, gitApps: 4, repos: 2, hooks: 2})
			w.sink.setFault(t, tc.fault)
			start := time.Now()
			d := w.daemon(t, "crowsnest")
			d.start(t)
			// The fault starts counting once there is something to send.
			testwait.Within(t, "the first image update", time.Minute, func() bool { return d.count(`"msg":"images updated"`) > 0 })
			time.Sleep(sinkFaultFor) // sleep-ok: fault duration
			failed := d.deliveryAttempts(context.WithoutCancel(t.Context()), "failed", "rate_limited")
			w.sink.setFault(t, sinkOK)
			finish(t, w, start, tc.name, func() string {
				return fmt.Sprintf("webhook: %s for %s after the first update (%.0f failed attempts)", tc.desc, sinkFaultFor, failed)
			}, 0, d)
			if failed == 0 {
				t.Error("no delivery attempt met the fault: the scenario tested nothing")
			}
		})
	}
}
