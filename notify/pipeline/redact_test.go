package pipeline_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// An image-update-failed event whose message is an error naming a URL
// with credentials is sent without them: the catalog's templates put the
// event's message in what Slack, webhooks and email receive.
func TestNotifierEventTextsAreRedacted(t *testing.T) {
	const secret = "t0ken-S3CR3T"
	sink := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
	var synced atomic.Bool
	n := &pipeline.Notifier{
		Outbox: &outbox.Outbox{Store: &outbox.MemoryStore{}, RetryBaseDelay: 10 * time.Millisecond},
		State:  &pipeline.MemoryState{},
		Apps:   testnotify.SyncedFunc(synced.Load),
		Setup:  testnotify.HookSetup,
	}
	if err := n.Apply(testnotify.Config(sink.URL)); err != nil {
		t.Fatal(err)
	}
	testnotify.RunTasks(t, n.Outbox.Start, n.Start)
	testwait.For(t, "notifier started", n.Started)
	app := testApp(t, "web", "u1", "Succeeded", "Healthy", "r1")
	n.OnTransition(nil, app)
	synced.Store(true)
	n.OnEvent(app, triggers.Event{Type: triggers.EventImageUpdateFailed, ID: "f-1", Image: "ghcr.io/x/web", To: "1.1",
		Reason: "WriteFailed", Message: "git write-back: pushing to https://bot:" + secret + "@git.example.com/r.git: refused"})
	var got string
	testwait.For(t, "the image-update-failed message", func() bool {
		for _, b := range sink.Bodies() {
			if strings.Contains(b, "image-update-failed") {
				got = b
				return true
			}
		}
		return false
	})
	if strings.Contains(got, secret) || !strings.Contains(got, "https://***@git.example.com/r.git") {
		t.Errorf("message sent: %s", got)
	}
}
