package watcher_test

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

func trimmed(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	out, err := watcher.TrimApplication(mustParse(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	return out.(*unstructured.Unstructured)
}

func TestTrimApplicationIsIdempotent(t *testing.T) {
	once := trimmed(t, multiSourceYAML)
	twice, err := watcher.TrimApplication(once.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(once.Object, twice.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("second trim changed the object (-once +twice):\n%s", diff)
	}
	wantStatus := []string{"health", "operationState", "summary", "sync"}
	var gotStatus []string
	for k := range once.Object["status"].(map[string]any) {
		gotStatus = append(gotStatus, k)
	}
	if diff := cmp.Diff(wantStatus, gotStatus, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("kept status fields (-want +got):\n%s", diff)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(once.Object, "status", "operationState", "syncResult", "resources"); found {
		t.Error("operationState.syncResult.resources not trimmed")
	}
	if rev, _, _ := unstructured.NestedString(once.Object, "status", "operationState", "syncResult", "revision"); rev != "abc123" {
		t.Errorf("operationState.syncResult.revision = %q, want kept", rev)
	}
}

func TestChanged(t *testing.T) {
	set := func(path []string, v any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
				panic(err)
			}
		}
	}
	tests := []struct {
		name   string
		mutate func(*unstructured.Unstructured)
		want   bool
	}{
		{name: "nothing", mutate: func(*unstructured.Unstructured) {}, want: false},
		{name: "resourceVersion only", mutate: set([]string{"metadata", "resourceVersion"}, "999"), want: false},
		{name: "generation only", mutate: set([]string{"metadata", "generation"}, int64(7)), want: false},
		{name: "reconciledAt (trimmed away)", mutate: set([]string{"status", "reconciledAt"}, "2030-01-01T00:00:00Z"), want: false},
		{name: "status.resources (trimmed away)", mutate: set([]string{"status", "resources"}, []any{}), want: false},
		{name: "health status", mutate: set([]string{"status", "health", "status"}, "Degraded"), want: true},
		{name: "sync status", mutate: set([]string{"status", "sync", "status"}, "Synced"), want: true},
		{name: "operation phase", mutate: set([]string{"status", "operationState", "phase"}, "Running"), want: true},
		{name: "summary images", mutate: set([]string{"status", "summary", "images"}, []any{"x:1"}), want: true},
		{name: "spec", mutate: set([]string{"spec", "project"}, "other"), want: true},
		{name: "annotation", mutate: set([]string{"metadata", "annotations", "a"}, "b"), want: true},
		{name: "label", mutate: set([]string{"metadata", "labels", "team"}, "search"), want: true},
		{name: "deletion", mutate: set([]string{"metadata", "deletionTimestamp"}, "2026-11-22T10:00:00Z"), want: true},
		{name: "operation requested", mutate: set([]string{"operation", "sync", "revision"}, "HEAD"), want: true},
		{name: "status removed", mutate: func(u *unstructured.Unstructured) { delete(u.Object, "status") }, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := trimmed(t, multiSourceYAML)
			cur := mustParse(t, multiSourceYAML)
			tt.mutate(cur)
			trimmedCur, err := watcher.TrimApplication(cur)
			if err != nil {
				t.Fatal(err)
			}
			if got := watcher.Changed(old, trimmedCur.(*unstructured.Unstructured)); got != tt.want {
				t.Errorf("Changed() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAppFromObject(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    *watcher.App
		wantErr bool
	}{
		{
			name: "single source",
			doc:  appYAML,
			want: &watcher.App{
				Namespace: "argocd", Name: "guestbook", Project: "default",
				Annotations: map[string]string{"argocd-image-updater.argoproj.io/image-list": "web=registry.example/guestbook"},
				Sources: []watcher.Source{{
					RepoURL: "https://git.example/apps.git", Path: "guestbook", TargetRevision: "main",
					Kustomize: &watcher.KustomizeSource{Images: []string{"registry.example/guestbook:1.0.0"}},
				}},
				Destination: watcher.Destination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"},
			},
		},
		{
			name: "operation requested",
			doc:  appYAML + "operation:\n  sync: {revision: HEAD}\n",
			want: &watcher.App{
				Namespace: "argocd", Name: "guestbook", Project: "default", OperationPending: true,
				Annotations: map[string]string{"argocd-image-updater.argoproj.io/image-list": "web=registry.example/guestbook"},
				Sources: []watcher.Source{{
					RepoURL: "https://git.example/apps.git", Path: "guestbook", TargetRevision: "main",
					Kustomize: &watcher.KustomizeSource{Images: []string{"registry.example/guestbook:1.0.0"}},
				}},
				Destination: watcher.Destination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"},
			},
		},
		{name: "source of the wrong type", doc: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x}\nspec: {source: just-a-string}\n", wantErr: true},
		{name: "images of the wrong type", doc: "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x}\nstatus: {summary: {images: 3}}\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := mustParse(t, tt.doc)
			if u.GetNamespace() == "" {
				u.SetNamespace("argocd")
			}
			got, err := watcher.AppFromObject(u)
			if (err != nil) != tt.wantErr {
				t.Fatalf("AppFromObject() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got.Object = nil
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(watcher.App{})); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
		})
	}
}

// Two Applications in the cache share their keys' and short values'
// storage instead of each holding copies, and keep every kept value.
func TestTrimApplicationSharesStrings(t *testing.T) {
	a, b := trimmed(t, multiSourceYAML), trimmed(t, appYAML)
	if diff := cmp.Diff(mustParse(t, appYAML).Object["spec"], b.Object["spec"]); diff != "" {
		t.Errorf("the trimmed spec differs from the document's (-doc +trimmed):\n%s", diff)
	}
	keyOf := func(m map[string]any, want string) string {
		for k := range m {
			if k == want {
				return k
			}
		}
		t.Fatalf("no key %q", want)
		return ""
	}
	ka, kb := keyOf(a.Object, "metadata"), keyOf(b.Object, "metadata")
	if unsafe.StringData(ka) != unsafe.StringData(kb) {
		t.Error(`each trimmed Application holds its own "metadata" key`)
	}
	va, _, _ := unstructured.NestedString(a.Object, "metadata", "namespace")
	vb, _, _ := unstructured.NestedString(b.Object, "metadata", "namespace")
	if va != vb || unsafe.StringData(va) != unsafe.StringData(vb) {
		t.Errorf("metadata.namespace %q and %q are not shared between the two", va, vb)
	}
}

// The sharing outlives a garbage collection: an Application decoded after
// one shares what the cache already holds.
func TestTrimApplicationSharesStringsAcrossGC(t *testing.T) {
	a := trimmed(t, multiSourceYAML)
	runtime.GC()
	runtime.GC()
	b := trimmed(t, multiSourceYAML)
	va, _, _ := unstructured.NestedString(a.Object, "metadata", "namespace")
	vb, _, _ := unstructured.NestedString(b.Object, "metadata", "namespace")
	if unsafe.StringData(va) != unsafe.StringData(vb) {
		t.Error("an Application trimmed after a GC holds its own copy of metadata.namespace")
	}
	runtime.KeepAlive(a)
}
