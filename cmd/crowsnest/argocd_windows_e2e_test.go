package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// An AppProject deny window that is active now, with the real Argo CD:
// Argo CD's automated sync leaves a new commit undeployed (the Application
// stays OutOfSync and the Deployment unchanged after Argo CD compared it
// again, twice), and crowsnest holds its image update instead of
// patching the Application. Once the window is removed from the
// AppProject, crowsnest writes and Argo CD syncs both changes.
func TestE2EArgoCDWindowDenyBlocksAutoSyncAndHoldsTheUpdate(t *testing.T) {
	w := newArgoWorld(t, "web-deny", func(w *argoWorld) string {
		return "    argocd-image-updater.argoproj.io/image-list: web=" + w.image + ":^1"
	}, argocdenv.Options{AppResync: 5 * time.Second})
	setProjectWindows(t, w.ns, []map[string]any{{
		"kind": "deny", "schedule": "* * * * *", "duration": "1h", "applications": []string{w.app},
	}})
	// A commit Argo CD's automated sync would apply: two replicas.
	head := w.git.Seed(t, "deploy", "main", map[string]string{
		"web/deployment.yaml": webDeployment(w.image+":1.0.0", 2),
	}, "two replicas")
	argoRefresh(t, w)

	d := w.daemon(t)
	d.waitLog(t, `"msg":"image update held by a sync window"`, `"app":"`+w.ns+`/`+w.app+`"`)

	// Argo CD: it has seen the commit and compared twice more since, and
	// applied neither the commit nor anything crowsnest could have written.
	app := argoAppWait(t, w, "Argo CD to find the commit OutOfSync", func(app *unstructured.Unstructured) bool {
		rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		return rev == head && sync == "OutOfSync"
	})
	app = argoReconciledAgain(t, w, app, 2)
	if sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status"); sync != "OutOfSync" {
		t.Errorf("sync status = %q after Argo CD compared again, want OutOfSync (the deny window blocks the automated sync)", sync)
	}
	if _, ok := app.Object["operation"]; ok {
		t.Errorf("Argo CD started an operation inside the deny window: %v", app.Object["operation"])
	}
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision"); rev == head {
		t.Errorf("Argo CD synced %s inside the deny window", head)
	}
	dep := argoDeployment(t, w)
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != w.image+":1.0.0" || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Errorf("the Deployment has image %s and %v replicas inside the deny window, want the first sync's 1.0.0 and 1", img, dep.Spec.Replicas)
	}
	// Argo CD records no condition for this: its only trace is a log line.
	if !strings.Contains(w.argo.Log("application-controller"), "Sync prevented by sync window") {
		t.Error(`Argo CD's application controller did not log "Sync prevented by sync window"`)
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	t.Logf("Argo CD's conditions inside the deny window: %v", conds)
	// crowsnest saw those comparisons and still held.
	if images := kustomizeImages(t, w.ns, w.app); len(images) != 0 {
		t.Errorf("crowsnest wrote %v inside the deny window", images)
	}
	for _, l := range d.lines() {
		if strings.Contains(l, `"msg":"images updated"`) {
			t.Errorf("crowsnest updated images inside the deny window: %s", l)
		}
	}

	setProjectWindows(t, w.ns, nil)
	app = w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"argocd"`)
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision"); rev != head {
		t.Errorf("Argo CD synced revision %s, want the commit %s", rev, head)
	}
	if dep := argoDeployment(t, w); dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("the Deployment has %v replicas after the window was removed, want the commit's 2", dep.Spec.Replicas)
	}
}

// An allow window with syncOnOpen opening while the Application already
// has a sync running, with the real Argo CD: the sync is the test's own
// and stays Running (its PreSync hook Job never completes: there is no
// kubelet and no Job controller), and crowsnest, seeing the window open,
// leaves it alone instead of replacing the operation.
func TestE2EArgoCDWindowOpeningLeavesARunningSyncAlone(t *testing.T) {
	w := newArgoWorldWith(t, "web-busy", func(*argoWorld) string {
		return "    crowsnest.dev/test: busy"
	}, argocdenv.Options{}, "{}")
	head := w.git.Seed(t, "deploy", "main", map[string]string{
		"web/kustomization.yaml": "resources: [deployment.yaml, hook.yaml]\n",
		"web/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "` + w.image + `:1.0.0"}]
`,
	}, "a PreSync hook")
	argoAppWait(t, w, "Argo CD to find the Application OutOfSync", func(app *unstructured.Unstructured) bool {
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		return sync == "OutOfSync"
	})
	patchApp(t, w.ns, w.app, map[string]any{"operation": map[string]any{
		"initiatedBy": map[string]any{"username": "e2e-test"},
		"sync":        map[string]any{"revision": head},
	}})
	running := argoAppWait(t, w, "the test's sync to run its PreSync hook", func(app *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		_, err := kubernetes.NewForConfigOrDie(env.Config).BatchV1().Jobs(w.dest).Get(t.Context(), "migrate", metav1.GetOptions{})
		return phase == "Running" && err == nil
	})
	startedAt, _, _ := unstructured.NestedString(running.Object, "status", "operationState", "startedAt")

	// The window opens at the start of every minute, for 30 seconds.
	cfg := filepath.Join(w.dir, "crowsnest.yaml")
	writeFile(t, cfg, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
syncWindows:
  - kind: allow
    schedule: "* * * * *"
    duration: 30s
    applications: [web-busy]
    syncOnOpen: true
`)
	d := w.daemon(t, "--config", cfg, "--log-level", "debug")
	waitLogWithin(t, d, 2*time.Minute, `"msg":"sync window opened"`)
	d.waitLog(t, `"msg":"sync already under way; not requesting another"`, `"app":"`+w.ns+`/`+w.app+`"`)

	app, err := appsIn(w.ns).Get(t.Context(), w.app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := unstructured.NestedMap(app.Object, "status", "operationState")
	phase, _, _ := unstructured.NestedString(state, "phase")
	by, _, _ := unstructured.NestedString(state, "operation", "initiatedBy", "username")
	started, _, _ := unstructured.NestedString(state, "startedAt")
	if phase != "Running" || by != "e2e-test" || started != startedAt {
		t.Errorf("operationState: phase %q, initiated by %q, started %s; want the test's sync (started %s) still Running", phase, by, started, startedAt)
	}
	if by, _, _ := unstructured.NestedString(app.Object, "operation", "initiatedBy", "username"); by != "e2e-test" {
		t.Errorf("the Application's operation was initiated by %q, want the test's", by)
	}
	for _, l := range d.lines() {
		if strings.Contains(l, `"msg":"sync requested"`) {
			t.Errorf("crowsnest requested a sync: %s", l)
		}
	}
}

// setProjectWindows replaces the default AppProject's spec.syncWindows.
func setProjectWindows(t *testing.T, ns string, windows []map[string]any) {
	t.Helper()
	// A nil list is JSON null: the merge patch removes the field.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"syncWindows": windows}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(watcher.AppProjectsResource).Namespace(ns).
		Patch(t.Context(), "default", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// patchApp merge-patches an Application.
func patchApp(t *testing.T, ns, name string, patch map[string]any) {
	t.Helper()
	data, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appsIn(ns).Patch(t.Context(), name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// webDeployment is the world's Deployment with image and replicas.
func webDeployment(image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "%s"}]
`, replicas, image)
}

// argoAppWait waits up to argoCDWait for the world's Application to
// satisfy cond and returns it.
func argoAppWait(t *testing.T, w *argoWorld, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(argoCDWait)
	for {
		app, err := appsIn(w.ns).Get(t.Context(), w.app, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cond(app) {
			return app
		}
		if time.Now().After(deadline) {
			status, _ := json.Marshal(app.Object["status"])
			t.Fatalf("timed out after %s waiting for %s; status: %s\nArgo CD's logs:\n%s", argoCDWait, what, status, w.argo.Logs())
		}
		time.Sleep(100 * time.Millisecond) // sleep-ok: poll interval
	}
}

// argoReconciledAgain waits until Argo CD has compared the Application n
// more times after app (status.reconciledAt advanced n times; it has a
// one-second grain, so a comparison within the same second as the last
// counts once) and returns the Application as it stands then.
func argoReconciledAgain(t *testing.T, w *argoWorld, app *unstructured.Unstructured, n int) *unstructured.Unstructured {
	t.Helper()
	last, _, _ := unstructured.NestedString(app.Object, "status", "reconciledAt")
	for i := range n {
		app = argoAppWait(t, w, fmt.Sprintf("Argo CD's comparison %d of %d after %s", i+1, n, last), func(a *unstructured.Unstructured) bool {
			at, _, _ := unstructured.NestedString(a.Object, "status", "reconciledAt")
			return at != "" && at != last
		})
		last, _, _ = unstructured.NestedString(app.Object, "status", "reconciledAt")
	}
	return app
}

// argoDeployment returns the Deployment Argo CD applied for the world.
func argoDeployment(t *testing.T, w *argoWorld) *appsv1.Deployment {
	t.Helper()
	dep, err := kubernetes.NewForConfigOrDie(env.Config).AppsV1().Deployments(w.dest).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// waitLogWithin is daemon.waitLog with a longer timeout, for a log line
// that waits on a clock (a sync window's minute boundary).
func waitLogWithin(t *testing.T, d *daemon, timeout time.Duration, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range d.lines() {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for a log line with %q", timeout, parts)
		}
		time.Sleep(50 * time.Millisecond) // sleep-ok: poll interval
	}
}
