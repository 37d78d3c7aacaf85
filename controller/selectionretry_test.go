package controller_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// A registry that fails longer than the client's own retries leaves an
// update undecided: the reconcile must fail (retryable) so the engine comes
// back to it. The poller cannot: its first successful poll only records a
// baseline. A policy that no tag satisfies is not a failure (as in
// argocd-image-updater): no Warning Event, nothing to retry; nothing
// changes until new tags arrive, and the poller reports those.
func TestSelectionFailureIsRetried(t *testing.T) {
	reg, image := appRegistry(t)

	ns := env.CreateNamespace(t, "selretry")
	events := &eventLog{}
	images := &controller.ImageReconciler{
		Events:   events,
		Registry: &registry.Client{Hosts: sameHosts{MaxAttempts: 2, RetryBaseDelay: 10 * time.Millisecond}},
		Writer:   &kube.Writer{Client: dynClient(t)},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	request := func(name, constraint string) controller.Request {
		t.Helper()
		u := createApp(t, ns, name)
		u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image + constraint})
		if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, ns, name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
		return requestOf(t, ns, name)
	}

	reg.SetFault(func(w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return true
	})
	web := request("web", ":^1")
	_, err := images.Reconcile(t.Context(), web)
	if err == nil || controller.IsTerminal(err) {
		t.Fatalf("reconcile while the registry answers 503: error = %v, want a retryable error", err)
	}
	if w := events.warnings(); len(w) != 1 || !strings.Contains(w[0], "ImageUpdateFailed") {
		t.Errorf("Warning Events after the 503 = %q, want one ImageUpdateFailed", w)
	}
	reg.SetFault(nil)
	if _, err := images.Reconcile(t.Context(), web); err != nil {
		t.Fatalf("retry after the registry recovered: %v", err)
	}
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != image+":1.1.0" {
		t.Errorf("after the retry the Application carries %v, want [%s:1.1.0]", got, image)
	}

	if _, err := images.Reconcile(t.Context(), request("pinned", ":^2")); err != nil {
		t.Errorf("reconcile with no qualifying tag: %v, want nil (nothing to retry)", err)
	}
	if w := events.warnings(); len(w) != 1 {
		t.Errorf("Warning Events = %q, want only the 503's: no qualifying tag is nothing to do", w)
	}
}

func kustomizeImages(t *testing.T, ns, name string) []string {
	t.Helper()
	u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
	return got
}
