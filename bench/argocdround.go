package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// Round 6 runs a real Argo CD (internal/argocdenv: application controller,
// repo server, Redis and the Deployment controllers on the scenario's
// apiserver) and measures what a user waits for: from the registry
// webhook announcing a pushed tag until the Deployment Argo CD applies
// carries it. Pushes go one at a time, each waiting until deployed, over
// a handful of Applications per mode:
//
//   - Kubernetes mode: crowsnest patches the Application; Argo CD's
//     automated sync applies it.
//   - Git mode: crowsnest commits .argocd-source-<app>.yaml and sets
//     Argo CD's refresh annotation (git.refresh: normal, the default).
//   - Git mode with git.refresh: none, for comparison: Argo CD notices the
//     commit at its next resync only (argocdResync), so this variant is
//     bounded to a few pushes.
//
// Its results go to argocd.json and argocd.md beside results.json.

// argocdOptions are round 6's flags.
type argocdOptions struct {
	apps, pushes, noRefreshPushes int
	resync                        time.Duration
	timeout                       time.Duration
}

var argoOpts argocdOptions

func (a *argocdOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&a.apps, "argocd-apps", 4, "round 6: Applications per mode")
	fs.IntVar(&a.pushes, "argocd-pushes", 50, "round 6: pushes measured in Kubernetes mode and in Git mode with refresh")
	fs.IntVar(&a.noRefreshPushes, "argocd-norefresh-pushes", 1, "round 6: pushes measured in Git mode with git.refresh: none (each may wait two of Argo CD's resyncs)")
	fs.DurationVar(&a.resync, "argocd-resync", 3*time.Minute, "round 6: Argo CD's --app-resync (its default is 3m)")
	fs.DurationVar(&a.timeout, "argocd-push-timeout", 30*time.Second, "round 6: give up on a push not deployed after this long (Git mode without refresh: after twice the resync plus this)")
}

// argoTarget is the goal for the p99 of push to deployed.
const argoTarget = 5 * time.Second

// argoModeResult is one mode's numbers.
type argoModeResult struct {
	Mode     string `json:"mode"`
	Pushes   int    `json:"pushes"`
	Deployed int    `json:"deployed"`
	// From the webhook to the Deployment carrying the tag.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// From the webhook to crowsnest's write (the Application patched, or
	// the commit on main), and from that write to the Deployment.
	WriteP50Ms float64 `json:"writeP50Ms"`
	WriteP99Ms float64 `json:"writeP99Ms"`
	// Git mode: from the commit on main to Argo CD's refresh annotation
	// on the Application (crowsnest's push answer, report and refresh
	// patch); part of the "Argo CD" time.
	RefreshP50Ms float64  `json:"refreshP50Ms,omitempty"`
	RefreshP99Ms float64  `json:"refreshP99Ms,omitempty"`
	ArgoP50Ms    float64  `json:"argoP50Ms"`
	ArgoP99Ms    float64  `json:"argoP99Ms"`
	TargetP99Ms  float64  `json:"targetP99Ms,omitempty"`
	Met          *bool    `json:"met,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	SamplesMs    []int64  `json:"samplesMs"`
}

type argoReport struct {
	Started  time.Time        `json:"started"`
	Machine  string           `json:"machine"`
	Commit   string           `json:"commit"`
	ArgoCD   string           `json:"argocd"`
	Command  string           `json:"command"`
	Settings []string         `json:"settings"`
	Modes    []argoModeResult `json:"modes"`
	Failures []string         `json:"failures,omitempty"`
}

// argoWorld is round 6's Argo CD, Git repository and Applications.
type argoWorld struct {
	e       *env
	ns      string // Argo CD's, crowsnest's and the Applications'
	dest    string // where Argo CD applies the Deployments
	argo    *argocdenv.ArgoCD
	gs      *gitServer
	repo    string
	pushers map[string]*pusher // by Application
	deps    *deployWatch
	apps    *tracker
	next    int // the next tag's index; every push has a tag of its own
}

const argoRepo = "argo-deploy"

func (e *env) argocdRound(ctx context.Context) error {
	o := argoOpts
	rep := &argoReport{Started: time.Now(), Machine: machine(), ArgoCD: argocdenv.Version(),
		Command: "go run ./bench -scenarios " + e.s.Name + " -rounds 6" + fmt.Sprintf(" -argocd-apps %d -argocd-pushes %d -argocd-norefresh-pushes %d -argocd-resync %s", o.apps, o.pushes, o.noRefreshPushes, o.resync)}
	if len(e.opts.crowsnestArgs) > 0 {
		rep.Command += fmt.Sprintf(" -crowsnest-args %q", strings.Join(e.opts.crowsnestArgs, " "))
	}
	if root, err := testenv.ModuleRoot(); err == nil {
		rep.Commit = gitCommit(root)
	}
	err := e.runArgoRound(ctx, o, rep)
	if err != nil {
		rep.Failures = append(rep.Failures, err.Error())
	}
	if werr := rep.write(e.opts.out); werr != nil {
		return werr
	}
	fmt.Fprint(os.Stderr, rep.markdown())
	return err
}

func (e *env) runArgoRound(ctx context.Context, o argocdOptions, rep *argoReport) error {
	ctx, cancel := context.WithCancel(ctx) // stops the watches
	defer cancel()
	w := &argoWorld{e: e, ns: "bench-argocd", dest: "bench-argocd-dest", repo: argoRepo, pushers: map[string]*pusher{}, next: 1}
	dir := filepath.Join(e.dir, "argocd")
	if err := os.MkdirAll(filepath.Join(dir, "repos"), 0o755); err != nil {
		return err
	}
	var err error
	if w.gs, err = startGitServer(filepath.Join(dir, "repos")); err != nil {
		return err
	}
	defer w.gs.close()
	kube := names("kube", o.apps)
	git := names("git", o.apps)
	all := append(slices.Clone(kube), git...)
	files := map[string]string{}
	for _, app := range all {
		p, err := e.reg.pusher(ctx, "bench/argo-"+app)
		if err != nil {
			return err
		}
		if err := p.push(ctx, tag(0), 0); err != nil {
			return err
		}
		w.pushers[app] = p
		files["apps/"+app+"/kustomization.yaml"] = "resources: [deployment.yaml]\n"
		files["apps/"+app+"/deployment.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: web, image: "%[2]s:%[3]s"}]
`, app, w.image(app), tag(0))
	}
	if err := w.gs.createRepo(w.repo, files); err != nil {
		return err
	}
	if err := e.cluster.createNamespace(ctx, w.dest); err != nil {
		return err
	}
	e.opts.logf("%s: round 6: starting Argo CD %s (--app-resync %s)", e.s.Name, argocdenv.Version(), o.resync)
	if w.argo, err = argocdenv.Start(ctx, e.cluster.env, dir, argocdenv.Options{
		Namespace: w.ns, AppResync: o.resync,
		Repositories: []argocdenv.Repository{{URL: w.gs.repoURL(w.repo), Username: gitUser, Password: gitPassword}},
	}); err != nil {
		return fmt.Errorf("starting Argo CD: %w", err)
	}
	defer w.argo.Stop()
	rep.Settings = append(rep.Settings,
		fmt.Sprintf("Argo CD %s: application controller --app-resync %s --app-resync-jitter 0 --status-processors 4 --operation-processors 2, repo server, Redis; kube-controller-manager (Deployment, ReplicaSet controllers)", argocdenv.Version(), o.resync),
		fmt.Sprintf("%d Applications per mode (kustomize, automated sync), one Git repository over git http-backend, each push a new semver tag of one Application's image, sent as a distribution registry webhook", o.apps),
		"crowsnest: defaults (Git group commit: no batch window), registries.pollInterval 10m so only the webhook finds tags")
	if err := w.createProject(ctx); err != nil {
		return err
	}
	if w.deps, err = watchDeployments(ctx, e, w.dest); err != nil {
		return err
	}
	if w.apps, err = e.cluster.track(ctx, w.ns); err != nil {
		return err
	}
	for _, app := range all {
		if err := w.createApp(ctx, app, strings.HasPrefix(app, "git")); err != nil {
			return err
		}
	}
	start := time.Now()
	for _, app := range all {
		if _, err := w.deps.wait(ctx, app, w.image(app)+":"+tag(0), 3*time.Minute); err != nil {
			return fmt.Errorf("first sync by Argo CD: %w\n%s", err, w.argo.Logs())
		}
	}
	e.opts.logf("%s: round 6: Argo CD synced %d Applications in %s", e.s.Name, len(all), time.Since(start).Round(time.Millisecond))

	// Kubernetes mode and Git mode with refresh share one crowsnest.
	d, err := w.daemon(ctx, filepath.Join(dir, "refresh"), "")
	if err != nil {
		return err
	}
	rk := w.measure(ctx, d, "Kubernetes mode", kube, o.pushes, o.timeout, false)
	rep.Modes = append(rep.Modes, rk)
	rg := w.measure(ctx, d, "Git mode, git.refresh: normal (default)", git, o.pushes, o.timeout, true)
	rep.Modes = append(rep.Modes, rg)
	d.stop()
	if o.noRefreshPushes > 0 {
		d, err := w.daemon(ctx, filepath.Join(dir, "norefresh"), "git:\n  refresh: none\n")
		if err != nil {
			return err
		}
		// Argo CD's resync ticks come every --app-resync, and a tick
		// compares an Application only if its last comparison is older
		// than --app-resync: one compared just before a tick (after its
		// last sync) waits for the next. A commit can wait two resyncs.
		rn := w.measure(ctx, d, "Git mode, git.refresh: none", git, o.noRefreshPushes, 2*o.resync+o.timeout, true)
		rn.Notes = append(rn.Notes, fmt.Sprintf("no target: Argo CD finds the commit at a resync tick (every --app-resync %s) that finds the Application's last comparison older than %s, so up to about twice %s (a tick just after the previous sync skips it); the repo server's cached resolution of the branch (--revision-cache-expiration, 3m by default) can add to that", o.resync, o.resync, o.resync))
		rep.Modes = append(rep.Modes, rn)
		d.stop()
	}
	for i := range min(2, len(rep.Modes)) {
		if m := &rep.Modes[i]; m.Deployed < m.Pushes {
			return fmt.Errorf("%s: %d of %d pushes deployed", m.Mode, m.Deployed, m.Pushes)
		}
	}
	return nil
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

func (w *argoWorld) image(app string) string { return w.e.reg.host + "/bench/argo-" + app }

func (w *argoWorld) createProject(ctx context.Context) error {
	proj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": w.ns},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	_, err := w.e.cluster.dyn.Resource(testenv.AppProjectsGVR).Namespace(w.ns).Create(ctx, proj, metav1.CreateOptions{})
	return err
}

func (w *argoWorld) createApp(ctx context.Context, app string, git bool) error {
	ann := map[string]any{"argocd-image-updater.argoproj.io/image-list": "web=" + w.image(app) + ":^1"}
	if git {
		ann["argocd-image-updater.argoproj.io/write-back-method"] = "git"
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": app, "namespace": w.ns, "annotations": ann},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": w.gs.repoURL(w.repo), "path": "apps/" + app, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": w.dest},
			"syncPolicy":  map[string]any{"automated": map[string]any{}},
		},
	}}
	_, err := w.e.cluster.apps(w.ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// daemon starts crowsnest with the benchmark registry, the webhook and
// extra config, and waits until it is ready.
func (w *argoWorld) daemon(ctx context.Context, dir, extra string) (*daemon, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
registries:
  pollInterval: 10m
  list:
    - prefix: %s
      caFile: %s
  webhook:
    sources:
      - type: distribution
        secretEnv: %s
%s`, w.e.reg.host, w.e.reg.caFile, webhookSecretEnv, extra)
	path := filepath.Join(dir, "crowsnest.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	d, err := w.e.startDaemon(dir, w.ns, path)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := d.waitReady(rctx); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// measure pushes n tags, one at a time over apps in turn, each announced
// by a webhook, and waits until Argo CD's Deployment carries it.
func (w *argoWorld) measure(ctx context.Context, d *daemon, mode string, apps []string, n int, timeout time.Duration, git bool) argoModeResult {
	r := argoModeResult{Mode: mode, Pushes: n}
	if !strings.Contains(mode, "none") {
		r.TargetP99Ms = float64(argoTarget.Milliseconds())
	}
	w.e.opts.logf("%s: round 6: %s, %d pushes", w.e.s.Name, mode, n)
	var total, write, argo, refreshed []time.Duration
	refPath := filepath.Join(w.gs.repoDir(w.repo), "refs", "heads", "main")
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		app := apps[i%len(apps)]
		t := w.next
		w.next++
		ref := w.image(app) + ":" + tag(t)
		if err := w.pushers[app].push(ctx, tag(t), t); err != nil {
			r.Notes = append(r.Notes, "push: "+err.Error())
			break
		}
		headBefore, _ := os.ReadFile(refPath)
		var written time.Time
		stopRef := make(chan struct{})
		refDone := make(chan struct{})
		go func() { // the commit lands on main: crowsnest's write in Git mode
			defer close(refDone)
			if !git {
				return
			}
			for {
				if b, _ := os.ReadFile(refPath); len(b) > 0 && !bytes.Equal(b, headBefore) {
					written = time.Now()
					return
				}
				select {
				case <-stopRef:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		sent := time.Now()
		if err := w.webhook(ctx, d, "bench/argo-"+app, tag(t)); err != nil {
			close(stopRef)
			<-refDone
			r.Notes = append(r.Notes, err.Error())
			break
		}
		at, err := w.deps.wait(ctx, app, ref, timeout)
		close(stopRef)
		<-refDone
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("push %d (%s): %v%s", i+1, ref, err, exitNote(d)))
			if !strings.Contains(mode, "none") {
				break // a broken loop: do not wait out every push
			}
			continue
		}
		if !git {
			written = w.apps.seen(app, tag(t))
		}
		r.Deployed++
		total = append(total, at.Sub(sent))
		if !written.IsZero() {
			write = append(write, written.Sub(sent))
			argo = append(argo, at.Sub(written))
			if rat, ok := w.apps.refreshedSince(app, sent); git && ok {
				refreshed = append(refreshed, rat.Sub(written))
			}
		}
	}
	for _, l := range total {
		r.SamplesMs = append(r.SamplesMs, l.Milliseconds())
	}
	r.P50Ms, r.P99Ms, r.MaxMs = argoMs(total, 50), argoMs(total, 99), argoMs(total, 100)
	r.WriteP50Ms, r.WriteP99Ms = argoMs(write, 50), argoMs(write, 99)
	r.ArgoP50Ms, r.ArgoP99Ms = argoMs(argo, 50), argoMs(argo, 99)
	r.RefreshP50Ms, r.RefreshP99Ms = argoMs(refreshed, 50), argoMs(refreshed, 99)
	if r.TargetP99Ms > 0 && r.Pushes > 0 {
		met := r.Deployed == r.Pushes && r.P99Ms <= r.TargetP99Ms
		r.Met = &met
	}
	w.e.opts.logf("%s: round 6: %s: %d/%d deployed, p50 %.0f ms, p99 %.0f ms (crowsnest write p50 %.0f ms, Argo CD after it p50 %.0f ms, of which commit to refresh asked p50 %.0f ms)",
		w.e.s.Name, mode, r.Deployed, r.Pushes, r.P50Ms, r.P99Ms, r.WriteP50Ms, r.ArgoP50Ms, r.RefreshP50Ms)
	return r
}

// webhook posts one distribution push event.
func (w *argoWorld) webhook(ctx context.Context, d *daemon, repo, tagName string) error {
	url := "http://" + d.webhookAddr + "/webhooks/registry/distribution"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(distributionEnvelope(w.e.reg.host, tagName, []string{repo})))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
	req.Header.Set("Authorization", "Bearer "+webhookSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("registry webhook: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("registry webhook: %s", resp.Status)
	}
	return nil
}

// seen is when app first carried tag in spec.source.kustomize.images
// (zero if it did not).
func (t *tracker) seen(app, tag string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seenAt[tag][app]
}

// deployWatch records when each Deployment of a namespace first carried
// each image (its first container's).
type deployWatch struct {
	mu   sync.Mutex
	at   map[string]time.Time // name + " " + image -> first seen
	cond chan struct{}
}

func watchDeployments(ctx context.Context, e *env, ns string) (*deployWatch, error) {
	dw := &deployWatch{at: map[string]time.Time{}, cond: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(e.cluster.core, 0, informers.WithNamespace(ns))
	inf := f.Apps().V1().Deployments().Informer()
	record := func(obj any) {
		dep, ok := obj.(*appsv1.Deployment)
		if !ok || len(dep.Spec.Template.Spec.Containers) == 0 {
			return
		}
		now := time.Now()
		key := dep.Name + " " + dep.Spec.Template.Spec.Containers[0].Image
		dw.mu.Lock()
		if _, ok := dw.at[key]; !ok {
			dw.at[key] = now
			close(dw.cond)
			dw.cond = make(chan struct{})
		}
		dw.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	for _, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("watching Deployments in %s: cache did not sync", ns)
		}
	}
	return dw, nil
}

// wait returns when Deployment name first carried image, waiting up to
// timeout.
func (dw *deployWatch) wait(ctx context.Context, name, image string, timeout time.Duration) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		dw.mu.Lock()
		at, ok := dw.at[name+" "+image]
		ch := dw.cond
		dw.mu.Unlock()
		if ok {
			return at, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("the Deployment %s does not carry %s after %s", name, image, timeout)
		case <-ch:
		}
	}
}

func argoMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	i = min(max(i, 0), len(s)-1)
	return float64(s[i].Microseconds()) / 1000
}

func (rep *argoReport) write(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "argocd.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "argocd.md"), []byte(rep.markdown()), 0o644)
}

func (rep *argoReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Push to deployed with a real Argo CD (bench round 6)\n\n")
	fmt.Fprintf(&b, "Generated by `%s` on %s, %s, commit %s.\n\n", rep.Command, rep.Started.UTC().Format(time.RFC3339), rep.Machine, rep.Commit)
	for _, s := range rep.Settings {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\nLatency is from sending the registry webhook (loopback) until the harness's watch sees the Deployment Argo CD applied carry the new image; " +
		"\"write\" is until crowsnest's write (the Application patched, or the commit on main), \"Argo CD\" from that write to the Deployment; in Git mode \"refresh asked\", part of it, from the commit on main until the Application carries Argo CD's refresh annotation.\n\n")
	b.WriteString("| mode | deployed | p50 | p99 | max | write p50 / p99 | Argo CD p50 / p99 | refresh asked p50 / p99 | target p99 |\n|---|---|---|---|---|---|---|---|---|\n")
	for i := range rep.Modes {
		m := &rep.Modes[i]
		target := "-"
		if m.Met != nil {
			target = fmt.Sprintf("<= %.0f ms: %s", m.TargetP99Ms, map[bool]string{true: "met", false: "MISSED"}[*m.Met])
		}
		refresh := "-"
		if m.RefreshP50Ms > 0 {
			refresh = fmt.Sprintf("%.0f / %.0f ms", m.RefreshP50Ms, m.RefreshP99Ms)
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %.0f ms | %.0f ms | %.0f ms | %.0f / %.0f ms | %.0f / %.0f ms | %s | %s |\n",
			m.Mode, m.Deployed, m.Pushes, m.P50Ms, m.P99Ms, m.MaxMs, m.WriteP50Ms, m.WriteP99Ms, m.ArgoP50Ms, m.ArgoP99Ms, refresh, target)
	}
	for i := range rep.Modes {
		m := &rep.Modes[i]
		for _, n := range m.Notes {
			fmt.Fprintf(&b, "\n- %s: %s", m.Mode, n)
		}
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(&b, "\n- FAILED: %s", f)
	}
	b.WriteString("\n")
	return b.String()
}
