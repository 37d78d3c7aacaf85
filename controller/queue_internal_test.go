package controller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// RequeueNamespace queues the Applications of that namespace only, not
// those of a namespace whose name it begins.
func TestRequeueNamespaceQueuesThatNamespaceOnly(t *testing.T) {
	e := &Engine{}
	e.init()
	t.Cleanup(e.queue.ShutDown)
	for _, key := range [][2]string{{"team-a", "web"}, {"team-a", "api"}, {"team-ab", "web"}, {"team-b", "web"}} {
		e.OnAppEvent(watcher.AppEvent{Type: watcher.Added, New: &watcher.App{Namespace: key[0], Name: key[1]}})
	}
	drain(e)
	e.RequeueNamespace("team-a")
	if diff := cmp.Diff([]string{"team-a/api", "team-a/web"}, drain(e)); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

// drain takes every key off the engine's queue, sorted.
func drain(e *Engine) []string {
	var keys []string
	for e.queue.Len() > 0 {
		k, _ := e.queue.Get()
		e.queue.Done(k)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
