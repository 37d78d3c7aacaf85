package pipeline_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// testApp builds an Application view with the given operation phase,
// health and revision ("" leaves a field out).
func testApp(t *testing.T, name, uid, phase, health, revision string) *watcher.App {
	t.Helper()
	status := map[string]any{"sync": map[string]any{"status": "Synced", "revision": revision}}
	if health != "" {
		status["health"] = map[string]any{"status": health}
	}
	if phase != "" {
		status["operationState"] = map[string]any{"phase": phase, "syncResult": map[string]any{"revision": revision}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": uid},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example/apps.git", "path": name, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
		},
		"status": status,
	}}
	ann := testnotify.SubscribeAll()
	anyAnn := map[string]any{}
	for k, v := range ann {
		anyAnn[k] = v
	}
	u.Object["metadata"].(map[string]any)["annotations"] = anyAnn
	a, err := watcher.AppFromObject(u)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
