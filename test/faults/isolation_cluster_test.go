package faults

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// isolationClusterSeeds is the cluster property's size in `make test`;
// CROWSNEST_ISOLATION_SEEDS and CROWSNEST_ISOLATION_SEED apply as to the
// local one.
const isolationClusterSeeds = 2

var imageUpdaterGVR = testenv.ImageUpdatersGVR

// The isolation property on the real apiserver: team A's Applications in
// a fixed scenario (one written back to a monorepo both teams' AppProjects
// permit, with a Secret of its own namespace; one patched); team B gets
// randomly generated hostile Applications and annotations, ImageUpdaters,
// AppProjects in its own namespace and Secrets (seeded, reproducible).
// Everything A observes (its files in the shared repository on every
// branch, its Applications' sources, the Events on them, the notifications
// about them at the webhook both teams may subscribe to) must be the same
// with and without B, once crowsnest has settled: every Application
// reconciled, every ImageUpdater in force, nothing queued, nothing left
// to write to Git, no Event or notification waiting.
func TestIsolationPropertyCluster(t *testing.T) {
	hostileTest(t)
	start := time.Now()
	installImageUpdaterCRD(t)
	w := newIsolationWorld(t)
	first, n := isolationSeedRange(isolationClusterSeeds)
	failed := 0
	for seed := first; seed < first+uint64(n); seed++ {
		alone, _ := w.runCluster(t, seed, false)
		if !strings.Contains(alone.Files["main:team-a/web/kustomization.yaml"], "newTag: 1.1.0") ||
			!strings.Contains(alone.Sources["a-kube"], w.aAPI+":1.2.0") || len(alone.Notified) != 2 {
			t.Fatalf("seed %d: team A's updates did not land without team B: %+v", seed, alone)
		}
		with, tried := w.runCluster(t, seed, true)
		w.hostileTried += tried
		if diff := cmp.Diff(alone, with); diff != "" {
			failed++
			t.Errorf("seed %d (CROWSNEST_ISOLATION_SEED=%d repeats it): team A saw a difference with team B's %d hostile inputs (-alone +with):\n%s",
				seed, seed, tried, diff)
		}
	}
	v := newVerdict(t, "isolation property on the apiserver: one team's hostile input changes nothing another team observes",
		fmt.Sprintf("%d seeds from %d, %d hostile inputs by team B (Applications and annotations, ImageUpdaters, AppProjects, Secrets in its namespace), crowsnest run against the apiserver",
			n, first, w.hostileTried)).since(start)
	v.answer("team A's files, sources, Events and notifications the same with and without team B in %d of %d seeds", n-failed, n)
	v.count(&v.row.wrong, failed, "seeds where team A saw a difference: %d", failed)
	v.done()
}

// clusterObservation is everything team A sees of one run on the
// apiserver.
type clusterObservation struct {
	Files   map[string]string // branch:path -> content, A's files only
	Sources map[string]string // Application -> its spec.source, as JSON
	Events  []string          // "app type reason: message", normalized, each once
	// Notified are the notifications about A's Applications the shared
	// webhook acknowledged, "event app|image|to", each once.
	Notified []string
}

// runCluster makes a fresh copy of the scenario (three namespaces, a
// repository), adds team B's hostile input for seed when withB, runs
// crowsnest against the apiserver until it has settled and returns what
// team A observes, with the number of hostile inputs tried.
func (w *isolationWorld) runCluster(t *testing.T, seed uint64, withB bool) (clusterObservation, int) {
	t.Helper()
	w.runs++
	c := &clusterTeams{
		argo: env.CreateNamespace(t, "iso-argocd"), teamA: env.CreateNamespace(t, "iso-team-a"), teamB: env.CreateNamespace(t, "iso-team-b"),
		cs: kubernetes.NewForConfigOrDie(env.Config), dyn: dynamic.NewForConfigOrDie(env.Config), reg: w.reg, git: w.git,
	}
	repo := fmt.Sprintf("cmono-%d", w.runs)
	w.git.CreateRepo(t, repo)
	repoURL := w.git.URL + "/" + repo + ".git"
	aFiles := map[string]string{
		"team-a/web/kustomization.yaml":  "resources:\n- deployment.yaml\nimages:\n- name: " + w.aWeb + "\n  newTag: 1.0.0\n",
		"team-a/web/deployment.yaml":     "kind: Deployment\n",
		"team-a/base/kustomization.yaml": "resources: []\n",
	}
	seedFiles := map[string]string{"team-b/app/kustomization.yaml": "resources: []\n"}
	for p, content := range aFiles {
		seedFiles[p] = content
	}
	w.git.Seed(t, repo, "main", seedFiles, "initial")

	// The operator's projects, in Argo CD's namespace.
	c.project(t, c.argo, "team-a", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{c.teamA}})
	c.project(t, c.argo, "team-b", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{c.teamB}})
	// Team A: its Git credentials in its namespace, one Application
	// written back to Git with them, one patched.
	c.secret(t, c.teamA, "git-creds", nil, map[string]string{"url": w.git.URL, "username": "alice", "password": isoAliceToken})
	c.create(t, c.teamA, isoApp("a-web", "team-a", repoURL, "team-a/web", "main", map[string]string{
		annImageList: "web=" + w.aWeb + ":~1", annWriteBack: "git:secret:" + c.teamA + "/git-creds", annTarget: "kustomization",
		annSubscribeHook: "",
	}, w.aWeb+":1.0.0"))
	c.create(t, c.teamA, isoApp("a-kube", "team-a", repoURL, "team-a/base", "main", map[string]string{
		annImageList: "api=" + w.aAPI + ":~1", annSubscribeHook: "",
	}, w.aAPI+":1.0.0"))
	apps, updaters, tried := 2, 0, 0
	if withB {
		h := &hostile{r: rand.New(rand.NewPCG(seed, 0x151)), w: w, repoURL: repoURL, repo: repo, teamA: c.teamA, argo: c.argo}
		tried = h.generate(func(obj map[string]any) {
			// B subscribes to the shared webhook too, now and then.
			if h.r.IntN(2) == 0 {
				obj["metadata"].(map[string]any)["annotations"].(map[string]any)[annSubscribeHook] = h.pick("", "a-web", c.teamA+"/a-web")
			}
			apps++
			c.create(t, c.teamB, obj)
		})
		var n int
		updaters, n = h.clusterInputs(t, c)
		tried += n
	}

	hook := startSink(t)
	metrics := freeAddr(t)
	p := c.startWith(t, "notifications:\n  catalog: true\n  services:\n    hook:\n      webhook: {url: "+hook.URL()+"/hook, timeout: 2s}\n",
		"--metrics-bind-address", metrics)
	// Team A's landmarks first (with B they may never come: the
	// comparison then shows what is missing), then the settled state.
	testwait.Until(t.Context(), clusterRowTimeout, func() bool {
		content, _ := w.git.ReadFile(t, repo, "main", "team-a/web/kustomization.yaml")
		return strings.Contains(content, "newTag: 1.1.0") && slices.Contains(c.images(t, c.teamA, "a-kube"), w.aAPI+":1.2.0")
	})
	if !settled(t, p, "http://"+metrics+"/metrics", apps, updaters) {
		t.Errorf("seed %d (with B: %v): crowsnest did not settle within %s", seed, withB, clusterRowTimeout)
	}

	norm := func(s string) string {
		for from, to := range map[string]string{c.teamA: "<team-a>", c.teamB: "<team-b>", c.argo: "<argocd>"} {
			s = strings.ReplaceAll(s, from, to)
		}
		return normalizer(repo)(s)
	}
	obs := clusterObservation{Files: w.teamAFiles(t, repo, aFiles), Sources: map[string]string{}}
	for _, name := range []string{"a-web", "a-kube"} {
		u, err := c.dyn.Resource(watcher.ApplicationsResource).Namespace(c.teamA).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src, _, _ := unstructured.NestedMap(u.Object, "spec", "source")
		b, _ := json.Marshal(src)
		obs.Sources[name] = norm(string(b))
	}
	seen := map[string]bool{}
	for _, e := range c.events(t) {
		if ns, _, _ := strings.Cut(e.App, "/"); ns == c.teamA {
			line := norm(e.App + " " + e.Type + " " + e.Reason + ": " + e.Message)
			if !seen[line] {
				seen[line] = true
				obs.Events = append(obs.Events, line)
			}
		}
	}
	slices.Sort(obs.Events)
	hook.mu.Lock()
	for key := range hook.acked {
		if strings.Contains(key, " "+c.teamA+"/") {
			obs.Notified = append(obs.Notified, norm(key))
		}
	}
	hook.mu.Unlock()
	slices.Sort(obs.Notified)
	return obs, tried
}

// annSubscribeHook subscribes an Application to the scenario's webhook
// service on image updates (Argo CD Notifications' annotation).
const annSubscribeHook = "notifications.argoproj.io/subscribe.on-image-updated.hook"

// settled waits until crowsnest has reconciled every one of apps
// Applications, put updaters ImageUpdaters in force, and has nothing
// queued, nothing left to write to Git and no Event waiting, twice in a
// row with no reconcile between.
func settled(t *testing.T, p *proc, url string, apps, updaters int) bool {
	t.Helper()
	last := -1.0
	return testwait.Until(t.Context(), clusterRowTimeout, func() bool {
		if p.count(`"msg":"ImageUpdater in force"`) < updaters {
			return false
		}
		reconciles := metricSum(t, url, "crowsnest_reconcile_total")
		idle := reconciles >= float64(apps) &&
			metricSum(t, url, "crowsnest_workqueue_depth") == 0 &&
			metricSum(t, url, "crowsnest_workqueue_unfinished_work_seconds") == 0 &&
			metricSum(t, url, "crowsnest_git_writeback_pending") == 0 &&
			metricSum(t, url, "crowsnest_kube_events_pending") == 0 &&
			metricSum(t, url, "crowsnest_notify_outbox_depth") == 0 &&
			metricSum(t, url, "crowsnest_notify_pending_transitions") == 0
		if !idle {
			last = -1
			return false
		}
		done := reconciles == last
		last = reconciles
		return done
	})
}

// startWith runs crowsnest against the apiserver, watching the three
// namespaces, with more config (YAML at the top level) and extra flags.
func (c *clusterTeams) startWith(t *testing.T, config string, extra ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, cfg := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "crowsnest.yaml")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, cfg, "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nleaderElection: {leaseNamespace: "+c.argo+"}\n"+config)
	args := append([]string{"run", "--kubeconfig", kubeconfig, "--config", cfg,
		"--namespace", c.argo, "--namespace", c.teamA, "--namespace", c.teamB, "--argocd-namespace", c.argo, "--log-format", "json",
		"--health-probe-bind-address", "0", "--webhook-bind-address", "0", "--imageupdater-resources", "on",
		"--git-cache-dir", filepath.Join(dir, "git")}, extra...)
	return startCrowsnest(t, nil, args...)
}

// secret creates a Secret in ns.
func (c *clusterTeams) secret(t *testing.T, ns, name string, labels, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, StringData: data}
	if _, err := c.cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// clusterInputs makes team B's ImageUpdaters, AppProjects and Secrets in
// its own namespace; it returns how many ImageUpdaters it made and how
// many hostile inputs they all hold.
func (h *hostile) clusterInputs(t *testing.T, c *clusterTeams) (updaters, tried int) {
	t.Helper()
	aSecret := c.teamA + "/git-creds"
	for i := range 1 + h.r.IntN(3) {
		var refs []any
		// namePattern is the list's key: each at most once.
		patterns := []string{"*", "a-*", "a-web", "a-kube", "b-*"}
		h.r.Shuffle(len(patterns), func(i, j int) { patterns[i], patterns[j] = patterns[j], patterns[i] })
		for _, pattern := range patterns[:1+h.r.IntN(3)] {
			tried++
			if h.r.IntN(4) == 0 {
				refs = append(refs, map[string]any{"namePattern": pattern, "useAnnotations": true})
				continue
			}
			img := map[string]any{"alias": "web", "imageName": h.pick(h.w.aWeb+":*", h.w.aWeb+":>=0, <9", h.w.bImage, h.w.aAPI)}
			settings := map[string]any{}
			switch h.r.IntN(4) {
			case 0:
				settings["pullSecret"] = h.pick("pullsecret:"+aSecret, "secret:"+aSecret+"#password", "env:HOME", "ext:/bin/cat")
			case 1:
				img["manifestTargets"] = map[string]any{"kustomize": map[string]any{"name": h.w.aWeb}}
			case 2:
				settings["updateStrategy"] = h.pick("newest-build", "nope", "digest")
			}
			if len(settings) > 0 {
				img["commonUpdateSettings"] = settings
			}
			ref := map[string]any{"namePattern": pattern, "images": []any{img}}
			if h.r.IntN(2) == 0 {
				ref["writeBackConfig"] = map[string]any{
					"method": h.pick("git:secret:"+aSecret, "git:secret:git-creds", "git:repocreds", "git"),
					"gitConfig": map[string]any{"repository": h.repoURL, "branch": h.pick("main", "main:b-{{.AppName}}", "a..b"),
						"writeBackTarget": h.pick("kustomization:/team-a/web", "kustomization", "helmvalues:/team-a/web/kustomization.yaml")},
				}
			}
			refs = append(refs, ref)
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": imageUpdaterGVR.GroupVersion().String(), "kind": "ImageUpdater",
			"metadata": map[string]any{"name": fmt.Sprintf("b-iu-%d", i), "namespace": c.teamB},
			"spec":     map[string]any{"applicationRefs": refs},
		}}
		if _, err := c.dyn.Resource(imageUpdaterGVR).Namespace(c.teamB).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating team B's ImageUpdater (the real CRD validates it): %v", err)
		}
		updaters++
	}
	// Look-alike AppProjects in its own namespace: a project of team A's
	// name with a deny window always open, a default whose window does not
	// compile, its own project claiming team A's namespace.
	always := map[string]any{"kind": "deny", "schedule": "* * * * *", "duration": "1h", "applications": []any{"*"}, "namespaces": []any{"*"}}
	broken := map[string]any{"kind": "deny", "schedule": "0 0 * * *", "duration": "1d", "applications": []any{"*"}}
	for _, name := range []string{"team-a", "default", "team-b"} {
		if h.r.IntN(2) == 0 {
			continue
		}
		tried++
		c.project(t, c.teamB, name, map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{c.teamA, c.teamB},
			"syncWindows": []any{h.pickWindow(always, broken)}})
	}
	// Secrets: an Argo CD repository Secret for the monorepo with its own
	// (wrong) credentials, scoped or not to team A's project; a repo-creds
	// Secret for the whole host; a Secret named as team A's.
	repoLabel := map[string]string{"argocd.argoproj.io/secret-type": "repository"}
	credsLabel := map[string]string{"argocd.argoproj.io/secret-type": "repo-creds"}
	if h.r.IntN(2) == 0 {
		tried++
		data := map[string]string{"url": h.repoURL, "username": "mallory", "password": "n0pe"}
		if h.r.IntN(2) == 0 {
			data["project"] = "team-a"
		}
		c.secret(t, c.teamB, "b-repo", repoLabel, data)
	}
	if h.r.IntN(2) == 0 {
		tried++
		c.secret(t, c.teamB, "b-creds", credsLabel, map[string]string{"url": h.w.git.URL, "username": "alice", "password": "wrong"})
	}
	if h.r.IntN(2) == 0 {
		tried++
		c.secret(t, c.teamB, "git-creds", nil, map[string]string{"url": h.w.git.URL, "username": "mallory", "password": "n0pe"})
	}
	return updaters, tried
}

func (h *hostile) pickWindow(ws ...map[string]any) map[string]any { return ws[h.r.IntN(len(ws))] }

// installImageUpdaterCRD installs argocd-image-updater v1.3.0's own CRD
// and waits until the apiserver serves it. It stays installed: the
// scenarios run in parallel, and a crowsnest of another one that found it
// (--imageupdater-resources=auto) must not see it vanish; none of theirs
// makes an ImageUpdater.
func installImageUpdaterCRD(t *testing.T) {
	t.Helper()
	if err := env.InstallImageUpdaterCRD(t.Context()); err != nil {
		t.Fatal(err)
	}
}
