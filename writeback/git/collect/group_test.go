package collect_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// gatedWriter hands each Apply to a real writer once the test lets it:
// while it waits, the batch is in flight. started receives the keys of
// each Apply as it begins. The write goes on when ctx ends, as a push
// under way does within the writer's grace.
type gatedWriter struct {
	next    collect.Applier
	started chan []string
	mu      sync.Mutex
	gates   map[string]chan struct{} // by repository: closed to let its Applies go
}

func newGatedWriter(next collect.Applier) *gatedWriter {
	return &gatedWriter{next: next, started: make(chan []string, 16), gates: map[string]chan struct{}{}}
}

// hold makes Applies for repo wait until the returned func is called.
func (w *gatedWriter) hold(repo string) (release func()) {
	g := make(chan struct{})
	w.mu.Lock()
	w.gates[gitwb.RepoID(repo)] = g
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(g) }) }
}

func (w *gatedWriter) Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	var keys []string
	var gates []chan struct{}
	w.mu.Lock()
	for i := range changes {
		keys = append(keys, changes[i].Key)
		if g := w.gates[gitwb.RepoID(changes[i].RepoURL)]; g != nil && !slices.Contains(gates, g) {
			gates = append(gates, g)
		}
	}
	w.mu.Unlock()
	w.started <- keys
	for _, g := range gates {
		<-g
	}
	return w.next.Apply(context.WithoutCancel(ctx), changes)
}

// nextApply is the keys of the next Apply to begin.
func (w *gatedWriter) nextApply(t *testing.T) []string {
	t.Helper()
	select {
	case keys := <-w.started:
		return keys
	case <-time.After(waitTimeout):
		t.Fatal("no write began")
		return nil
	}
}

// gitFixture is a real Git server with one repository per name, each
// holding one kustomization per Application under apps/<name>.
type gitFixture struct {
	srv   *testgit.Server
	image string
}

func newGitFixture(t *testing.T, repos map[string][]string) *gitFixture {
	t.Helper()
	f := &gitFixture{srv: testgit.Start(t, testgit.Options{}), image: "registry.example/team/web"}
	for repo, apps := range repos {
		f.srv.CreateRepo(t, repo)
		files := map[string]string{}
		for _, app := range apps {
			files["apps/"+app+"/kustomization.yaml"] = kustomizationOf(f.image, "1.0.0")
		}
		f.srv.Seed(t, repo, "main", files, "seed")
	}
	return f
}

// change sets app's tag in repo.
func (f *gitFixture) change(repo, app, tag string) gitwb.Change {
	return gitwb.Change{App: app, RepoURL: f.srv.RepoURL(repo), Branch: "main", Path: "apps/" + app,
		Target: gitwb.Target{Kind: gitwb.TargetKustomization}, Images: []gitwb.Image{{Name: f.image, NewTag: tag}}}
}

// commits counts repo's commits on main after the seed.
func (f *gitFixture) commits(t *testing.T, repo string) int {
	t.Helper()
	return len(f.srv.Log(t, repo, "main")) - 1
}

// idleEngine is an engine with nothing to decide.
type idleEngine struct{}

func (idleEngine) Idle() bool { return true }

// Group commit: a lone change is written as soon as it is added (the
// engine has nothing else to decide), and the changes that arrive while
// that push is in flight wait for it and go together as the next commit:
// two commits, the second holding both Applications, each told of its own.
func TestGitBatchGroupCommit(t *testing.T) {
	f := newGitFixture(t, map[string][]string{"apps": {"a", "b", "c"}})
	w := newGatedWriter(testGitWriter(t))
	release := w.hold(f.srv.RepoURL("apps"))
	b := &collect.Batcher{Writer: w, Engine: idleEngine{}, MaxDelay: time.Hour}
	stop := start(t, b)

	b.Add("ns/a", f.change("apps", "a", "1.1.0"))
	if diff := cmp.Diff([]string{"ns/a"}, w.nextApply(t)); diff != "" {
		t.Fatalf("first write (-want +got):\n%s", diff)
	}
	// a's write is in flight: b and c wait for it, then go together.
	b.Add("ns/b", f.change("apps", "b", "1.1.0"))
	b.Add("ns/c", f.change("apps", "c", "1.1.0"))
	if n := b.Pending(); n != 3 {
		t.Errorf("Pending() = %d with one Application being written and two waiting", n)
	}
	release()
	if diff := cmp.Diff([]string{"ns/b", "ns/c"}, w.nextApply(t)); diff != "" {
		t.Fatalf("second write (-want +got):\n%s", diff)
	}
	testwait.For(t, "both writes to be settled", b.Idle)
	outs := stop()

	if n := f.commits(t, "apps"); n != 2 {
		t.Errorf("%d commits after the seed, want 2 (a alone, then b and c)", n)
	}
	log := f.srv.Log(t, "apps", "main")
	for key, sha := range map[string]string{"ns/a": log[1].SHA, "ns/b": log[0].SHA, "ns/c": log[0].SHA} {
		o := outcomeOf(t, outs, key)
		if !o.Written() || o.Failed() || len(o.Results) != 1 || o.Results[0].Commit != sha {
			t.Errorf("%s: %+v, want written in commit %s", key, o, sha)
		}
	}
	for _, app := range []string{"a", "b", "c"} {
		if got, _ := f.srv.ReadFile(t, "apps", "main", "apps/"+app+"/kustomization.yaml"); got != kustomizationOf(f.image, "1.1.0") {
			t.Errorf("apps/%s:\n%s", app, got)
		}
	}
}

// Two repositories do not wait on each other: while one's push hangs,
// the other's change is written and reported.
func TestGitBatchRepositoriesDoNotWaitOnEachOther(t *testing.T) {
	f := newGitFixture(t, map[string][]string{"slow": {"a"}, "fast": {"b"}})
	w := newGatedWriter(testGitWriter(t))
	release := w.hold(f.srv.RepoURL("slow"))
	defer release()
	b := &collect.Batcher{Writer: w, Engine: idleEngine{}}
	stop := start(t, b)

	b.Add("ns/a", f.change("slow", "a", "1.1.0"))
	if diff := cmp.Diff([]string{"ns/a"}, w.nextApply(t)); diff != "" {
		t.Fatalf("first write (-want +got):\n%s", diff)
	}
	b.Add("ns/b", f.change("fast", "b", "1.1.0"))
	if diff := cmp.Diff([]string{"ns/b"}, w.nextApply(t)); diff != "" {
		t.Fatalf("second write (-want +got):\n%s", diff)
	}
	testwait.For(t, "the fast repository's commit while the slow one's push hangs", func() bool {
		return f.commits(t, "fast") == 1
	})
	if n := f.commits(t, "slow"); n != 0 {
		t.Errorf("slow: %d commits before its push was let go", n)
	}
	if n := b.Pending(); n != 1 {
		t.Errorf("Pending() = %d with the slow repository's Application being written", n)
	}
	release()
	testwait.For(t, "both writes to be settled", b.Idle)
	outs := stop()
	for _, key := range []string{"ns/a", "ns/b"} {
		if o := outcomeOf(t, outs, key); !o.Written() || o.Failed() {
			t.Errorf("%s: %+v, want written", key, o)
		}
	}
}

// An Application writing to two repositories is written in one batch,
// with one outcome that holds both commits, and waits while either
// repository is being written.
func TestGitBatchApplicationOfTwoRepositories(t *testing.T) {
	f := newGitFixture(t, map[string][]string{"one": {"a", "multi"}, "two": {"multi"}})
	w := newGatedWriter(testGitWriter(t))
	release := w.hold(f.srv.RepoURL("one"))
	b := &collect.Batcher{Writer: w, Engine: idleEngine{}}
	stop := start(t, b)

	b.Add("ns/a", f.change("one", "a", "1.1.0"))
	if diff := cmp.Diff([]string{"ns/a"}, w.nextApply(t)); diff != "" {
		t.Fatalf("first write (-want +got):\n%s", diff)
	}
	b.Add("ns/multi", f.change("one", "multi", "2.0.0"), f.change("two", "multi", "2.0.0"))
	release()
	if diff := cmp.Diff([]string{"ns/multi", "ns/multi"}, w.nextApply(t)); diff != "" {
		t.Fatalf("second write (-want +got):\n%s", diff)
	}
	testwait.For(t, "both writes to be settled", b.Idle)
	outs := stop()
	multi := outcomeOf(t, outs, "ns/multi")
	var repos []string
	for _, r := range multi.Results {
		if r.Err != nil || len(r.Updates) != 1 {
			t.Errorf("ns/multi result %+v, want one update", r)
		}
		repos = append(repos, r.Repo)
	}
	if diff := cmp.Diff([]string{f.srv.RepoURL("one"), f.srv.RepoURL("two")}, repos); diff != "" {
		t.Errorf("ns/multi's commits (-want +got):\n%s", diff)
	}
}

// A shutdown while a batch is in flight: the push finishes and is
// reported, then what arrived meanwhile is written, not lost.
func TestGitBatchShutdownWritesWhatWaitedForAPush(t *testing.T) {
	f := newGitFixture(t, map[string][]string{"apps": {"a", "b"}})
	w := newGatedWriter(testGitWriter(t))
	release := w.hold(f.srv.RepoURL("apps"))
	b := &collect.Batcher{Writer: w, Engine: idleEngine{}}
	r := &runner{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, b)
	}()

	b.Add("ns/a", f.change("apps", "a", "1.1.0"))
	w.nextApply(t)
	b.Add("ns/b", f.change("apps", "b", "1.1.0"))
	cancel()
	release()
	<-done
	if !b.Idle() {
		t.Error("the batcher is not idle after its loop ended")
	}
	for _, key := range []string{"ns/a", "ns/b"} {
		if o := outcomeOf(t, r.list(), key); !o.Written() || o.Failed() {
			t.Errorf("%s: %+v, want written", key, o)
		}
	}
	if n := f.commits(t, "apps"); n != 2 {
		t.Errorf("%d commits after the seed, want 2", n)
	}
}

// BenchmarkGitBatchLoneChange is the time from Add to the start of its
// write when the engine is idle and nothing is in flight: what a lone
// update waits in the batcher (it was a 2 s window before group commit).
func BenchmarkGitBatchLoneChange(b *testing.B) {
	started := make(chan struct{}, 1)
	bt := &collect.Batcher{Writer: applierFunc(func(context.Context, []gitwb.Change) ([]gitwb.Result, error) {
		started <- struct{}{}
		return nil, nil
	}), Engine: idleEngine{}}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&runner{}).run(ctx, bt)
	}()
	for i := 0; b.Loop(); i++ {
		bt.Add(fmt.Sprint("ns/app-", i), gitwb.Change{App: "app", RepoURL: "http://git/apps.git"})
		<-started
	}
	cancel()
	<-done
}

// applierFunc is an Applier whose Apply is the func.
type applierFunc func(context.Context, []gitwb.Change) ([]gitwb.Result, error)

func (f applierFunc) Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	return f(ctx, changes)
}
