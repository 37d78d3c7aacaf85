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

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
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
	image := pushTags(t, reg, "team/web", "1.0.0", "1.5.0")
	kubeconfig, ns, dir := e2eCluster(t, "e2e-notify")
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

	createApp(t, ns, annotatedApp("web", fmt.Sprintf(`    argocd-image-updater.argoproj.io/image-list: %s
    notifications.argoproj.io/subscribe.on-image-updated.hook: ""
    notifications.argoproj.io/subscribe.on-created.hook: ""`, image)), image+":1.0.0")
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
