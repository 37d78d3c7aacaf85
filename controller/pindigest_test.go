package controller_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// reasonMessages records every Event as "reason: message".
type reasonMessages struct {
	mu   sync.Mutex
	list []string
}

func (m *reasonMessages) Event(_ runtime.Object, _, reason, msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = append(m.list, reason+": "+msg)
}

func (m *reasonMessages) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.list...)
}

// eventNotes keeps the crowsnest events handed to the notifier.
type eventNotes struct {
	mu  sync.Mutex
	evs []triggers.Event
}

func (*eventNotes) Announces() bool { return true }

func (n *eventNotes) OnEvent(_ *watcher.App, ev triggers.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.evs = append(n.evs, ev)
}

func (n *eventNotes) all() []triggers.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]triggers.Event(nil), n.evs...)
}

// crowsnest.dev/pin-digest on the real apiserver, in Kubernetes mode: the
// semver winner is written as tag@digest, the digest the registry names
// for it; the same again writes nothing; the tag pushed again (new
// content, same name) is a change to the new digest, and the Event says
// the tag moved. A value that is not true or false writes nothing.
func TestPinDigestWritesTagAtDigestAndFollowsAMovedTag(t *testing.T) {
	reg, image := appRegistry(t)
	ns := env.CreateNamespace(t, "pin")
	events := &reasonMessages{}
	notes := &eventNotes{}
	images := &controller.ImageReconciler{
		Events:   events,
		Notifier: notes,
		Registry: &registry.Client{},
		Writer:   &kube.Writer{Client: dynClient(t)},
		Log:      slog.New(slog.DiscardHandler),
	}
	request := func(name, pin string) controller.Request {
		t.Helper()
		u := createApp(t, ns, name)
		u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image + ":^1", "crowsnest.dev/pin-digest": pin})
		if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, ns, name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
		return requestOf(t, ns, name)
	}
	digestOf := func(tag string) string {
		t.Helper()
		d, err := remote.Head(reg.Ref(t, "team/app:"+tag))
		if err != nil {
			t.Fatal(err)
		}
		return d.Digest.String()
	}

	web := request("web", "true")
	if _, err := images.Reconcile(t.Context(), web); err != nil {
		t.Fatal(err)
	}
	first := image + ":1.1.0@" + digestOf("1.1.0")
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != first {
		t.Fatalf("the Application carries %v, want [%s]", got, first)
	}
	// Argo CD runs it now.
	setStatus(t, ns, "web", map[string]any{"summary": map[string]any{"images": []any{first}}})
	if _, err := images.Reconcile(t.Context(), requestOf(t, ns, "web")); err != nil {
		t.Fatal(err)
	}
	if n := len(events.all()); n != 1 {
		t.Errorf("Events after the same digest again: %q, want the first write's only", events.all())
	}

	// 1.1.0 pushed again: new content under the same tag.
	reg.Push(t, "team/app:1.1.0", testreg.Image(t, time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC), "linux/amd64"))
	images.Registry = &registry.Client{} // the tag cache's time is up
	if _, err := images.Reconcile(t.Context(), requestOf(t, ns, "web")); err != nil {
		t.Fatal(err)
	}
	moved := image + ":1.1.0@" + digestOf("1.1.0")
	if moved == first {
		t.Fatal("the test's second push did not change the digest")
	}
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != moved {
		t.Errorf("after the tag moved the Application carries %v, want [%s]", got, moved)
	}
	all := events.all()
	if last := all[len(all)-1]; !strings.HasPrefix(last, controller.EventImagesUpdated+": ") || !strings.Contains(last, "tag 1.1.0 was pushed again") {
		t.Errorf("Event = %q, want ImagesUpdated saying the tag was pushed again", last)
	}
	evs := notes.all()
	if len(evs) != 2 || evs[0].Reason != "" || evs[1].Type != triggers.EventImageUpdated || evs[1].Reason != controller.ReasonTagPushedAgain ||
		evs[1].From != strings.TrimPrefix(first, image+":") || evs[1].To != strings.TrimPrefix(moved, image+":") {
		t.Errorf("notifications = %+v, want image-updated to the pin, then image-updated with reason %s", evs, controller.ReasonTagPushedAgain)
	}

	// A value that is neither: nothing written, and the key named.
	bad := request("bad", "yes")
	_, _ = images.Reconcile(t.Context(), bad)
	if got := kustomizeImages(t, ns, "bad"); len(got) != 0 {
		t.Errorf("pin-digest \"yes\": the Application carries %v, want nothing written", got)
	}
	if !slicesContainsSubstr(events.all(), "crowsnest.dev/pin-digest") {
		t.Errorf("Events %q do not name crowsnest.dev/pin-digest", events.all())
	}
}

func slicesContainsSubstr(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
