package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// The isolation property test's size: isolationSeeds seeds in `make test`
// (each two cluster passes of crowsnest), CROWSNEST_ISOLATION_SEEDS for a
// long nightly run, CROWSNEST_ISOLATION_SEED to repeat one seed.
const isolationSeeds = 3

// isolationWorld is what every seed shares: a registry and a Git server.
type isolationWorld struct {
	reg          *testreg.OCI
	git          *testgit.Server
	aWeb, aAPI   string // team A's images
	bImage       string // team B's image
	runs         int
	hostileTried int
}

// The isolation property: team A's Applications in a fixed scenario (one
// written back to a monorepo both teams' AppProjects permit, one patched);
// team B gets randomly generated hostile Applications and annotations
// (seeded, reproducible) in one local pass with A's. Everything A observes
// (its files in the shared repository on every branch, the Events on its
// Applications, which local mode logs) must be the same with and without
// B. It is the net for the siblings of the hostile rows that nobody
// listed; each difference names the seed that repeats it. AppProjects and
// Secrets a team makes are cluster matters, in the cluster rows.
func TestIsolationProperty(t *testing.T) {
	hostileTest(t)
	start := time.Now()
	w := newIsolationWorld(t)
	first, n := isolationSeedRange(isolationSeeds)
	failed := 0
	for seed := first; seed < first+uint64(n); seed++ {
		alone, _ := w.run(t, seed, false)
		// The scenario must show team A's work, or "the same" proves
		// nothing: its Git write-back and its patch both landed.
		if !strings.Contains(alone.Files["main:team-a/web/kustomization.yaml"], "newTag: 1.1.0") ||
			!slices.ContainsFunc(alone.Events, func(e string) bool { return strings.Contains(e, "a-kube Normal ImagesUpdated") }) {
			t.Fatalf("seed %d: team A's updates did not land without team B: %+v", seed, alone)
		}
		with, tried := w.run(t, seed, true)
		w.hostileTried += tried
		if diff := cmp.Diff(alone, with); diff != "" {
			failed++
			t.Errorf("seed %d (CROWSNEST_ISOLATION_SEED=%d repeats it): team A saw a difference with team B's %d hostile inputs (-alone +with):\n%s",
				seed, seed, tried, diff)
		}
	}
	v := newVerdict(t, "isolation property: one team's hostile input changes nothing another team observes",
		fmt.Sprintf("%d seeds from %d, %d hostile inputs (Applications and their annotations) by team B, one local pass each", n, first, w.hostileTried)).since(start)
	v.answer("team A's files and Events the same with and without team B in %d of %d seeds", n-failed, n)
	v.count(&v.row.wrong, failed, "seeds where team A saw a difference: %d", failed)
	v.done()
}

// newIsolationWorld starts the registry (team A's and team B's images)
// and the Git server (team A's and team B's accounts) the seeds share.
func newIsolationWorld(t *testing.T) *isolationWorld {
	t.Helper()
	w := &isolationWorld{reg: testreg.StartOCI(t, testreg.OCIOptions{}),
		git: testgit.Start(t, testgit.Options{Accounts: map[string]string{"alice": isoAliceToken, "mallory": "n0pe"}})}
	w.aWeb = pushImage(t, w.reg, "team-a/web", "1.0.0", "1.1.0")
	w.aAPI = pushImage(t, w.reg, "team-a/api", "1.0.0", "1.2.0", "2.0.0")
	w.bImage = pushImage(t, w.reg, "team-b/evil", "1.0.0", "6.6.6")
	return w
}

// isolationSeedRange is the seeds to run: def from a time-based first
// seed, CROWSNEST_ISOLATION_SEEDS of them for a long run, or the one
// CROWSNEST_ISOLATION_SEED repeats.
func isolationSeedRange(def int) (first uint64, n int) {
	first, n = uint64(time.Now().UnixNano()%100000), def
	if s := os.Getenv("CROWSNEST_ISOLATION_SEEDS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n = v
		}
	}
	if s := os.Getenv("CROWSNEST_ISOLATION_SEED"); s != "" {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			first, n = v, 1
		}
	}
	return first, n
}

// isolationObservation is everything team A sees of one pass.
type isolationObservation struct {
	Files  map[string]string // branch:path -> content, A's files only
	Events []string          // "app type reason: message", normalized
}

// The scenario's namespaces, as local mode's files give them.
const (
	isoArgo  = "argocd"
	isoTeamA = "team-a"
	isoTeamB = "team-b"
)

// run makes a fresh copy of the scenario (a folder of Applications and
// AppProjects, a repository), adds team B's hostile input for seed when
// withB, runs one local pass of crowsnest (run --once) and returns what
// team A observes, with the number of hostile inputs tried.
func (w *isolationWorld) run(t *testing.T, seed uint64, withB bool) (isolationObservation, int) {
	t.Helper()
	w.runs++
	repo := fmt.Sprintf("mono-%d", w.runs)
	w.git.CreateRepo(t, repo)
	base, _, _ := strings.Cut(w.git.URL, "://")
	host := strings.TrimPrefix(w.git.URL, base+"://")
	repoURL := fmt.Sprintf("%s://alice:%s@%s/%s.git", base, isoAliceToken, host, repo)
	aFiles := map[string]string{
		"team-a/web/kustomization.yaml":  "resources:\n- deployment.yaml\nimages:\n- name: " + w.aWeb + "\n  newTag: 1.0.0\n",
		"team-a/web/deployment.yaml":     "kind: Deployment\n",
		"team-a/base/kustomization.yaml": "resources: []\n",
	}
	seedFiles := map[string]string{"team-b/app/kustomization.yaml": "resources: []\n"}
	for p, c := range aFiles {
		seedFiles[p] = c
	}
	w.git.Seed(t, repo, "main", seedFiles, "initial")

	dir := t.TempDir()
	n := 0
	write := func(ns string, obj map[string]any) {
		t.Helper()
		meta := obj["metadata"].(map[string]any)
		meta["namespace"] = ns
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		n++
		writeTestFile(t, filepath.Join(dir, fmt.Sprintf("%03d.yaml", n)), string(b))
	}
	project := func(ns, name string, spec map[string]any) {
		write(ns, map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": map[string]any{"name": name}, "spec": spec})
	}
	// The operator's projects: both teams may deploy from the shared
	// monorepo, each from its own namespace.
	project(isoArgo, "team-a", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{isoTeamA}})
	project(isoArgo, "team-b", map[string]any{"sourceRepos": []any{"*"}, "sourceNamespaces": []any{isoTeamB}})
	// Team A: one Application written back to Git (its token in its
	// repoURL), one patched.
	write(isoTeamA, isoApp("a-web", "team-a", repoURL, "team-a/web", "main", map[string]string{
		annImageList: "web=" + w.aWeb + ":~1", annWriteBack: "git", annTarget: "kustomization",
	}, w.aWeb+":1.0.0"))
	write(isoTeamA, isoApp("a-kube", "team-a", repoURL, "team-a/base", "main", map[string]string{
		annImageList: "api=" + w.aAPI + ":~1",
	}, w.aAPI+":1.0.0"))
	tried := 0
	if withB {
		h := &hostile{r: rand.New(rand.NewPCG(seed, 0x150)), w: w, repoURL: repoURL, repo: repo, teamA: isoTeamA, argo: isoArgo}
		tried = h.generate(func(obj map[string]any) { write(isoTeamB, obj) })
	}

	p, code := runOnce(t, dir, onceOptions{})
	if p.killed {
		t.Fatalf("seed %d: the pass did not end within %s", seed, onceTimeout)
	}
	if !withB && code != 0 {
		t.Errorf("seed %d: team A's pass alone exited %d:\n%s", seed, code, p.tail(40))
	}
	norm := normalizer(repo)
	obs := isolationObservation{Files: w.teamAFiles(t, repo, aFiles)}
	for _, e := range p.events() {
		if ns, _, _ := strings.Cut(e.App, "/"); ns == isoTeamA {
			obs.Events = append(obs.Events, norm(e.App+" "+e.Type+" "+e.Reason+": "+e.Message))
		}
	}
	slices.Sort(obs.Events)
	return obs, tried
}

// teamAFiles reads team A's files (aFiles: path -> content as seeded) on
// every branch of repo, "branch:path" -> content. Another branch's copy of
// a file as seeded, or as it is on main (a branch made from main after A's
// commit), is a copy, not a change, and is left out.
func (w *isolationWorld) teamAFiles(t *testing.T, repo string, aFiles map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for p := range aFiles {
		out["main:"+p], _ = w.git.ReadFile(t, repo, "main", p)
	}
	for _, branch := range w.git.Branches(t, repo) {
		if branch == "main" {
			continue
		}
		for p := range aFiles {
			content, _ := w.git.ReadFile(t, repo, branch, p)
			if content != aFiles[p] && content != out["main:"+p] {
				out[branch+":"+p] = content
			}
		}
	}
	return out
}

// isoAliceToken is team A's Git token, in its Applications' repoURL.
const isoAliceToken = "alice-t0ken"

// normalizer replaces what differs between two copies of the scenario
// (the repository's name, commit SHAs) with placeholders.
func normalizer(repo string) func(string) string {
	sha := regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	return func(s string) string { return sha.ReplaceAllString(strings.ReplaceAll(s, repo, "<repo>"), "<sha>") }
}

// isoApp is an Application of project in the shared repository, running
// the images given.
func isoApp(name, project, repoURL, path, revision string, annotations map[string]string, running ...string) map[string]any {
	ann := map[string]any{}
	for k, v := range annotations {
		ann[k] = v
	}
	images := make([]any, len(running))
	for i, r := range running {
		images[i] = r
	}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "annotations": ann},
		"spec": map[string]any{
			"project":     project,
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
			"source":      map[string]any{"repoURL": repoURL, "path": path, "targetRevision": revision},
		},
		"status": map[string]any{"summary": map[string]any{"images": images}},
	}
}

// annPrefix is argocd-image-updater's annotation prefix.
const annPrefix = "argocd-image-updater.argoproj.io/"

// hostile generates team B's input for one seed.
type hostile struct {
	r             *rand.Rand
	w             *isolationWorld
	repoURL, repo string
	// teamA and argo are the namespaces of team A and of Argo CD.
	teamA, argo string
}

func (h *hostile) pick(options ...string) string { return options[h.r.IntN(len(options))] }

// generate writes team B's Applications and returns how many hostile
// inputs they hold. (AppProjects and Secrets a team makes are cluster
// matters: the cluster rows of the hostile table cover them.)
func (h *hostile) generate(write func(map[string]any)) int {
	tried := 0
	base, _, _ := strings.Cut(h.w.git.URL, "://")
	host := strings.TrimPrefix(h.w.git.URL, base+"://")
	for i := range 2 + h.r.IntN(4) {
		ann := map[string]string{annImageList: h.pick(
			"web="+h.w.aWeb+":~1", "evil="+h.w.bImage, "web="+h.w.aWeb+":"+h.pick("*", ">=0", "~1.0"), "api="+h.w.aAPI)}
		alias, _, _ := strings.Cut(ann[annImageList], "=")
		repoURL, path, revision, proj := h.repoURL, "team-b/app", "main", "team-b"
		for range 1 + h.r.IntN(5) {
			tried++
			switch h.r.IntN(10) {
			case 0: // a branch that cannot be written
				ann[annWriteBack] = "git"
				ann[annGitBranch] = h.pick("a..b", "main:{{.Nope", "main:", "main:x/{{.AppName}}", "-bad", "main:a..b", "main:{{(index .Images 9).NewTag}}")
			case 1: // a Helm-style revision used as the branch
				ann[annWriteBack] = "git"
				revision = h.pick("1.*", "~> 2", "v1.0..v2")
			case 2: // A's files as the target
				ann[annWriteBack] = "git"
				ann[annTarget] = h.pick("kustomization:/team-a/web", "kustomization:../../team-a/web",
					"helmvalues:/team-a/web/kustomization.yaml", "kustomization:/team-a/base")
				ann[annPrefix+alias+".kustomize.image-name"] = h.w.aWeb
			case 3: // another host's repository, or the same one spelt otherwise
				ann[annWriteBack] = "git"
				ann[annGitRepo] = h.pick(h.repoURL, "http://127.0.0.1:1/nowhere.git", h.repoURL+"/../x", strings.TrimSuffix(h.repoURL, ".git"))
			case 4: // its own credentials, or bogus ones, in the same repository's URL
				ann[annWriteBack] = "git"
				repoURL = fmt.Sprintf("%s://%s@%s/%s.git", base, h.pick("mallory:n0pe", "alice:wrong", "alice"), host, h.repo)
			case 5: // credentials it may not name
				ann[annPrefix+alias+".pull-secret"] = h.pick("secret:"+h.teamA+"/git-creds#password", "env:HOME", "ext:/bin/cat", "pullsecret:"+h.argo+"/regcred")
				ann[annWriteBack] = h.pick("git:secret:"+h.teamA+"/git-creds", "git:secret:"+h.argo+"/repo", "git:repocreds", "git")
			case 6: // tenant-sized input
				ann[annPrefix+alias+".allow-tags"] = "regexp:" + strings.Repeat("(a|b|c)*", 20+h.r.IntN(400))
			case 7: // another team's project, or none
				proj = h.pick("team-a", "default", "ghost", "")
			case 8: // A's folder as its own source
				path = h.pick("team-a", "team-a/../team-a/web", "/team-a/base")
				ann[annWriteBack] = "git"
			case 9: // nonsense
				ann[annPrefix+h.pick("update-strategy", alias+".update-strategy", alias+".platforms", "write-back-method", "git-branch")] =
					h.pick("", "nope", "\x00", strings.Repeat("x", 5000))
			}
		}
		write(isoApp(fmt.Sprintf("b-%d", i), proj, repoURL, path, revision, ann, h.w.aWeb+":1.0.0", h.w.aAPI+":1.0.0"))
		tried++
	}
	return tried
}
