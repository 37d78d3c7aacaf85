package registry

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// fakeClock is a settable clock shared by a client and a poller.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// changeLog records what a poller reports.
type changeLog struct {
	mu      sync.Mutex
	changes []RepoChange
	ch      chan RepoChange
}

func (l *changeLog) RepoChanged(_ context.Context, c RepoChange) {
	l.mu.Lock()
	l.changes = append(l.changes, c)
	l.mu.Unlock()
	if l.ch != nil {
		l.ch <- c
	}
}

func (l *changeLog) take() []RepoChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.changes
	l.changes = nil
	return c
}

// cycle polls whatever is due, as Start's loop does until nothing is.
func cycle(ctx context.Context, p *Poller) {
	for {
		due := takeDue(p)
		if len(due) == 0 {
			return
		}
		pollAll(ctx, p, due)
	}
}

// takeDue takes the targets that may start polling now from a fresh look at
// all of them, as one turn of Start's loop does.
func takeDue(p *Poller) []*polledRepo {
	var q pollQueue
	p.scan(&q)
	return p.take(&q)
}

// pollAll polls the targets due took and waits for them.
func pollAll(ctx context.Context, p *Poller, due []*polledRepo) {
	var wg sync.WaitGroup
	for _, r := range due {
		wg.Go(func() { p.poll(ctx, r) })
	}
	wg.Wait()
}

// repoKeys names the repositories of targets due took, sorted.
func repoKeys(due []*polledRepo) []string {
	keys := make([]string, 0, len(due))
	for _, r := range due {
		keys = append(keys, r.key)
	}
	slices.Sort(keys)
	return keys
}

// shared polls each repository with the poller's own client.
func shared(interests map[string]Interest) map[Target]Interest {
	out := make(map[Target]Interest, len(interests))
	for repo, in := range interests {
		out[Target{Repo: repo}] = in
	}
	return out
}

func TestPollerReportsOnlyChanges(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "a:1.0", testreg.Image(t, t0, ""))
	reg.Push(t, "b:latest", testreg.Image(t, t0, ""))
	clock := &fakeClock{now: t0}
	m := NewMetrics(prometheus.NewRegistry())
	c := &Client{Hosts: fastHosts, Now: clock.Now}
	log := &changeLog{}
	p := &Poller{Client: c, Interval: time.Minute, Now: clock.Now, Listener: log, Metrics: m}
	a, b := reg.Host()+"/a", reg.Host()+"/b"
	p.SetInterests(shared(map[string]Interest{a: {}, b: {TrackDigests: []string{"latest"}}}))

	cycle(t.Context(), p)
	if got := log.take(); len(got) != 0 {
		t.Fatalf("first poll reported %v; it should only record a baseline", got)
	}
	cycle(t.Context(), p)
	if n := reg.Count("list", ""); n != 2 {
		t.Fatalf("%d list requests before the interval passed, want 2", n)
	}

	reg.Push(t, "a:1.1", testreg.Image(t, t0.Add(time.Hour), ""))
	reg.Push(t, "b:latest", testreg.Image(t, t0.Add(time.Hour), "")) // same tag, new digest
	clock.Add(time.Minute)
	cycle(t.Context(), p)
	got := log.take()
	newB, err := c.Digest(t.Context(), repoOf(t, reg, "b"), "latest", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []RepoChange{
		{Repo: a, Added: []string{"1.1"}, Tags: []string{"1.0", "1.1"}},
		{Repo: b, Tags: []string{"latest"}, Digests: map[string]string{"latest": newB}},
	}
	sortChanges(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if n := testutil.ToFloat64(m.pollsVec.WithLabelValues("changed")); n != 2 {
		t.Errorf("changed polls metric = %v, want 2", n)
	}

	// Dropping an interest stops its polls.
	p.SetInterests(shared(map[string]Interest{a: {}}))
	clock.Add(time.Minute)
	reg.Reset()
	cycle(t.Context(), p)
	if n, nb := reg.Count("list", "/a/"), reg.Count("list", "/b/"); n != 1 || nb != 0 {
		t.Errorf("after dropping b: %d lists of a, %d of b; want 1 and 0", n, nb)
	}
	if diff := cmp.Diff([]string{a}, p.Repos()); diff != "" {
		t.Errorf("repos (-want +got):\n%s", diff)
	}
}

func sortChanges(cs []RepoChange) {
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if cs[j].Repo < cs[i].Repo {
				cs[i], cs[j] = cs[j], cs[i]
			}
		}
	}
}

// TestManyApplicationsShareOneListPerRepository is issue 3's load shape:
// 200 Applications over 10 repositories make exactly 10 tag-list requests
// per poll cycle, and metadata of a digest already seen is never fetched
// again.
func TestManyApplicationsShareOneListPerRepository(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "u", Password: "p"})
	for r := range 10 {
		for v := range 3 {
			reg.Push(t, fmt.Sprintf("team/svc%d:1.%d.0", r, v), testreg.Image(t, t0.Add(time.Duration(v)*time.Hour), ""))
		}
	}
	clock := &fakeClock{now: t0}
	interval := time.Minute
	c := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "u", pass: "p"}, TagTTL: interval, Now: clock.Now}
	p := &Poller{Client: c, Interval: interval, Now: clock.Now}
	apps := make([]string, 200) // each Application's image, spelled as users do
	interests := map[string]Interest{}
	for i := range apps {
		apps[i] = fmt.Sprintf("%s/team/svc%d:1.0.0", reg.Host(), i%10)
		img, err := ParseImage(apps[i])
		if err != nil {
			t.Fatal(err)
		}
		interests[img.Repo()] = Interest{}
	}
	p.SetInterests(shared(interests))

	// Every app reads its repository's tags and every tag's metadata, as
	// newest-build selection does.
	reconcileAll := func() {
		var wg sync.WaitGroup
		for _, ref := range apps {
			wg.Go(func() {
				img, _ := ParseImage(ref)
				tags, err := c.Tags(t.Context(), img.Repository, 0)
				if err != nil {
					t.Error(err)
					return
				}
				for _, tag := range tags {
					if _, err := c.Metadata(t.Context(), img.Repository, tag, nil); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
	for round := 1; round <= 3; round++ {
		reg.Reset()
		cycle(t.Context(), p)
		reconcileAll()
		if n := reg.Count("list", ""); n != 10 {
			t.Errorf("cycle %d: %d tag-list requests, want 10", round, n)
		}
		manifests, blobs := reg.Count("manifest", ""), reg.Count("blob", "")
		if round == 1 && (manifests != 30 || blobs != 30) {
			t.Errorf("cycle 1: %d manifest and %d blob GETs, want 30 each (one per digest)", manifests, blobs)
		}
		if round > 1 && manifests+blobs != 0 {
			t.Errorf("cycle %d: %d manifest and %d blob GETs of digests already seen, want 0", round, manifests, blobs)
		}
		clock.Add(interval)
	}
}

func TestPollerStartRefreshAndStop(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	log := &changeLog{ch: make(chan RepoChange, 4)}
	c := &Client{Hosts: fastHosts}
	p := &Poller{Client: c, Interval: time.Hour, Listener: log}
	repo := reg.Host() + "/app"
	p.SetInterests(shared(map[string]Interest{repo: {}}))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()

	// Wait for the baseline poll, then push and tell the poller.
	testwait.For(t, "the baseline poll", func() bool { return reg.Count("list", "") > 0 })
	reg.Push(t, "app:2", testreg.Image(t, t0, ""))
	if p.Refresh(reg.Host() + "/nobody-uses-this") {
		t.Error("Refresh of an unused repository reported true")
	}
	if !p.Refresh(repo + ":2") {
		t.Fatal("Refresh of a polled repository reported false")
	}
	select {
	case ch := <-log.ch:
		if diff := cmp.Diff(RepoChange{Repo: repo, Added: []string{"2"}, Tags: []string{"1", "2"}, Refreshed: true}, ch); diff != "" {
			t.Errorf("change (-want +got):\n%s", diff)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported after Refresh")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestDiffSorted(t *testing.T) {
	tests := []struct {
		a, b, added, removed []string
	}{
		{a: nil, b: []string{"1"}, added: []string{"1"}},
		{a: []string{"1"}, b: nil, removed: []string{"1"}},
		{a: []string{"1", "3", "5"}, b: []string{"2", "3", "6"}, added: []string{"2", "6"}, removed: []string{"1", "5"}},
		{a: []string{"1", "2"}, b: []string{"1", "2"}},
	}
	for _, tt := range tests {
		added, removed := diffSorted(tt.a, tt.b)
		if diff := cmp.Diff([][]string{tt.added, tt.removed}, [][]string{added, removed}); diff != "" {
			t.Errorf("diffSorted(%v, %v) (-want +got):\n%s", tt.a, tt.b, diff)
		}
	}
}

// A cold start lists each repository once: the reconciles' selection
// lists it, and the poller's first poll (a baseline) takes that cached
// list instead of listing again. Later polls always ask the registry.
func TestPollerBaselineSharesTheReconcilesList(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "a:1.0", testreg.Image(t, t0, ""))
	clock := &fakeClock{now: t0}
	c := &Client{Hosts: fastHosts, Now: clock.Now, TagTTL: time.Minute}
	log := &changeLog{}
	p := &Poller{Client: c, Interval: time.Minute, Now: clock.Now, Listener: log}
	a := reg.Host() + "/a"

	if _, err := c.Tags(t.Context(), repoOf(t, reg, "a"), 0); err != nil { // a reconcile selects
		t.Fatal(err)
	}
	p.SetInterests(shared(map[string]Interest{a: {}}))
	cycle(t.Context(), p)
	if n := reg.Count("list", ""); n != 1 {
		t.Errorf("%d tag lists after a reconcile and the baseline poll, want 1", n)
	}

	reg.Push(t, "a:1.1", testreg.Image(t, t0.Add(time.Hour), ""))
	clock.Add(30 * time.Second) // the cached list is still fresh
	p.Refresh(a)
	cycle(t.Context(), p)
	if n := reg.Count("list", ""); n != 1 {
		t.Errorf("%d tag lists for the refresh after the baseline, want 1", n)
	}
	want := []RepoChange{{Repo: a, Added: []string{"1.1"}, Tags: []string{"1.0", "1.1"}, Refreshed: true}}
	if diff := cmp.Diff(want, log.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// While Hold holds (the engine's first pass), a repository's first poll
// takes the list the pass read however old, and it is not polled again on
// its interval; a webhook's refresh still is. Once Hold lets go, the held
// poll happens.
func TestPollerHoldKeepsOneListPerRepositoryThroughALongFirstPass(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "a:1.0", testreg.Image(t, t0, ""))
	reg.Push(t, "b:1.0", testreg.Image(t, t0, ""))
	clock := &fakeClock{now: t0}
	c := &Client{Hosts: fastHosts, Now: clock.Now, TagTTL: time.Minute}
	var holding sync.Map
	holding.Store("hold", true)
	log := &changeLog{}
	p := &Poller{Client: c, Interval: time.Minute, Now: clock.Now, Listener: log,
		Hold: holderFunc(func() bool { v, _ := holding.Load("hold"); return v.(bool) })}
	a, b := reg.Host()+"/a", reg.Host()+"/b"

	for _, r := range []string{"a", "b"} { // the pass reads both lists
		if _, err := c.Tags(t.Context(), repoOf(t, reg, r), 0); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(3 * time.Minute) // the pass outlasts the tag cache and the interval
	p.SetInterests(shared(map[string]Interest{a: {}, b: {}}))
	cycle(t.Context(), p)
	if n := reg.Count("list", ""); n != 2 {
		t.Fatalf("%d tag lists after the baseline polls during the pass, want the pass's 2", n)
	}
	clock.Add(2 * time.Minute)
	if due := takeDue(p); len(due) != 0 {
		t.Errorf("polled %v again on the interval while the first pass runs", repoKeys(due))
		pollAll(t.Context(), p, due)
	}
	reg.Push(t, "a:1.1", testreg.Image(t, t0.Add(time.Hour), "")) // resets the counts
	p.Refresh(a)
	cycle(t.Context(), p)
	if n := reg.Count("list", ""); n != 1 {
		t.Errorf("%d tag lists for a webhook's refresh during the pass, want 1", n)
	}
	if ch := log.take(); len(ch) != 1 || ch[0].Repo != a || !ch[0].Refreshed {
		t.Errorf("changes after the refresh = %+v, want a's", ch)
	}

	// A newly tracked digest (a digest-strategy Application met later in
	// the pass) needs its baseline now: a push meanwhile would become it.
	p.SetInterests(shared(map[string]Interest{a: {}, b: {TrackDigests: []string{"1.0"}}}))
	if due := takeDue(p); !slices.Contains(repoKeys(due), b) {
		t.Errorf("due with a newly tracked digest during the pass = %v, want %s", repoKeys(due), b)
	} else {
		pollAll(t.Context(), p, due)
	}

	clock.Add(2 * time.Minute)
	if due := takeDue(p); len(due) != 0 {
		t.Errorf("polled %v on the interval while the first pass runs", repoKeys(due))
	}
	holding.Store("hold", false)
	due := takeDue(p)
	if diff := cmp.Diff([]string{a, b}, repoKeys(due)); diff != "" {
		t.Errorf("due once the pass ended (-want +got):\n%s", diff)
	}
}

// A cold start hands the poller the union of interests once per new
// repository, each time whole: 500 repositories make 500 calls of up to
// 500 references.
func BenchmarkSetInterestsColdStart(b *testing.B) {
	refs := make([]string, 500)
	for i := range refs {
		refs[i] = fmt.Sprintf("registry.example.com/team-%d/svc-%03d", i%7, i)
	}
	for b.Loop() {
		p := &Poller{}
		interests := map[string]Interest{}
		for _, ref := range refs {
			interests[ref] = Interest{}
			p.SetInterests(shared(interests))
		}
	}
}

// A webhook's push can come before the repository's first poll (the
// reconciles selected from a list, the poller has not polled yet): the
// change is reported against the list the reconciles read, not taken
// into the baseline unreported.
func TestPollerRefreshBeforeTheFirstPollReportsThePush(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "a:1.0", testreg.Image(t, t0, ""))
	clock := &fakeClock{now: t0}
	c := &Client{Hosts: fastHosts, Now: clock.Now, TagTTL: time.Minute}
	log := &changeLog{}
	p := &Poller{Client: c, Interval: time.Minute, Now: clock.Now, Listener: log}
	a := reg.Host() + "/a"
	if _, err := c.Tags(t.Context(), repoOf(t, reg, "a"), 0); err != nil { // a reconcile selects
		t.Fatal(err)
	}
	p.SetInterests(shared(map[string]Interest{a: {}}))
	reg.Push(t, "a:1.1", testreg.Image(t, t0.Add(time.Hour), ""))
	p.Refresh(a)
	cycle(t.Context(), p)
	want := []RepoChange{{Repo: a, Added: []string{"1.1"}, Tags: []string{"1.0", "1.1"}, Refreshed: true}}
	if diff := cmp.Diff(want, log.take()); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// holderFunc is a Holder that calls the func.
type holderFunc func() bool

func (f holderFunc) InFirstPass() bool { return f() }
