package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// startNotifyingDaemon runs the daemon on a fresh namespace with the
// catalog and a webhook service "hook" posting to sinkURL, until its
// caches synced.
func startNotifyingDaemon(t *testing.T, prefix, sinkURL string) (kubeconfig, ns string, d *daemon) {
	t.Helper()
	kubeconfig, ns, dir := e2eCluster(t, prefix)
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseNamespace: %s}
notifications:
  catalog: true
  services:
    hook:
      webhook: {url: %s/notify}
`, ns, sinkURL))
	d = startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json", "--log-level", "debug")
	d.waitLog(t, `"msg":"engine caches synced"`)
	return kubeconfig, ns, d
}

// touchApp sets an annotation nothing reads on the Application and returns
// its new resourceVersion.
func touchApp(t *testing.T, ns, name string) string {
	t.Helper()
	for {
		u, err := appsIn(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		anns := u.GetAnnotations()
		anns["e2e.crowsnest.dev/touched"] = time.Now().Format(time.RFC3339Nano)
		u.SetAnnotations(anns)
		u, err = appsIn(ns).Update(t.Context(), u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return u.GetResourceVersion()
	}
}

// waitRescanSettled waits for the daemon's outbox to rescan its store twice
// after since, the second time finding nothing to pick up and holding no
// delivery: every rescan until then handed over what it found, and it was
// sent; a record left pending would have been sent again by then.
func waitRescanSettled(t *testing.T, d *daemon, since time.Time) {
	t.Helper()
	waitFor(t, "a rescan after the delivery with nothing held", func() bool {
		after := 0
		for _, l := range d.lines() {
			var r struct {
				Time   time.Time `json:"time"`
				Msg    string    `json:"msg"`
				Picked int       `json:"picked"`
				Held   int       `json:"held"`
			}
			if json.Unmarshal([]byte(l), &r) != nil || r.Msg != "outbox rescanned the store" || !r.Time.After(since) {
				continue
			}
			// The first one's list may have been read before since.
			after++
			if after >= 2 && r.Picked == 0 && r.Held == 0 {
				return true
			}
		}
		return false
	})
}

// The daemon announces its own work: an Application subscribed to the
// catalog's on-image-updated and on-created triggers gets exactly one
// webhook message for its creation and one for the image update.
func TestE2ENotifiesImageUpdates(t *testing.T) {
	sink := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
	received := sink.Bodies

	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.5.0")
	_, ns, d := startNotifyingDaemon(t, "e2e-notify", sink.URL)

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
	// A duplicate would come from a reconcile after the update (it is
	// over once the engine reconciles a later version of the
	// Application), or from the outbox (settled at a rescan after that).
	later := touchApp(t, ns, "web")
	d.waitLog(t, `"msg":"application observed"`, `"resourceVersion":"`+later+`"`)
	waitRescanSettled(t, d, time.Now())
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

// A message the destination refused is dead-lettered; once the
// destination is fixed, `crowsnest notify redeliver` (another process,
// with an ID prefix from `notify log`) has the running daemon send it
// exactly once more.
func TestE2ERedeliverDeadLetter(t *testing.T) {
	var (
		mu                sync.Mutex
		refuse            = true
		accepted, refused int
	)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			refused++
			http.Error(w, "schema mismatch", http.StatusUnprocessableEntity)
			return
		}
		accepted++
	}))
	t.Cleanup(sink.Close)
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return accepted, refused
	}

	kubeconfig, ns, d := startNotifyingDaemon(t, "e2e-redeliver", sink.URL)
	createApp(t, ns, annotatedApp("web", `    notifications.argoproj.io/subscribe.on-created.hook: ""`))
	d.waitLog(t, `"msg":"notification given up"`, `"trigger":"on-created"`) // a 422 is not retried

	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), binary, append(args, "--kubeconfig", kubeconfig, "-n", ns)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crowsnest %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	deliveries := func() []outbox.Record {
		t.Helper()
		var recs []outbox.Record
		if err := json.Unmarshal([]byte(cli("notify", "log", "--app", ns+"/web", "-o", "json")), &recs); err != nil {
			t.Fatal(err)
		}
		return recs
	}
	recs := deliveries()
	if len(recs) != 1 || recs[0].State != outbox.StateDead {
		t.Fatalf("delivery log = %+v, want one dead delivery", recs)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	if out := cli("notify", "redeliver", recs[0].ID[:8]); !strings.Contains(out, "delivery "+recs[0].ID+" marked pending") {
		t.Errorf("redeliver output:\n%s", out)
	}
	waitFor(t, "the redelivered message", func() bool { a, _ := counts(); return a == 1 })
	waitFor(t, "the delivery log to show it delivered", func() bool {
		r := deliveries()
		return len(r) == 1 && r[0].State == outbox.StateDelivered && r[0].Redeliveries == 1
	})
	waitRescanSettled(t, d, time.Now())
	if a, r := counts(); a != 1 || r != 1 {
		t.Errorf("destination got %d accepted and %d refused requests, want 1 and 1", a, r)
	}
}
