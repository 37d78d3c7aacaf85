package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// localRequest is the request for an Application as local mode reads it
// from its file: the status Argo CD last wrote says it runs running.
func localRequest(t *testing.T, doc, running string) controller.Request {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	obj["status"] = map[string]any{"summary": map[string]any{"images": []any{running}}}
	app, err := watcher.AppFromObject(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return controller.Request{Key: app.Key(), App: app}
}

var errKilled = errors.New("killed")

// killedAfterPush writes for real, then the process dies: nothing of the
// batch is reported.
type killedAfterPush struct{ w *gitwb.Writer }

func (k killedAfterPush) Apply(ctx context.Context, chs []gitwb.Change) ([]gitwb.Result, error) {
	if _, err := k.w.Apply(ctx, chs); err != nil {
		return nil, err
	}
	return nil, errKilled
}

// localRun is one `crowsnest run --apps-dir --once` as run.go wires it:
// a write journal in a file, Events and notifications kept for the test.
type localRun struct {
	images *controller.ImageReconciler
	events *appEvents
	notes  *gitNotes
}

func newLocalRun(journalFile string, w collect.Applier, reqs ...controller.Request) *localRun {
	r := &localRun{events: &appEvents{}, notes: &gitNotes{}}
	log := slog.New(slog.DiscardHandler)
	r.images = &controller.ImageReconciler{
		Registry: &registry.Client{}, Events: r.events, Notifier: r.notes, Queue: appLookup(reqs...),
		Journal: &journal.File{Path: journalFile}, Log: log,
	}
	r.images.Git = &collect.Batcher{Writer: w}
	return r
}

// Local mode keeps its write journal in a file. A run killed after its
// push and before announcing it leaves the commit on the remote and the
// intent in the journal: the next run announces that write once (an
// ImagesUpdated Event saying so, and the notification marked as one an
// earlier run may have sent), and announces its own writes as usual. A
// third run, finding everything written and announced, announces nothing,
// though local mode's notifier forgets between runs what it sent.
func TestLocalWriteJournalAnnouncesAWriteAKilledRunPushed(t *testing.T) {
	_, image := appRegistry(t)
	srv := testgit.Start(t, testgit.Options{})
	url := srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{
		"web/kustomization.yaml": kustomizationOf(image, "1.0.0"),
		"api/kustomization.yaml": kustomizationOf(image, "1.0.0"),
	}, "seed")
	web := localRequest(t, gitAppDoc("web", "shop", image, url, "web", "main"), image+":1.0.0")
	api := localRequest(t, gitAppDoc("api", "shop", image, url, "api", "main"), image+":1.0.0")
	journalFile := journal.FileName(t.TempDir(), t.TempDir())
	w := testGitWriter(t)

	// Run 1 pushes web's update and is killed before reporting it.
	killed := newLocalRun(journalFile, killedAfterPush{w}, web)
	runBatch(t, killed.images, web)
	if got, _ := srv.ReadFile(t, "apps", "main", "web/kustomization.yaml"); got != kustomizationOf(image, "1.1.0") {
		t.Fatalf("run 1 did not push web's update:\n%s", got)
	}
	pushed := srv.Head(t, "apps", "main")

	// Run 2 finds web's update written and announces it; api's it writes
	// and announces.
	second := newLocalRun(journalFile, w, web, api)
	runBatch(t, second.images, web, api)
	head := srv.Head(t, "apps", "main")
	if head == pushed {
		t.Fatal("run 2 did not push api's update")
	}
	wantNotes := []gitNote{
		{Key: "shop/api", Image: image, To: "1.1.0", Commit: head},
		{Key: "shop/web", Image: image, To: "1.1.0", Recovered: true},
	}
	if diff := cmp.Diff(wantNotes, sortedNotes(second.notes)); diff != "" {
		t.Errorf("run 2's notifications (-want +got):\n%s", diff)
	}
	for key, want := range map[string]string{"shop/web": "earlier run", "shop/api": "commit " + head[:12]} {
		evs := second.events.of(key)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal || evs[0].Reason != controller.EventImagesUpdated || !strings.Contains(evs[0].Message, want) {
			t.Errorf("run 2's Events of %s: %+v; want one ImagesUpdated saying %q", key, evs, want)
		}
	}

	// Run 3 has nothing to write or announce.
	third := newLocalRun(journalFile, w, web, api)
	runBatch(t, third.images, web, api)
	if got := srv.Head(t, "apps", "main"); got != head {
		t.Errorf("run 3 pushed %s", got)
	}
	if n := sortedNotes(third.notes); len(n) != 0 {
		t.Errorf("run 3 announced %+v, want nothing", n)
	}
	for _, key := range []string{"shop/web", "shop/api"} {
		if evs := third.events.of(key); len(evs) != 0 {
			t.Errorf("run 3's Events of %s: %+v, want none", key, evs)
		}
	}
}

func sortedNotes(n *gitNotes) []gitNote {
	out := n.list()
	slices.SortFunc(out, func(a, b gitNote) int { return strings.Compare(a.Key, b.Key) })
	return out
}
