package controller_test

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// planLog keeps the newest plan per Application (a dryrun.Recorder).
type planLog struct {
	mu    sync.Mutex
	plans map[string]imageupdate.WritePlan
}

func (p *planLog) RecordPlan(wp imageupdate.WritePlan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plans == nil {
		p.plans = map[string]imageupdate.WritePlan{}
	}
	p.plans[wp.App] = wp
}

func (p *planLog) get(key string) (imageupdate.WritePlan, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wp, ok := p.plans[key]
	return wp, ok
}

// Under DryRun each Application with changes gets a plan and nothing is
// written: a Kubernetes-mode plan carries the JSON patch pinned to the
// Application's resourceVersion; one a deny window holds names the window
// and carries no patch; a Git-mode one without a Git writer says why
// (with a Warning Event), as a write would fail.
func TestDryRunPlans(t *testing.T) {
	_, image := appRegistry(t)
	ns := env.CreateNamespace(t, "dryplan")
	rvs := map[string]string{}
	for name, method := range map[string]string{"free": "", "frozen": "", "gitless": "git"} {
		u := createApp(t, ns, name)
		ann := map[string]string{"argocd-image-updater.argoproj.io/image-list": image}
		if method != "" {
			ann["argocd-image-updater.argoproj.io/write-back-method"] = method
		}
		u.SetAnnotations(ann)
		if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, ns, name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
		cur, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs[name] = cur.GetResourceVersion()
	}
	set := windows.Set{compileWindow(t, "freeze", config.SyncWindow{Kind: "deny", Schedule: "* * * * *",
		Duration: config.Duration{Duration: 2 * time.Hour}, Applications: []string{"frozen"}})}
	plans, events := &planLog{}, &msgEvents{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	images := &controller.ImageReconciler{
		Registry: &registry.Client{},
		Writer:   &kube.Writer{Client: dynClient(t)},
		Windows:  fixedWindows(set),
		DryRun:   true,
		Plans:    plans,
		Events:   events,
		Log:      log,
	}
	runImageEngine(t, ns, images, log)
	testwait.For(t, "three plans", func() bool {
		_, a := plans.get(ns + "/free")
		_, b := plans.get(ns + "/frozen")
		_, c := plans.get(ns + "/gitless")
		return a && b && c
	})

	free, _ := plans.get(ns + "/free")
	wantPatch := `[{"op":"replace","path":"/metadata/resourceVersion","value":"` + rvs["free"] + `"},` +
		`{"op":"add","path":"/spec/source/kustomize","value":{"images":["` + image + `:1.1.0"]}}]`
	if free.Method != imageupdate.PlanMethodKubernetes || free.Kubernetes == nil || string(free.Kubernetes.Patch) != wantPatch ||
		free.Kubernetes.ResourceVersion != rvs["free"] || free.Error != "" {
		t.Errorf("free's plan: %+v (patch %s), want patch %s", free, patchOf(free), wantPatch)
	}
	frozen, _ := plans.get(ns + "/frozen")
	if !strings.Contains(frozen.HeldBy, "freeze") || frozen.Kubernetes != nil || len(frozen.Changes) != 1 || frozen.Changes[0].To != "1.1.0" {
		t.Errorf("frozen's plan: %+v, want held by freeze, no patch", frozen)
	}
	gitless, _ := plans.get(ns + "/gitless")
	if gitless.Method != imageupdate.PlanMethodGit || !strings.Contains(gitless.Error, "not wired") || gitless.Git != nil {
		t.Errorf("gitless's plan: %+v, want the missing writer named", gitless)
	}
	testwait.For(t, "a Warning Event on gitless", func() bool {
		return events.has(ns+"/gitless", controller.EventImageUpdateFailed, "dry run")
	})
	for name, rv := range rvs {
		cur, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.GetResourceVersion() != rv {
			t.Errorf("%s was written under DryRun: resourceVersion %s -> %s", name, rv, cur.GetResourceVersion())
		}
	}
}

func patchOf(wp imageupdate.WritePlan) string {
	if wp.Kubernetes == nil {
		return ""
	}
	return string(wp.Kubernetes.Patch)
}
