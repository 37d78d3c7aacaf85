package controller

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
)

// enqueued records the keys tagWaits puts back on the queue.
type enqueued struct {
	mu   sync.Mutex
	keys []string
}

func (e *enqueued) add(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keys = append(e.keys, key)
}

func (e *enqueued) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, k := range e.keys {
		if k == key {
			n++
		}
	}
	return n
}

func pushRepos(t *testing.T, reg *testreg.OCI, n int) []registry.Repository {
	t.Helper()
	img := testreg.Image(t, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), "linux/amd64")
	repos := make([]registry.Repository, n)
	for i := range n {
		reg.Push(t, fmt.Sprintf("team/r%03d:1.0.0", i), img)
		repo, err := registry.ParseRepo(fmt.Sprintf("%s/team/r%03d", reg.Host(), i))
		if err != nil {
			t.Fatal(err)
		}
		repos[i] = repo
	}
	return repos
}

// An Application with two images goes back on the queue once, when the
// slower of its lists was read: back earlier, it would hold a worker
// reading the other itself.
func TestTagWaitEnqueuesAfterTheLastList(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	repos := pushRepos(t, reg, 2)
	release := make(chan struct{})
	reg.SetFault(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/team/r000/tags/list") {
			<-release
		}
		return false
	})
	var once sync.Once
	defer once.Do(func() { close(release) })
	client := &registry.Client{}
	var w tagWaits
	var q enqueued
	wants := []tagWant{{client, repos[0]}, {client, repos[1]}}
	if !w.wait(t.Context(), "ns/app", wants, MaxFirstPass, q.add) {
		t.Fatal("the Application did not wait for its two lists")
	}
	testwait.For(t, "the second list to be read", func() bool {
		_, ok := client.CachedTags(repos[1], MaxFirstPass)
		return ok
	})
	// The reader is done with the second list once it is off the map and
	// no enqueue is under way: an enqueue on it would be done by now.
	testwait.For(t, "the reader to be done with the second list", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, reading := w.lists[tagList{client, registry.RepoKey(repos[1])}]
		return !reading && w.enqueuing == 0
	})
	if n := q.count("ns/app"); n != 0 {
		t.Errorf("enqueued %d times while its other list was being read", n)
	}
	if !w.pending() {
		t.Error("not pending while a list is being read for a waiting key")
	}
	once.Do(func() { close(release) })
	testwait.For(t, "the Application to be enqueued", func() bool { return q.count("ns/app") > 0 })
	testwait.For(t, "nothing pending", func() bool { return !w.pending() })
	if n := q.count("ns/app"); n != 1 {
		t.Errorf("enqueued %d times, want 1", n)
	}
	if w.wait(t.Context(), "ns/app", wants, time.Nanosecond, q.add) {
		t.Error("the Application waited twice in one pass")
	}
}

// A list queued while the running reader is stuck on a slow registry
// answer gets a reader of its own.
func TestTagWaitDoesNotQueueBehindASlowList(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	repos := pushRepos(t, reg, 2)
	held, release := make(chan struct{}), make(chan struct{})
	var heldOnce sync.Once
	reg.SetFault(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/team/r000/tags/list") {
			heldOnce.Do(func() { close(held) })
			<-release
		}
		return false
	})
	defer close(release)
	client := &registry.Client{}
	var w tagWaits
	var q enqueued
	if !w.wait(t.Context(), "ns/slow", []tagWant{{client, repos[0]}}, MaxFirstPass, q.add) {
		t.Fatal("the first Application did not wait")
	}
	<-held // its reader is inside the slow list now
	if !w.wait(t.Context(), "ns/fast", []tagWant{{client, repos[1]}}, MaxFirstPass, q.add) {
		t.Fatal("the second Application did not wait")
	}
	testwait.For(t, "the second Application to be enqueued while the first list is held", func() bool { return q.count("ns/fast") == 1 })
	if q.count("ns/slow") != 0 {
		t.Error("the held list's Application was enqueued")
	}
}

// Lists for waiting Applications are read a few at a time, each with its
// own timeout from when it starts: booked all at once on the registry's
// rate limiter, the later ones would time out waiting for their turn.
func TestTagWaitReadsAFewListsAtATime(t *testing.T) {
	const n = 60 // at 20/s, 3 s for the last in line
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	repos := pushRepos(t, reg, n)
	client := &registry.Client{
		Hosts:          sameHosts{RateLimit: 20, Burst: 1},
		RequestTimeout: 2 * time.Second,
	}
	var w tagWaits
	var q enqueued
	for i, repo := range repos {
		if !w.wait(t.Context(), fmt.Sprintf("ns/app-%d", i), []tagWant{{client, repo}}, MaxFirstPass, q.add) {
			t.Fatalf("app-%d did not wait", i)
		}
	}
	testwait.For(t, "every Application to be enqueued", func() bool { return !w.pending() })
	for i, repo := range repos {
		if _, ok := client.CachedTags(repo, MaxFirstPass); !ok {
			t.Errorf("%s: not read (timed out in line?)", repo)
		}
		if c := q.count(fmt.Sprintf("ns/app-%d", i)); c != 1 {
			t.Errorf("app-%d enqueued %d times, want 1", i, c)
		}
	}
	if got := reg.Count("list", ""); got != n {
		t.Errorf("%d tag lists, want %d", got, n)
	}
}

// sameHosts is registry.Hosts that gives every host the same settings.
type sameHosts registry.HostConfig

func (s sameHosts) HostConfig(string) registry.HostConfig { return registry.HostConfig(s) }
