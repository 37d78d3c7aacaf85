package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// A broken annotation is reported (Warning log, InvalidAnnotation Event)
// when it appears and when it changes, not on every reconcile while it
// stays: Events repeated at every poll are noise (and a PATCH each). The
// valid image next to it is still updated.
func TestInvalidAnnotationReportedOncePerProblem(t *testing.T) {
	_, image := appRegistry(t)

	ns := env.CreateNamespace(t, "invalid-ann")
	const p = "argocd-image-updater.argoproj.io/"
	// setAnnotations returns the resourceVersion it wrote.
	setAnnotations := func(extra map[string]string) string {
		t.Helper()
		u, err := apps(t).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ann := map[string]string{p + "image-list": "app=" + image + ",db=" + image}
		for k, v := range extra {
			ann[k] = v
		}
		u.SetAnnotations(ann)
		up, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return up.GetResourceVersion()
	}
	createApp(t, ns, "web")
	setAnnotations(map[string]string{p + "db.update-strategy": "fastest"})
	setStatus(t, ns, "web", map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})

	engine, events, logs := runWatchedImageEngine(t, ns)

	key := ns + "/web"
	testwait.For(t, "an InvalidAnnotation Event naming the key", func() bool {
		return events.has(key, controller.EventInvalidAnnotation, p+"db.update-strategy")
	})
	reconciledAgain := func(times int) {
		t.Helper()
		for range 3 {
			engine.Enqueue(key)
		}
		testwait.For(t, "web reconciled again", func() bool {
			return strings.Count(logs.String(), `msg="annotation still invalid"`) >= times
		})
	}
	reconciledAgain(1)
	if n := events.count(key, controller.EventInvalidAnnotation); n != 1 {
		t.Errorf("%d InvalidAnnotation Events for one broken annotation, want 1: %v", n, events.all())
	}
	if n := strings.Count(logs.String(), `msg="invalid annotation"`); n != 1 {
		t.Errorf("%d invalid annotation warnings for one broken annotation, want 1", n)
	}

	// Another problem is reported at once.
	setAnnotations(map[string]string{p + "db.update-strategy": "slowest"})
	testwait.For(t, "an InvalidAnnotation Event for the new problem", func() bool {
		return events.has(key, controller.EventInvalidAnnotation, `"slowest"`)
	})
	// Fixed, then broken the same way again: reported again.
	rv := setAnnotations(nil)
	testwait.For(t, "web reconciled with valid annotations", func() bool {
		return strings.Contains(logs.String(), `msg="application observed" app=`+key+` resourceVersion=`+rv+` `)
	})
	setAnnotations(map[string]string{p + "db.update-strategy": "fastest"})
	testwait.For(t, "the problem reported again after it was fixed and came back", func() bool {
		return events.count(key, controller.EventInvalidAnnotation) == 3
	})
	if n := events.count(key, controller.EventInvalidAnnotation); n != 3 {
		t.Errorf("%d InvalidAnnotation Events, want 3 (appeared, changed, came back): %v", n, events.all())
	}
}
