package controller_test

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// idLog is a Notify that keeps event IDs.
type idLog struct {
	mu  sync.Mutex
	ids []string
}

func (*idLog) Announces() bool { return true }

func (l *idLog) OnEvent(_ *watcher.App, ev triggers.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := ev.ID
	if ev.Recovered {
		id += " (recovered)"
	}
	l.ids = append(l.ids, id)
}

func (l *idLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

// A process that wrote an image update and died before its notifier
// recorded the announcement: the next process (a restart, or the standby
// taking over) finds the write in the journal, sees it landed, and
// announces it again under the same event ID (the notifier drops it if it
// had been recorded). A journaled write that did not land is written and
// announced once, by the normal path.
func TestWriteJournalRecoversAnnouncements(t *testing.T) {
	_, image := appRegistry(t)
	ns := env.CreateNamespace(t, "journal")
	store := &journal.ConfigMaps{Client: kubecoretest.New(t, env.Config), Namespace: ns}
	process := func(events *idLog) *controller.ImageReconciler {
		return &controller.ImageReconciler{
			Registry: &registry.Client{},
			Writer:   &kube.Writer{Client: dynClient(t)},
			Journal:  store,
			Notifier: events,
			Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
	}
	request := func(name string) controller.Request {
		t.Helper()
		return requestOf(t, ns, name)
	}
	for _, name := range []string{"web", "api"} {
		u := createApp(t, ns, name)
		u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image + ":^1"})
		if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, ns, name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
	}
	wantID := func(name string) string {
		return "image-updated|" + ns + "|" + name + "|" + image + "|1.0.0|1.1.0"
	}
	// Argo CD's CRD has no status subresource, so the status write above
	// counted as a change too: count the writes from here.
	before, err := apps(t).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The first process writes web and dies before announcing it.
	lost := &idLog{}
	if _, err := process(lost).Reconcile(t.Context(), request("web")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{wantID("web")}, lost.all()); diff != "" {
		t.Fatalf("first process's announcements (-want +got):\n%s", diff)
	}
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != image+":1.1.0" {
		t.Fatalf("web carries %v after the write", got)
	}

	// The next process finds web written and announces it again, once,
	// marked as one the earlier process may have sent.
	events := &idLog{}
	next := process(events)
	for range 2 {
		if _, err := next.Reconcile(t.Context(), request("web")); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{wantID("web") + " (recovered)"}, events.all()); diff != "" {
		t.Errorf("next process's announcements for web (-want +got):\n%s", diff)
	}
	u, err := apps(t).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := u.GetGeneration(), before.GetGeneration()+1; g != want {
		t.Errorf("web's generation = %d, want %d (one write)", g, want)
	}

	// api's write was journaled but never made (the crash came first): the
	// next process writes it and announces it once.
	if err := store.Save(t.Context(), ns+"/api", &journal.Intent{Method: "argocd", At: time.Now(),
		Changes: []journal.Change{{Image: image, From: "1.0.0", To: "1.1.0"}}}); err != nil {
		t.Fatal(err)
	}
	events = &idLog{}
	if _, err := process(events).Reconcile(t.Context(), request("api")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{wantID("api")}, events.all()); diff != "" {
		t.Errorf("announcements for api (-want +got):\n%s", diff)
	}
	if got := kustomizeImages(t, ns, "api"); len(got) != 1 || got[0] != image+":1.1.0" {
		t.Errorf("api carries %v, want the write made", got)
	}

	// A deleted Application's intent goes.
	if _, err := process(&idLog{}).Reconcile(t.Context(), controller.Request{Key: ns + "/web"}); err != nil {
		t.Fatal(err)
	}
	all, err := store.LoadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all[ns+"/web"]; ok || len(all) != 1 {
		t.Errorf("journal after web was deleted: %v, want only api", all)
	}
}
