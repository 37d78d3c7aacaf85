package main

import (
	"crypto/sha1" // fake Git revisions, not security
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// scenario is N Applications spread evenly over K image repositories with
// T semver tags each (1.0.0 .. 1.<T-1>.0); every Application runs its
// image at 1.0.0.
type scenario struct {
	Name string `json:"name"`
	N    int    `json:"n"`
	K    int    `json:"k"`
	T    int    `json:"t"`
	// PollInterval is crowsnest's registries.pollInterval in this run:
	// longer than the cold pass, so round 1 sees one poll.
	PollInterval time.Duration `json:"-"`
	// RoundTimeout bounds a round: at the default 50 requests/s towards
	// the kube-apiserver, S3's cold pass alone takes minutes.
	RoundTimeout time.Duration `json:"-"`
}

var scenarios = []scenario{
	{Name: "S1", N: 100, K: 10, T: 50, PollInterval: 10 * time.Second, RoundTimeout: 2 * time.Minute},
	{Name: "S2", N: 1000, K: 50, T: 200, PollInterval: 20 * time.Second, RoundTimeout: 5 * time.Minute},
	{Name: "S3", N: 10000, K: 500, T: 200, PollInterval: 60 * time.Second, RoundTimeout: 15 * time.Minute},
}

func findScenario(name string) (scenario, bool) {
	for _, s := range scenarios {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return scenario{}, false
}

func (s scenario) repo(i int) string { return fmt.Sprintf("bench/svc-%03d", i) }
func (s scenario) app(i int) string  { return fmt.Sprintf("app-%05d", i) }
func (s scenario) repoOf(i int) int  { return i % s.K }

// gitRepo is the k-th Git repository of the pull-request round, which
// holds the Applications whose image is repo(k); gitRepoURL its URL under
// base.
func (s scenario) gitRepo(k int) string                 { return fmt.Sprintf("deploy-%03d", k) }
func (s scenario) gitRepoURL(base string, k int) string { return base + "/" + s.gitRepo(k) + ".git" }

// tag is the i-th version of every repository.
func tag(i int) string { return fmt.Sprintf("1.%d.0", i) }

// appKind is how an Application is configured and what its round watches.
type appKind int

const (
	kindKube   appKind = iota // image-list annotation, Kubernetes write-back
	kindGit                   // image-list annotation, Git write-back to one monorepo
	kindNotify                // notification subscriptions only
	kindPR                    // image-list annotation, Git write-back in pull requests, a repository per image
)

// appParams are what an Application object needs besides its index.
type appParams struct {
	ns      string
	regHost string
	// repoURL is, in Git mode, the monorepo; in pull-request mode, where
	// the K repositories are (gitRepoURL).
	repoURL  string
	kind     appKind
	strategy string // "" is semver
}

// appObject returns the i-th Application and the status Argo CD would have
// written. Objects carry what a real Argo CD Application carries (kubectl's
// last-applied annotation, resources, history, operation state), so the
// informer's trimming is part of what is measured.
func (s scenario) appObject(p appParams, i int) (obj, status map[string]any) {
	name := s.app(i)
	image := p.regHost + "/" + s.repo(s.repoOf(i))
	annotations := map[string]any{}
	source := map[string]any{
		"repoURL": "https://git.example.com/platform/apps.git", "path": "apps/" + name, "targetRevision": "main",
		"kustomize": map[string]any{"namePrefix": "prod-"},
	}
	switch p.kind {
	case kindKube:
		annotations["argocd-image-updater.argoproj.io/image-list"] = image
	case kindGit:
		annotations["argocd-image-updater.argoproj.io/image-list"] = image
		annotations["argocd-image-updater.argoproj.io/write-back-method"] = "git"
		source["repoURL"] = p.repoURL
	case kindPR:
		annotations["argocd-image-updater.argoproj.io/image-list"] = image
		annotations["argocd-image-updater.argoproj.io/write-back-method"] = "git"
		annotations["argocd-image-updater.argoproj.io/write-back-target"] = "kustomization"
		annotations["crowsnest.dev/pull-request"] = "true"
		source["repoURL"] = s.gitRepoURL(p.repoURL, s.repoOf(i))
	case kindNotify:
		annotations["notifications.argoproj.io/subscribe.on-sync-running.hook"] = ""
		annotations["notifications.argoproj.io/subscribe.on-sync-succeeded.hook"] = ""
	}
	if p.strategy != "" && p.kind != kindNotify {
		annotations["argocd-image-updater.argoproj.io/update-strategy"] = p.strategy
	}
	spec := map[string]any{
		"project":     "default",
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
		"source":      source,
		"syncPolicy": map[string]any{
			"automated":   map[string]any{"prune": true, "selfHeal": true},
			"syncOptions": []any{"CreateNamespace=true", "ServerSideApply=true"},
		},
	}
	lastApplied, _ := json.Marshal(map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": p.ns}, "spec": spec})
	annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(lastApplied)
	obj = map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name": name, "namespace": p.ns, "annotations": annotations,
			"labels": map[string]any{"team": fmt.Sprintf("team-%02d", i%20), "tier": "backend"},
		},
		"spec": spec,
	}
	return obj, s.appStatus(i, image+":"+tag(0), "Succeeded", revision(name, 0))
}

// appStatus is a synced, healthy Application's status with the given
// operation phase at revision rev.
func (s scenario) appStatus(i int, image, phase, rev string) map[string]any {
	name := s.app(i)
	resources := make([]any, 0, 8)
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "Secret", "ServiceAccount", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress"} {
		resources = append(resources, map[string]any{
			"group": "", "version": "v1", "kind": k, "namespace": name, "name": "prod-" + name,
			"status": "Synced", "health": map[string]any{"status": "Healthy"},
		})
	}
	history := make([]any, 0, 3)
	for h := range 3 {
		history = append(history, map[string]any{
			"id": h, "revision": revision(name, -h-1), "deployedAt": "2026-01-01T00:00:00Z",
			"source": map[string]any{"repoURL": "https://git.example.com/platform/apps.git", "path": "apps/" + name},
		})
	}
	return map[string]any{
		"summary":      map[string]any{"images": []any{image}},
		"sync":         map[string]any{"status": "Synced", "revision": rev},
		"health":       map[string]any{"status": "Healthy"},
		"resources":    resources,
		"history":      history,
		"reconciledAt": "2026-01-01T00:00:00Z",
		"operationState": map[string]any{
			"phase": phase, "message": "successfully synced (all tasks run)",
			"startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:05Z",
			"operation":  map[string]any{"sync": map[string]any{"revision": rev}, "initiatedBy": map[string]any{"automated": true}},
			"syncResult": map[string]any{"revision": rev},
		},
	}
}

// revision is a fake Git commit of an Application's n-th sync.
func revision(app string, n int) string {
	h := sha1.Sum(fmt.Appendf(nil, "%s/%d", app, n)) // not security
	return hex.EncodeToString(h[:])
}
