package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// The daemon announces its own work: an Application subscribed to the
// catalog's on-image-updated and on-created triggers gets exactly one
// webhook message for its creation and one for the image update.
func TestE2ENotifiesImageUpdates(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	sink := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	t.Cleanup(sink.Close)
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}

	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	reg.Push(t, "team/web:1.0.0", testreg.Image(t, t0, "linux/amd64"))
	reg.Push(t, "team/web:1.5.0", testreg.Image(t, t0.Add(time.Hour), "linux/amd64"))
	image := reg.Host() + "/team/web"

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "e2e-notify")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseNamespace: %s}
notifications:
  catalog: true
  services:
    hook:
      webhook: {url: %s/notify}
`, ns, sink.URL))
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json")
	d.waitLog(t, `"msg":"engine caches synced"`)

	apps := dynamic.NewForConfigOrDie(env.Config).Resource(watcher.ApplicationsResource).Namespace(ns)
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: %s
    notifications.argoproj.io/subscribe.on-image-updated.hook: ""
    notifications.argoproj.io/subscribe.on-created.hook: ""
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
`, image)), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	created, err := apps.Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}}
	if _, err := apps.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a created and an image-updated message", func() bool {
		var createdMsg, updated int
		for _, b := range received() {
			switch {
			case strings.Contains(b, "1.5.0"):
				updated++
			case strings.Contains(b, "web"):
				createdMsg++
			}
		}
		return createdMsg >= 1 && updated >= 1
	})
	time.Sleep(2 * time.Second) // room for a duplicate to show up
	var updated int
	for _, b := range received() {
		if strings.Contains(b, "1.5.0") {
			updated++
		}
	}
	if updated != 1 || len(received()) != 2 {
		t.Errorf("messages = %q, want exactly one for the creation and one for the update", received())
	}
}
