package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// leftAloneApp creates ns/name with an image-list annotation for image
// (edit changes the object before it is written) and status, with the
// image deployed at 1.0.0 added to it; it returns the key.
func leftAloneApp(t *testing.T, ns, name, image string, edit func(*unstructured.Unstructured), status map[string]any) string {
	t.Helper()
	createApp(t, ns, name)
	u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": "app=" + image})
	edit(u)
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	status["summary"] = map[string]any{"images": []any{image + ":1.0.0"}}
	setStatus(t, ns, name, status)
	return ns + "/" + name
}

// reportedOnce waits for an UnsupportedSource Event on key holding text,
// reconciles key again, and checks that no second Event came.
func reportedOnce(t *testing.T, engine *controller.Engine, events *msgEvents, logs *testenv.LogBuffer, key, text string) {
	t.Helper()
	testwait.For(t, "an UnsupportedSource Event holding "+text, func() bool {
		return events.has(key, controller.EventUnsupportedSource, text)
	})
	for range 3 {
		engine.Enqueue(key)
	}
	testwait.For(t, key+" reconciled again", func() bool {
		return strings.Contains(logs.String(), `msg="images still left alone: their source takes no image overrides"`)
	})
	if n := events.count(key, controller.EventUnsupportedSource); n != 1 {
		t.Errorf("%d UnsupportedSource Events, want 1: %v", n, events.all())
	}
}

// An Application Argo CD renders as a plain directory gets no image
// overrides (kustomize images would have Argo CD run kustomize on it, and
// fail): a newer tag is found, the spec stays as it was, and one
// UnsupportedSource Event names the image and the tool, not one per pass.
func TestDirectorySourceLeftAloneWithOneEvent(t *testing.T) {
	_, image := appRegistry(t)
	ns := env.CreateNamespace(t, "unsupported-src")
	key := leftAloneApp(t, ns, "plain", image, func(*unstructured.Unstructured) {}, map[string]any{"sourceType": "Directory"})
	engine, events, logs := runWatchedImageEngine(t, ns)
	reportedOnce(t, engine, events, logs, key, "renders the source as Directory")
	if !events.has(key, controller.EventUnsupportedSource, "image app:") {
		t.Errorf("the Event does not name the image: %v", events.all())
	}
	got, err := apps(t).Namespace(ns).Get(t.Context(), "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if src, _, _ := unstructured.NestedMap(got.Object, "spec", "source"); src["kustomize"] != nil || src["helm"] != nil {
		t.Errorf("the directory source was given overrides: %v", src)
	}
	if n := events.count(key, controller.EventImagesUpdated); n != 0 {
		t.Errorf("%d ImagesUpdated Events for an Application left alone", n)
	}
}

// A multi-source Application none of whose sources takes overrides (only
// a $values ref) is reported the same way: one UnsupportedSource Event,
// the spec untouched.
func TestNoSourceForOverridesReportedOnce(t *testing.T) {
	_, image := appRegistry(t)
	ns := env.CreateNamespace(t, "no-src")
	key := leftAloneApp(t, ns, "refs", image, func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "source")
		if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"repoURL": "https://git.example/values.git", "ref": "values"}}, "spec", "sources"); err != nil {
			t.Fatal(err)
		}
	}, map[string]any{})
	engine, events, logs := runWatchedImageEngine(t, ns)
	reportedOnce(t, engine, events, logs, key, "no source of the Application takes image overrides")
	got, err := apps(t).Namespace(ns).Get(t.Context(), "refs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if srcs, _, _ := unstructured.NestedSlice(got.Object, "spec", "sources"); len(srcs) != 1 || len(srcs[0].(map[string]any)) != 2 {
		t.Errorf("the sources were changed: %v", srcs)
	}
}
