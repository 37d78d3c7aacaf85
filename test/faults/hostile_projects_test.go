package faults

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// clusterTeams is a cluster world of the project rows: Argo CD's
// namespace and two teams', a registry, a Git server, and crowsnest run
// against the apiserver watching all three.
type clusterTeams struct {
	argo, teamA, teamB string
	cs                 kubernetes.Interface
	dyn                dynamic.Interface
	reg                *testreg.OCI
	git                *testgit.Server
}

func newClusterTeams(t *testing.T, git testgit.Options) *clusterTeams {
	t.Helper()
	return &clusterTeams{
		argo: env.CreateNamespace(t, "hostile-argocd"), teamA: env.CreateNamespace(t, "hostile-team-a"), teamB: env.CreateNamespace(t, "hostile-team-b"),
		cs: kubernetes.NewForConfigOrDie(env.Config), dyn: dynamic.NewForConfigOrDie(env.Config),
		reg: testreg.StartOCI(t, testreg.OCIOptions{}), git: testgit.Start(t, git),
	}
}

// create creates obj (an Application or AppProject) in ns.
func (c *clusterTeams) create(t *testing.T, ns string, obj map[string]any) {
	t.Helper()
	res := watcher.ApplicationsResource
	if obj["kind"] == "AppProject" {
		res = watcher.AppProjectsResource
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if _, err := c.dyn.Resource(res).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *clusterTeams) project(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	c.create(t, ns, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": map[string]any{"name": name}, "spec": spec})
}

// start runs crowsnest against the apiserver until the test ends.
func (c *clusterTeams) start(t *testing.T) *proc {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, cfg := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "crowsnest.yaml")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, cfg, "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nleaderElection: {leaseNamespace: "+c.argo+"}\n")
	return startCrowsnest(t, nil, "run", "--kubeconfig", kubeconfig, "--config", cfg,
		"--namespace", c.argo, "--namespace", c.teamA, "--namespace", c.teamB, "--argocd-namespace", c.argo, "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0",
		"--git-cache-dir", filepath.Join(dir, "git"))
}

// events lists the Events of the Applications in the three namespaces.
func (c *clusterTeams) events(t *testing.T) []logEvent {
	t.Helper()
	var out []logEvent
	for _, ns := range []string{c.argo, c.teamA, c.teamB} {
		list, err := c.cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			e := &list.Items[i]
			out = append(out, logEvent{App: ns + "/" + e.InvolvedObject.Name, Type: e.Type, Reason: e.Reason, Message: e.Message})
		}
	}
	return out
}

// images reads the Application's kustomize images.
func (c *clusterTeams) images(t *testing.T, ns, name string) []string {
	t.Helper()
	u, err := c.dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
	return images
}

// clusterRowTimeout bounds how long a cluster row waits for what must
// happen (a patch, a commit, a refusal's Event).
const clusterRowTimeout = 90 * time.Second

// A team that may create AppProjects in its own namespace makes
// look-alikes of the projects Argo CD goes by (those in its namespace): a
// "team-a" whose deny window is always open and a "default" whose window
// does not compile (which holds a whole project). Argo CD reads neither;
// crowsnest must not: team-a's Application and one of the default project
// in Argo CD's namespace are updated, with no ImageUpdateHeld.
func TestHostileLookAlikeAppProjects(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "wrong Application: look-alike AppProjects in a team's namespace",
		"AppProjects team-a (deny window, always open) and default (a window that does not compile) in team-b's namespace")
	c := newClusterTeams(t, testgit.Options{})
	img := pushImage(t, c.reg, "team-a/web", "1.0.0", "1.1.0")
	c.project(t, c.argo, "team-a", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{c.teamA}})
	deny := map[string]any{"kind": "deny", "schedule": "* * * * *", "duration": "1h", "applications": []any{"*"}, "namespaces": []any{"*"}}
	c.project(t, c.teamB, "team-a", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{"*"}, "syncWindows": []any{deny}})
	broken := map[string]any{"kind": "deny", "schedule": "0 0 * * *", "duration": "1d", "applications": []any{"*"}}
	c.project(t, c.teamB, "default", map[string]any{"sourceRepos": []any{"*"}, "syncWindows": []any{broken}})
	apps := map[string]string{c.teamA + "/web": "team-a", c.argo + "/api": "default"}
	for key, project := range apps {
		ns, name, _ := strings.Cut(key, "/")
		c.create(t, ns, isoApp(name, project, "https://git.example.invalid/x.git", "deploy", "main",
			map[string]string{annImageList: "web=" + img + ":~1"}, img+":1.0.0"))
	}
	c.start(t)
	updated := func(key string) bool {
		ns, name, _ := strings.Cut(key, "/")
		return slices.Contains(c.images(t, ns, name), img+":1.1.0")
	}
	testwait.Until(t.Context(), clusterRowTimeout, func() bool { return updated(c.teamA+"/web") && updated(c.argo+"/api") })
	evs := c.events(t)
	lost, held := 0, []logEvent(nil)
	for key := range apps {
		if !updated(key) {
			lost++
		}
		held = append(held, eventsOf(evs, key, "ImageUpdateHeld")...)
	}
	v.answer("%d of 2 Applications updated; Events on them: %s", 2-lost, firstMessage(append(eventsOf(evs, c.teamA+"/web", ""), eventsOf(evs, c.argo+"/api", "")...)))
	v.lose(lost, "%d of 2 Applications of the real projects not updated within %s", lost, clusterRowTimeout)
	v.credited(held)
	v.done()
}

// Argo CD's repository Secret scoped to team-a's project (its project
// field) pushes team-a's changes only: team-b's Application writing to the
// same repository is not pushed with it (the server, which wants
// credentials, refuses team-b's push), while team-a's change lands as
// team-a's robot.
func TestHostileProjectScopedRepositorySecret(t *testing.T) {
	hostileTest(t)
	const token = "team-a-r0b0t"
	v := newVerdict(t, "credential misuse: a repository Secret scoped to another AppProject",
		"team-b's Application (project team-b) writes to the repository whose Argo CD repository Secret has project: team-a")
	c := newClusterTeams(t, testgit.Options{Accounts: map[string]string{"robot-a": token}})
	img := pushImage(t, c.reg, "shared/web", "1.0.0", "1.1.0")
	repoURL := c.git.CreateRepo(t, "mono")
	seed := map[string]string{"team-a/web/kustomization.yaml": kustomization(img), "team-b/web/kustomization.yaml": kustomization(img)}
	c.git.Seed(t, "mono", "main", seed, "initial")
	if _, err := c.cs.CoreV1().Secrets(c.argo).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mono-team-a", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"url": repoURL, "project": "team-a", "username": "robot-a", "password": token},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for team, ns := range map[string]string{"team-a": c.teamA, "team-b": c.teamB} {
		c.project(t, c.argo, team, map[string]any{"sourceRepos": []any{repoURL}, "sourceNamespaces": []any{ns}})
		c.create(t, ns, isoApp("web", team, repoURL, team+"/web", "main",
			map[string]string{annImageList: "web=" + img + ":~1", annWriteBack: "git", annTarget: "kustomization"}, img+":1.0.0"))
	}
	p := c.start(t)
	changed := func(path string) bool {
		got, _ := c.git.ReadFile(t, "mono", "main", path)
		return got != seed[path]
	}
	refused := func() bool { return len(eventsOf(c.events(t), c.teamB+"/web", "ImageUpdateFailed")) > 0 }
	testwait.Until(t.Context(), clusterRowTimeout, func() bool { return changed("team-a/web/kustomization.yaml") && refused() })
	evs := c.events(t)
	v.answer("team-b/web: %s", firstMessage(warnings(evs, c.teamB+"/web"), "authorization"))
	leaked := 0
	if changed("team-b/web/kustomization.yaml") {
		leaked++
	}
	for _, push := range c.git.Pushes() {
		t.Logf("push as %q: %v", push.User, push.Heads)
	}
	v.leak(leaked, "team-b's change was pushed with team-a's project-scoped Secret")
	v.loseUnless(changed("team-a/web/kustomization.yaml"), "team-a's change, pushed with its own project's Secret, did not land")
	v.expect(refused(), "no ImageUpdateFailed on team-b/web")
	v.expect(!slices.ContainsFunc(p.logLines(), func(l string) bool { return strings.Contains(l, token) }), "the token is in the log")
	v.credited(foreignEvents(evs, c.teamB+"/web", "team-b"))
	v.done()
}

// Fail closed: with no default AppProject in Argo CD's namespace (not yet
// recreated, or --argocd-namespace wrong), a team's Application naming it
// from its own namespace gets no Git write-back: a WriteBackRefused Event
// naming the rule, and the Git server is never contacted.
func TestHostileMissingDefaultProject(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "fail closed: the default AppProject missing from Argo CD's namespace",
		"team-b's Application, project default (none in Argo CD's namespace), Git write-back to a repository")
	c := newClusterTeams(t, testgit.Options{})
	img := pushImage(t, c.reg, "team-b/web", "1.0.0", "1.1.0")
	repoURL := c.git.CreateRepo(t, "deploy")
	c.git.Seed(t, "deploy", "main", map[string]string{"web/kustomization.yaml": kustomization(img)}, "initial")
	c.git.ResetCounts()
	c.create(t, c.teamB, isoApp("web", "default", repoURL, "web", "main",
		map[string]string{annImageList: "web=" + img + ":~1", annWriteBack: "git", annTarget: "kustomization"}, img+":1.0.0"))
	rule := "AppProject default is not in Argo CD's namespace"
	c.start(t)
	testwait.Until(t.Context(), clusterRowTimeout, func() bool { return hasWarning(eventsOf(c.events(t), c.teamB+"/web", "WriteBackRefused"), rule) })
	evs := c.events(t)
	v.answer("%s", firstMessage(warnings(evs, c.teamB+"/web"), rule))
	v.expect(hasWarning(eventsOf(evs, c.teamB+"/web", "WriteBackRefused"), rule), "no WriteBackRefused naming %q", rule)
	contacted := c.git.Count(testgit.KindInfoRefs) + c.git.Count(testgit.KindUploadPack) + c.git.Count(testgit.KindReceivePack)
	v.count(&v.row.wrong, contacted, "the Git server was contacted %d times", contacted)
	v.done()
}
