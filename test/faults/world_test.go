package faults

import (
	"fmt"
	"os"
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
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Versions every scenario moves from and to.
const (
	fromTag = "1.0.0"
	toTag   = "1.1.0"
	// gitRepo is the repository Git-mode Applications write back to.
	gitRepo = "deploy"
	// gitUser and gitToken are the Git server's credentials, given to
	// crowsnest through an Argo CD-style Secret.
	gitUser  = "bot"
	gitToken = "faults-git-token"
)

// worldOptions shape a scenario's Applications.
type worldOptions struct {
	// kubeApps and gitApps are how many Applications use each write-back.
	kubeApps, gitApps int
	// repos is how many image repositories the Applications share (1 if 0).
	repos int
	// hooks is how many webhook services the subscriptions are spread
	// over (1 if 0): the outbox paces each service to 5 messages/s.
	hooks int
	// config is appended to the daemon's config file (YAML, top level).
	config string
	// leaderElection is added to the leaderElection section (YAML flow
	// mapping entries), e.g. "enabled: true, leaseDuration: 4s".
	leaderElection string
	// dest, when set, receives the notifications instead of the webhook
	// sink (hooks is then unused).
	dest destination
}

// destination is a notification receiver a scenario brings instead of the
// webhook sink.
type destination interface {
	// subscription names the service the Application app subscribes to
	// and the recipient its annotation gives.
	subscription(app string) (service, recipient string)
	// config is the rest of the notifications section, indented two
	// spaces: its services and whatever else it needs (templates).
	config() string
	counter
}

// counter counts the messages a receiver acknowledged by what they
// announce (messageKey).
type counter interface{ counts() map[string]int }

// deliveryCounter is a counter that also sees each message's delivery ID
// (the webhook and email sinks; Slack messages carry none).
type deliveryCounter interface {
	counter
	distinctDeliveries() map[string]int
}

// app is one Application and the update the scenario intends for it.
type app struct {
	name  string
	git   bool
	image string // as written in the annotation and the notification
	hook  string // the service its subscription names
	// recipient is the subscription annotation's value.
	recipient string
}

// world is a scenario's universe: a namespace on the shared apiserver,
// a registry with newer tags, a Git server, a webhook sink (or the
// scenario's destination) and the Applications, plus the crowsnest config
// that ties them together.
type world struct {
	ns         string
	dir        string
	kubeconfig string
	cfgPath    string
	reg        *testreg.OCI
	git        *testgit.Server
	sink       *sink
	notified   counter // the sink or the scenario's destination
	apps       []app
	dyn        dynamic.Interface
	cs         kubernetes.Interface
	seedHead   string
}

func newWorld(t *testing.T, prefix string, o worldOptions) *world {
	t.Helper()
	// Inside a test, where go test records the files opened (TestMain runs
	// before that starts): the crowsnest binary TestMain built from them
	// is out of the test cache's sight, so a change to its sources alone
	// must still run the scenarios again.
	if err := testenv.TrackSources(); err != nil {
		t.Fatalf("reading the module's sources: %v", err)
	}
	o.repos, o.hooks = max(o.repos, 1), max(o.hooks, 1)
	w := &world{dir: t.TempDir(), dyn: dynamic.NewForConfigOrDie(env.Config), cs: kubernetes.NewForConfigOrDie(env.Config)}
	w.kubeconfig = filepath.Join(w.dir, "kubeconfig")
	if err := env.WriteKubeconfig(w.kubeconfig); err != nil {
		t.Fatal(err)
	}
	w.ns = env.CreateNamespace(t, prefix)
	w.reg = testreg.StartOCI(t, testreg.OCIOptions{})
	w.git = testgit.Start(t, testgit.Options{Username: gitUser, Password: gitToken})
	w.notified = o.dest
	if o.dest == nil {
		w.sink = startSink(t)
		w.notified = w.sink
	}

	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	images := make([]string, o.repos)
	for i := range images {
		repo := fmt.Sprintf("team/svc-%02d", i)
		for j, tag := range []string{fromTag, toTag} {
			w.reg.Push(t, repo+":"+tag, testreg.Image(t, t0.Add(time.Duration(j)*time.Hour), "linux/amd64"))
		}
		images[i] = w.reg.Host() + "/" + repo
	}
	for i := range o.kubeApps + o.gitApps {
		git := i >= o.kubeApps
		name := fmt.Sprintf("k-%03d", i)
		if git {
			name = fmt.Sprintf("g-%03d", i-o.kubeApps)
		}
		a := app{name: name, git: git, image: images[i%o.repos], hook: fmt.Sprintf("hook%d", i%o.hooks)}
		if o.dest != nil {
			a.hook, a.recipient = o.dest.subscription(name)
		}
		w.apps = append(w.apps, a)
	}

	w.git.CreateRepo(t, gitRepo)
	seed := map[string]string{"README.md": "deployments\n"}
	for _, a := range w.apps {
		if a.git {
			seed["apps/"+a.name+"/kustomization.yaml"] = "resources:\n- deployment.yaml\n"
		}
	}
	w.seedHead = w.git.Seed(t, gitRepo, "main", seed, "initial")
	if _, err := w.cs.CoreV1().Secrets(w.ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{"username": []byte(gitUser), "password": []byte(gitToken), "url": []byte(w.git.URL)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range w.apps {
		w.createApp(t, a)
	}

	var services strings.Builder
	if o.dest != nil {
		services.WriteString(o.dest.config())
	} else {
		services.WriteString("  services:\n")
		for i := range o.hooks {
			fmt.Fprintf(&services, "    hook%d:\n      webhook: {url: %s/hook%d, timeout: 2s}\n", i, w.sink.URL(), i)
		}
	}
	le := ""
	if o.leaderElection != "" {
		le = ", " + o.leaderElection
	}
	w.cfgPath = filepath.Join(w.dir, "crowsnest.yaml")
	cfg := fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseNamespace: %s%s}
registries: {pollInterval: 5s, requestTimeout: 10s}
notifications:
  catalog: true
%s%s`, w.ns, le, services.String(), o.config)
	if err := os.WriteFile(w.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// createApp creates the Application and reports the old tag running in
// its status, as Argo CD would.
func (w *world) createApp(t *testing.T, a app) {
	t.Helper()
	writeBack := ""
	source := "{repoURL: https://git.example.com/unused.git, path: deploy}"
	if a.git {
		writeBack = fmt.Sprintf("\n    argocd-image-updater.argoproj.io/write-back-method: git:secret:%s/git-creds", w.ns)
		source = fmt.Sprintf("{repoURL: %s, path: apps/%s, targetRevision: main}", w.git.RepoURL(gitRepo), a.name)
	}
	doc := fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %s:^1%s
    notifications.argoproj.io/subscribe.on-image-updated.%s: "%s"
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source: %s
`, a.name, a.image, writeBack, a.hook, a.recipient, a.name, source)
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	// Created with the status Argo CD would report, in one write (Argo
	// CD's CRD has no status subresource), so generation 1 means unwritten
	// (see measure).
	obj["status"] = map[string]any{"summary": map[string]any{"images": []any{a.image + ":" + fromTag}}}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(w.ns)
	if _, err := w.appClient().Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (w *world) appClient() dynamic.ResourceInterface {
	return w.dyn.Resource(watcher.ApplicationsResource).Namespace(w.ns)
}

// daemon prepares a crowsnest replica for this world, with a Git cache and
// a state directory of its own, as the shipped manifests give each pod
// (an emptyDir, which a restarted container keeps).
func (w *world) daemon(t *testing.T, name string) *daemon {
	t.Helper()
	return newDaemon(t, name, "--kubeconfig", w.kubeconfig, "--config", w.cfgPath, "--namespace", w.ns, "--argocd-namespace", w.ns,
		"--git-cache-dir", filepath.Join(w.dir, "git-cache-"+name), "--state-dir", filepath.Join(w.dir, "state-"+name))
}

// tally is what a scenario achieved, measured from the outside: the
// Applications and the Git repository for updates, the sink for
// notifications.
type tally struct {
	updIntended, updLanded, updDup    int
	notIntended, notDelivered, notDup int
	// notAgain counts the duplicates that carried a delivery ID already
	// acknowledged (the outbox sending one delivery again, which a receiver
	// can drop); notTwice those under a new delivery ID (crowsnest
	// announcing one thing twice). Known only where the sink sees IDs.
	notAgain, notTwice int
	// missing names what did not land or arrive, for failure messages.
	missing []string
	// dups names what was duplicated.
	dups []string
}

// measure counts updates and notifications as they stand now. A
// Kubernetes-mode update landed when the Application carries the new tag;
// each spec write bumps metadata.generation, so generation-1 is the number
// of writes (nothing else writes the spec). A Git-mode update landed when
// the Application's file carries the new tag; the commits that touched the
// file are its writes.
func (w *world) measure(t *testing.T) tally {
	t.Helper()
	var tl tally
	commits := w.commitsPerFile(t)
	list, err := w.appClient().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Applications: %v", err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	acked := w.notified.counts()
	var distinct map[string]int
	if dc, ok := w.notified.(deliveryCounter); ok {
		distinct = dc.distinctDeliveries()
	}
	for _, a := range w.apps {
		want := a.image + ":" + toTag
		tl.updIntended++
		writes := 0
		landed := false
		if a.git {
			file := "apps/" + a.name + "/.argocd-source-" + a.name + ".yaml"
			writes = commits[file]
			content, _ := w.git.ReadFile(t, gitRepo, "main", file)
			landed = strings.Contains(content, want)
		} else if u := byName[a.name]; u != nil {
			images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
			landed = slices.Contains(images, want)
			writes = int(u.GetGeneration()) - 1
		}
		if landed && writes >= 1 {
			tl.updLanded++
		} else {
			tl.missing = append(tl.missing, fmt.Sprintf("update %s (landed=%v, writes=%d)", a.name, landed, writes))
		}
		if writes > 1 {
			tl.updDup += writes - 1
			tl.dups = append(tl.dups, fmt.Sprintf("update %s written %d times", a.name, writes))
		}

		tl.notIntended++
		key := "image-updated " + updateKey(w.ns+"/"+a.name, a.image, toTag)
		switch n := acked[key]; {
		case n == 0:
			tl.missing = append(tl.missing, "notification "+key)
		case n > 1:
			tl.notDup += n - 1
			tl.dups = append(tl.dups, fmt.Sprintf("notification %s delivered %d times", key, n))
			if ids := distinct[key]; ids > 0 {
				tl.notTwice += ids - 1
				tl.notAgain += n - ids
			}
			fallthrough
		default:
			tl.notDelivered++
		}
	}
	return tl
}

// done reports whether everything intended is there.
func (tl tally) done() bool {
	return tl.updLanded == tl.updIntended && tl.notDelivered == tl.notIntended
}

// commitsPerFile counts, per file, the commits on main not made by the
// test's own seeding (crowsnest's) that touched it.
func (w *world) commitsPerFile(t *testing.T) map[string]int {
	t.Helper()
	out := w.git.Git(t, gitRepo, "log", "--format=%x01%an", "--name-only", "main")
	counts := map[string]int{}
	for _, c := range strings.Split(out, "\x01")[1:] {
		author, files, _ := strings.Cut(c, "\n")
		if strings.TrimSpace(author) == testgit.SeedAuthor {
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSpace(files), "\n") {
			if f != "" {
				counts[f]++
			}
		}
	}
	return counts
}

// pendingDeliveries counts the outbox records not delivered or given up
// yet, read straight from crowsnest's ConfigMaps.
func (w *world) pendingDeliveries(t *testing.T) int {
	t.Helper()
	store := &outbox.ConfigMapStore{Client: kubecoretest.Wrap(w.cs), Namespace: w.ns}
	recs, err := store.List(t.Context(), outbox.ListOptions{State: outbox.StatePending})
	if err != nil {
		return -1
	}
	return len(recs)
}

// deadDeliveries lists the outbox records given up on.
func (w *world) deadDeliveries(t *testing.T) []outbox.Record {
	t.Helper()
	store := &outbox.ConfigMapStore{Client: kubecoretest.Wrap(w.cs), Namespace: w.ns}
	recs, err := store.List(t.Context(), outbox.ListOptions{State: outbox.StateDead})
	if err != nil {
		t.Logf("reading dead deliveries: %v", err)
	}
	return recs
}
