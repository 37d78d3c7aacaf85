package controller

import (
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// unionOf is the merge repoInterests must equal: every Application's
// interests merged in key order.
func unionOf(byKey map[string]map[registry.Target]registry.Interest) map[registry.Target]registry.Interest {
	out := map[registry.Target]registry.Interest{}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		for repo, in := range byKey[k] {
			if old, ok := out[repo]; ok {
				in = old.Merge(in)
			}
			out[repo] = in
		}
	}
	return out
}

// Random Applications come, change and go; after each change the merged
// interests equal a merge over every Application, the poller is told
// exactly when they changed, and each target (a repository read through
// one client) lists its users.
func TestRepoInterestsMatchAFullMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clients := []*registry.Client{nil, nil, {}, {}}
	intervals := []time.Duration{0, 0, time.Minute, 5 * time.Minute}
	digests := [][]string{nil, nil, {"latest"}, {"main", "stable"}}
	var ri repoInterests
	want := map[string]map[registry.Target]registry.Interest{}
	union := map[registry.Target]registry.Interest{}
	for step := range 3000 {
		key := fmt.Sprintf("ns/app-%02d", rng.IntN(40))
		repos := map[registry.Target]registry.Interest{}
		for range rng.IntN(3) { // none: the Application is gone or uses no image
			t := registry.Target{Repo: fmt.Sprintf("reg.example/r%d", rng.IntN(6)), Client: clients[rng.IntN(len(clients))]}
			repos[t] = registry.Interest{
				Interval:     intervals[rng.IntN(len(intervals))],
				TrackDigests: digests[rng.IntN(len(digests))],
			}
		}
		if len(repos) == 0 {
			delete(want, key)
		} else {
			want[key] = repos
		}
		next := unionOf(want)
		got, changed := ri.set(key, repos)
		if wantChanged := !maps.EqualFunc(union, next, sameInterest); changed != wantChanged {
			t.Fatalf("step %d: set reported changed=%v, want %v", step, changed, wantChanged)
		}
		if changed && !maps.EqualFunc(got, next, sameInterest) {
			t.Fatalf("step %d: union %v, want %v", step, got, next)
		}
		union = next
		for target := range next {
			var users []string
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if _, ok := want[k][target]; ok {
					users = append(users, k)
				}
			}
			if diff := cmp.Diff(users, ri.keysOf(target)); diff != "" {
				t.Fatalf("step %d: users of %v (-want +got):\n%s", step, target, diff)
			}
		}
	}
}

// A cold start of many Applications on few repositories tells the poller
// once per new repository, not once per Application.
func TestRepoInterestsColdStartChangesOncePerRepository(t *testing.T) {
	var ri repoInterests
	changes := 0
	for i := range 1000 {
		repo := fmt.Sprintf("reg.example/r%d", i%10)
		if _, changed := ri.set(fmt.Sprintf("ns/app-%04d", i), map[registry.Target]registry.Interest{{Repo: repo}: {}}); changed {
			changes++
		}
	}
	if changes != 10 {
		t.Errorf("the union changed %d times, want 10 (once per repository)", changes)
	}
	if n := len(ri.keysOf(registry.Target{Repo: "reg.example/r3"})); n != 100 {
		t.Errorf("%d users of r3, want 100", n)
	}
}

// Workers record their Applications' repositories concurrently and hand
// the poller snapshots of the union in whatever order they get there: the
// poller must end up with every repository, never an older snapshot that
// lacks the newest one.
func TestSetReposGivesThePollerTheNewestUnion(t *testing.T) {
	const workers, rounds = 16, 50
	for round := range rounds {
		poller := &registry.Poller{}
		r := &ImageReconciler{Poller: poller}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range 8 {
					repo := fmt.Sprintf("reg.example/w%d-r%d", w, i)
					r.setRepos(fmt.Sprintf("ns/app-%d-%d", w, i), map[registry.Target]registry.Interest{{Repo: repo}: {}})
				}
			})
		}
		wg.Wait()
		if got := len(poller.Repos()); got != workers*8 {
			t.Fatalf("round %d: the poller has %d repositories, want %d", round, got, workers*8)
		}
	}
}

// Two Applications read one repository, one through its own pull secret:
// a change the shared client sees queues the Application that reads
// through it, and one the pull secret's client sees queues the other,
// so a pull secret that fails never hides a change from anybody else.
func TestRepoChangedQueuesTheApplicationsOfTheClientThatSawIt(t *testing.T) {
	shared, own := &registry.Client{}, &registry.Client{}
	q := &keyQueue{}
	r := &ImageReconciler{Registry: shared, Log: slog.New(slog.DiscardHandler), Queue: q}
	const repo = "reg.example/team/app"
	r.setRepos("team-a/web", map[registry.Target]registry.Interest{{Repo: repo}: {}})
	r.setRepos("team-b/web", map[registry.Target]registry.Interest{{Repo: repo, Client: own}: {}})
	tests := []struct {
		name   string
		client *registry.Client
		want   []string
	}{
		{name: "the poller's own client", client: nil, want: []string{"team-a/web"}},
		{name: "the shared client named", client: shared, want: []string{"team-a/web"}},
		{name: "the pull secret's client", client: own, want: []string{"team-b/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q.keys = nil
			r.RepoChanged(t.Context(), registry.RepoChange{Repo: repo, Client: tt.client, Added: []string{"2"}})
			if diff := cmp.Diff(tt.want, q.keys); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

// keyQueue is a WorkQueue that keeps the keys it is handed; it knows no
// Application and no first pass.
type keyQueue struct{ keys []string }

func (q *keyQueue) Enqueue(key string) { q.keys = append(q.keys, key) }

func (q *keyQueue) EnqueueAfter(key string, _ time.Duration) { q.Enqueue(key) }

func (*keyQueue) InFirstPass() bool { return false }

func (*keyQueue) App(string) *watcher.App { return nil }
