package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/windowscmd"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

const windowsApps = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd, labels: {freeze: "yes"}}
spec:
  project: payments
  destination: {server: https://kubernetes.default.svc, namespace: shop}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: blog, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: blog}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments, namespace: argocd}
spec:
  syncWindows:
    - {kind: deny, schedule: "0 18 * * 5", duration: 60h, timeZone: Europe/Berlin, applications: ["*"], manualSync: true}
    - {kind: allow, schedule: "0 0 30 2 *", duration: 1h, applications: ["*"]}
`

const windowsConfig = `apiVersion: crowsnest.dev/v1alpha1
kind: Config
syncWindows:
  - kind: allow
    schedule: "0 22 * * *"
    duration: 2h
    timeZone: America/New_York
    namespaces: ["blog"]
    description: nightly
`

func TestWindowsCommandE2E(t *testing.T) {
	dir := t.TempDir()
	apps := filepath.Join(dir, "apps")
	if err := os.Mkdir(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apps, "apps.yaml"), []byte(windowsApps), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "crowsnest.yaml")
	if err := os.WriteFile(cfg, []byte(windowsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	runExit := func(args ...string) (windowscmd.Report, error) {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), binary, append([]string{"windows", "--config", cfg, "--apps-dir", apps, "-o", "json"}, args...)...).Output()
		var rep windowscmd.Report
		if jerr := json.Unmarshal(out, &rep); jerr != nil {
			t.Fatalf("output is not JSON: %v (exit: %v)\n%s", jerr, err, out)
		}
		return rep, err
	}
	run := func(args ...string) windowscmd.Report {
		t.Helper()
		rep, err := runExit(args...)
		if err != nil {
			t.Fatalf("crowsnest windows %v: %v", args, err)
		}
		return rep
	}
	decision := func(rep windowscmd.Report, app string) windowscmd.AppDecision {
		t.Helper()
		for _, a := range rep.Apps {
			if a.App == app {
				return a
			}
		}
		t.Fatalf("no decision for %s in %+v", app, rep.Apps)
		return windowscmd.AppDecision{}
	}

	// The project's impossible window (Feb 30) is refused: the command
	// names it, exits non-zero and gives no decision for the project's
	// Applications; the others are still decided and the valid windows
	// listed.
	rep, err := runExit("--at", "2026-11-27T19:00:00+01:00")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(exit.Stderr), "spec.syncWindows[1]") {
		t.Errorf("exit = %v, want non-zero naming spec.syncWindows[1]", err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "spec.syncWindows[1]") {
		t.Errorf("problems = %q, want the impossible Feb 30 window named", rep.Problems)
	}
	if len(rep.Windows) != 2 {
		t.Errorf("windows = %+v, want the config's and the project's valid one", rep.Windows)
	}
	if len(rep.Undecided) != 1 || rep.Undecided[0] != "argocd/shop" || len(rep.Apps) != 1 {
		t.Errorf("undecided = %q, decisions = %+v; want no decision for argocd/shop only", rep.Undecided, rep.Apps)
	}
	// Friday 19:00 in Berlin, the project's window fixed: the weekend
	// freeze holds shop; blog is outside its nightly allow window (22:00
	// New York), so it is denied.
	fixed := strings.Replace(windowsApps, `    - {kind: allow, schedule: "0 0 30 2 *", duration: 1h, applications: ["*"]}`+"\n", "", 1)
	if err := os.WriteFile(filepath.Join(apps, "apps.yaml"), []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = run("--at", "2026-11-27T19:00:00+01:00")
	shop := decision(rep, "argocd/shop")
	if shop.SyncAllowed || !shop.UpdatesHeld || shop.Reason != "DenyWindowActive" {
		t.Errorf("shop on Friday evening = %+v, want denied and held", shop)
	}
	if !shop.ManualAllowed {
		t.Errorf("manual sync of shop = %+v, want allowed (manualSync)", shop)
	}
	if blog := decision(rep, "argocd/blog"); blog.ManualAllowed {
		t.Errorf("manual sync of blog outside its allow window = %+v, want denied (no manualSync)", blog)
	}
	blog := decision(rep, "argocd/blog")
	if blog.SyncAllowed {
		t.Errorf("blog outside its allow window = %+v, want denied", blog)
	}

	// Wednesday 23:00 in New York: blog's window is open; shop is free.
	rep = run("--at", "2026-11-25T23:00:00-05:00")
	if blog := decision(rep, "argocd/blog"); !blog.SyncAllowed || blog.UpdatesHeld {
		t.Errorf("blog inside its allow window = %+v, want allowed", blog)
	}
	if shop := decision(rep, "argocd/shop"); !shop.SyncAllowed || shop.UpdatesHeld {
		t.Errorf("shop midweek = %+v, want allowed", shop)
	}

	// --app lists only that Application's windows, with next boundaries.
	rep = run("--app", "shop", "--at", "2026-11-25T12:00:00Z")
	if len(rep.Windows) != 1 || rep.Windows[0].NextOpen == nil || rep.Windows[0].NextOpen.UTC().Format("2006-01-02T15:04") != "2026-11-27T17:00" {
		t.Errorf("shop's windows = %+v, want the freeze opening Friday 18:00 Berlin (17:00 UTC)", rep.Windows)
	}
}

// The same decisions from the cluster: Applications and AppProjects are
// read from the apiserver.
func TestWindowsCommandClusterE2E(t *testing.T) {
	kubeconfig, ns, _ := e2eCluster(t, "e2e-win")
	var proj map[string]any
	if err := yaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments}
spec:
  syncWindows:
    - {kind: deny, schedule: "0 18 * * 5", duration: 60h, timeZone: Europe/Berlin, applications: ["*"], manualSync: true}
`), &proj); err != nil {
		t.Fatal(err)
	}
	pu := &unstructured.Unstructured{Object: proj}
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(watcher.AppProjectsResource).Namespace(ns).
		Create(t.Context(), pu, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop}
spec:
  project: payments
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop.git, path: deploy}
`)
	out, err := exec.CommandContext(t.Context(), binary, "windows", "--cluster", "--kubeconfig", kubeconfig, "-n", ns, "--argocd-namespace", ns,
		"--app", ns+"/shop", "--at", "2026-11-27T19:00:00+01:00", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep windowscmd.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Apps) != 1 || rep.Apps[0].SyncAllowed || !rep.Apps[0].ManualAllowed || !rep.Apps[0].UpdatesHeld {
		t.Errorf("decision = %+v, want automated denied, manual allowed, updates held", rep.Apps)
	}
	if len(rep.Windows) != 1 || !rep.Windows[0].Active {
		t.Errorf("windows = %+v, want the project's active freeze", rep.Windows)
	}
}
