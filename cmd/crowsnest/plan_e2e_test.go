package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// runPlan runs `crowsnest run --dry-run --once` with args and returns its
// stdout (the plans) and stderr (the log), failing on a non-zero exit.
func runPlan(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"run", "--dry-run", "--once",
		"--log-format", "json", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0"}, withArgoNamespace(args)...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("run --dry-run --once: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// parsePlans reads --plan-format json: one plan per line.
func parsePlans(t *testing.T, out string) []imageupdate.WritePlan {
	t.Helper()
	var plans []imageupdate.WritePlan
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var p imageupdate.WritePlan
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("plan line %q: %v", sc.Text(), err)
		}
		plans = append(plans, p)
	}
	return plans
}

// gitApply checks out base of the test server's repository into a fresh
// folder, applies patch there with the git CLI and returns the folder.
func gitApply(t *testing.T, srv *testgit.Server, repo, base, patch string) string {
	t.Helper()
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "plan.diff")
	writeFile(t, file, patch)
	for _, args := range [][]string{
		{"clone", "--quiet", "--no-checkout", filepath.Join(srv.Root, repo+".git"), work},
		{"-C", work, "checkout", "--quiet", base},
		{"-C", work, "apply", file},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = testgit.Env(t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s\npatch:\n%s", strings.Join(args, " "), err, out, patch)
		}
	}
	return work
}

// Local mode: `run --dry-run --once` prints per Application what would be
// written, sorted, and writes nothing (the Git server's branches and head
// stay, the credentials in the repository URL are not printed). The Git
// plan's diff, applied to its base commit, is exactly the commit the real
// run then pushes on top of that base; the text format says the same and
// git apply takes it whole.
func TestE2EDryRunPlanLocalMode(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.3.0")
	api := pushTags(t, reg, "team/api", "1.0.0", "1.2.0")

	gitSrv := testgit.Start(t, testgit.Options{Username: "ci", Password: "pl4n-t0ken"})
	gitSrv.CreateRepo(t, "deploy")
	kustomization := fmt.Sprintf("# web\nimages:\n- name: %s\n  newTag: 1.0.0 # bumped by crowsnest\nresources: [deployment.yaml]\n", web)
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{
		"apps/web/kustomization.yaml": kustomization,
		"apps/web/deployment.yaml":    "kind: Deployment\n",
	}, "initial")
	repoURL := strings.Replace(gitSrv.RepoURL("deploy"), "://", "://ci:pl4n-t0ken@", 1)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "apps.yaml"), localApp("web", web,
		"    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization",
		fmt.Sprintf("{repoURL: %s, path: apps/web, targetRevision: main}", repoURL))+
		"---\n"+localApp("api", api, "", "{repoURL: https://git.example.invalid/api.git, path: deploy, kustomize: {images: [keep:1]}}")+
		"---\n"+localApp("sidecar", api, "    argocd-image-updater.argoproj.io/write-back-method: git",
		fmt.Sprintf("{repoURL: %s, path: apps/sidecar, targetRevision: main}", repoURL)))
	gitCache := filepath.Join(t.TempDir(), "git")
	args := []string{"--apps-dir", dir, "--git-cache-dir", gitCache}

	out, log := runPlan(t, append(args, "--plan-format", "json")...)
	if strings.Contains(out+log, "pl4n-t0ken") {
		t.Fatalf("the Git password is printed:\n%s\n%s", out, log)
	}
	if got := gitSrv.Head(t, "deploy", "main"); got != before {
		t.Fatalf("the dry run moved main: %s -> %s", before, got)
	}
	if diff := cmp.Diff([]string{"main"}, gitSrv.Branches(t, "deploy")); diff != "" {
		t.Errorf("branches after the dry run (-want +got):\n%s", diff)
	}
	plans := parsePlans(t, out)
	var keys []string
	for _, p := range plans {
		keys = append(keys, p.App)
	}
	if diff := cmp.Diff([]string{"ci/api", "ci/sidecar", "ci/web"}, keys); diff != "" {
		t.Fatalf("plans for (-want +got):\n%s\n%s", diff, out)
	}
	apiPlan, sidecar, webPlan := plans[0], plans[1], plans[2]
	wantAPI := imageupdate.WritePlan{
		App: "ci/api", Method: imageupdate.PlanMethodKubernetes,
		Changes: []imageupdate.PlannedChange{{Image: api, From: "1.0.0", To: "1.2.0"}},
		Kubernetes: &imageupdate.PatchPlan{
			APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "ci", Name: "api", ResourceVersion: "1",
			PatchType: string(types.JSONPatchType),
			Patch: json.RawMessage(`[{"op":"replace","path":"/metadata/resourceVersion","value":"1"},` +
				`{"op":"add","path":"/spec/source/kustomize/images","value":["keep:1","` + api + `:1.2.0"]}]`),
		},
	}
	if diff := cmp.Diff(wantAPI, apiPlan); diff != "" {
		t.Errorf("Kubernetes-mode plan (-want +got):\n%s", diff)
	}
	if len(webPlan.Git) != 1 || webPlan.Method != imageupdate.PlanMethodGit || webPlan.Error != "" {
		t.Fatalf("web's plan: %+v", webPlan)
	}
	g := webPlan.Git[0]
	if g.Repository != gitSrv.RepoURL("deploy") || g.Branch != "main" || g.BaseCommit != before || len(g.Files) != 1 ||
		g.Files[0].Path != "apps/web/kustomization.yaml" {
		t.Errorf("web's Git plan: %+v", g)
	}
	if len(sidecar.Git) != 1 || len(sidecar.Git[0].Files) != 1 || !sidecar.Git[0].Files[0].New ||
		sidecar.Git[0].Files[0].Path != "apps/sidecar/.argocd-source-sidecar.yaml" {
		t.Errorf("sidecar's Git plan: %+v", sidecar)
	}
	var patch strings.Builder
	for _, p := range []imageupdate.WritePlan{sidecar, webPlan} {
		for _, f := range p.Git[0].Files {
			patch.WriteString(f.Diff)
		}
	}
	planned := gitApply(t, gitSrv, "deploy", before, patch.String())

	// The text format: the same plans, which git apply takes as they are.
	text, _ := runPlan(t, args...)
	for _, want := range []string{
		"# ci/api: kubernetes write-back\n#   image " + api + ": 1.0.0 -> 1.2.0\n",
		"# ci/web: git write-back\n#   image " + web + ": 1.0.0 -> 1.3.0\n#   repository " + gitSrv.RepoURL("deploy") + "\n#   branch main (at " + before + ")\n",
		"-  newTag: 1.0.0 # bumped by crowsnest\n+  newTag: 1.3.0 # bumped by crowsnest\n",
		string(wantAPI.Kubernetes.Patch) + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text plan lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "# ci/api:") > strings.Index(text, "# ci/sidecar:") || strings.Index(text, "# ci/sidecar:") > strings.Index(text, "# ci/web:") {
		t.Errorf("text plans not sorted by Application:\n%s", text)
	}
	fromText := gitApply(t, gitSrv, "deploy", before, text)

	// The real run commits what was planned, on the planned base.
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"run", "--once", "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0"}, withArgoNamespace(args)...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --once: %v\n%s", err, b)
	}
	commits := gitSrv.Log(t, "deploy", "main")
	if len(commits) != 2 {
		t.Fatalf("%d commits, want the seed and one: %+v", len(commits), commits)
	}
	if parent := gitSrv.Git(t, "deploy", "rev-parse", commits[0].SHA+"^"); parent != before {
		t.Errorf("the commit's parent is %s, the plan's base %s", parent, before)
	}
	changed := gitSrv.ChangedFiles(t, "deploy", commits[0].SHA)
	slices.Sort(changed)
	if want := []string{"apps/sidecar/.argocd-source-sidecar.yaml", "apps/web/kustomization.yaml"}; !slices.Equal(changed, want) {
		t.Errorf("the commit changed %v, the plan %v", changed, want)
	}
	for _, f := range changed {
		committed, _ := gitSrv.ReadFile(t, "deploy", "main", f)
		for name, work := range map[string]string{"json": planned, "text": fromText} {
			b, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(committed, string(b)); diff != "" {
				t.Errorf("%s, %s plan applied (-committed +planned):\n%s", f, name, diff)
			}
		}
	}
}

// Cluster mode, Kubernetes write-back: `run --dry-run --once` against the
// apiserver prints the JSON patch and leaves the Application as it was
// (same resourceVersion); the patch, applied to the Application it was
// planned on, gives the spec the real run then writes.
func TestE2EDryRunPlanKubernetesMode(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.4.0")
	kubeconfig, ns, dir := e2eCluster(t, "e2e-plan")
	createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: %s:^1
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source:
    repoURL: https://git.example.com/web.git
    path: deploy
    kustomize: {namePrefix: prod-, images: ["redis:7.0"]}
`, web), web+":1.0.0")
	apps := appsIn(ns)
	orig, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", kubeconfig, "--namespace", ns, "--git-cache-dir", filepath.Join(dir, "git")}

	out, _ := runPlan(t, append(args, "--plan-format", "json")...)
	plans := parsePlans(t, out)
	if len(plans) != 1 || plans[0].Kubernetes == nil {
		t.Fatalf("plans: %+v\n%s", plans, out)
	}
	k := plans[0].Kubernetes
	if k.Namespace != ns || k.Name != "web" || k.ResourceVersion != orig.GetResourceVersion() {
		t.Errorf("patch for %s/%s at %s, want %s/web at %s", k.Namespace, k.Name, k.ResourceVersion, ns, orig.GetResourceVersion())
	}
	after, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != orig.GetResourceVersion() {
		t.Fatalf("the dry run wrote the Application: resourceVersion %s -> %s", orig.GetResourceVersion(), after.GetResourceVersion())
	}
	raw, err := json.Marshal(orig.Object)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(k.Patch)
	if err != nil {
		t.Fatalf("the printed patch: %v\n%s", err, k.Patch)
	}
	patched, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("applying the printed patch: %v", err)
	}
	var planned map[string]any
	if err := json.Unmarshal(patched, &planned); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, append(args, "--log-format", "json", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0")...)
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/web"`)
	written, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(written.Object["spec"], planned["spec"]); diff != "" {
		t.Errorf("spec (-written +planned):\n%s", diff)
	}
}

// Cluster mode, Git write-back with a Secret's credentials and a write
// branch template: the plan names the rendered branch as new, from main,
// and pushes nothing (no branch appears, main stays); the real run then
// pushes that branch with exactly the planned diff on the planned base.
func TestE2EDryRunPlanGitModeCluster(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.4.0")
	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: "s3cret-pl4n"})
	gitSrv.CreateRepo(t, "deploy")
	kustomization := fmt.Sprintf("images:\n- name: %s\n  newTag: 1.0.0\n", web)
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization}, "initial")
	kubeconfig, ns, dir := e2eCluster(t, "e2e-plan-git")
	if _, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret-pl4n"), "url": []byte(gitSrv.URL)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: %s:^1
    argocd-image-updater.argoproj.io/write-back-method: git:secret:%s/git-creds
    argocd-image-updater.argoproj.io/write-back-target: kustomization
    argocd-image-updater.argoproj.io/git-branch: "main:update/{{.AppName}}"
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: %s, path: apps/web, targetRevision: main}
`, web, ns, gitSrv.RepoURL("deploy")), web+":1.0.0")
	args := []string{"--kubeconfig", kubeconfig, "--namespace", ns, "--argocd-namespace", ns, "--git-cache-dir", filepath.Join(dir, "git"),
		"--log-format", "json", "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0"}
	rv := func() string {
		u, err := appsIn(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetResourceVersion()
	}
	rvBefore := rv()

	out, log := runPlan(t, append(args, "--plan-format", "json")...)
	if strings.Contains(out+log, "s3cret-pl4n") {
		t.Fatal("the Git password is printed")
	}
	if diff := cmp.Diff([]string{"main"}, gitSrv.Branches(t, "deploy")); diff != "" {
		t.Errorf("branches after the dry run (-want +got):\n%s", diff)
	}
	if gitSrv.Head(t, "deploy", "main") != before || rv() != rvBefore {
		t.Fatal("the dry run wrote: main moved or the Application changed")
	}
	plans := parsePlans(t, out)
	if len(plans) != 1 || len(plans[0].Git) != 1 || len(plans[0].Git[0].Files) != 1 {
		t.Fatalf("plans: %s", out)
	}
	g := plans[0].Git[0]
	if g.Branch != "update/web" || g.BaseBranch != "main" || !g.NewBranch || g.BaseCommit != before {
		t.Errorf("branch %q from %q at %s (new %v), want update/web, new, from main at %s", g.Branch, g.BaseBranch, g.BaseCommit, g.NewBranch, before)
	}
	planned := gitApply(t, gitSrv, "deploy", before, g.Files[0].Diff)

	startDaemon(t, args...)
	waitFor(t, "the branch update/web", func() bool { return slices.Contains(gitSrv.Branches(t, "deploy"), "update/web") })
	commits := gitSrv.Log(t, "deploy", "update/web")
	if len(commits) != 2 || gitSrv.Git(t, "deploy", "rev-parse", commits[0].SHA+"^") != before {
		t.Fatalf("update/web: %+v, want one commit on %s", commits, before)
	}
	committed, _ := gitSrv.ReadFile(t, "deploy", "update/web", "apps/web/kustomization.yaml")
	b, err := os.ReadFile(filepath.Join(planned, "apps", "web", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(committed, string(b)); diff != "" {
		t.Errorf("kustomization.yaml (-committed +planned):\n%s", diff)
	}
}
