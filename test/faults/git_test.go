package faults

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// gitRequests is every request the Git server answered so far.
func gitRequests(w *world) int {
	n := 0
	for _, k := range []testgit.Kind{testgit.KindInfoRefs, testgit.KindUploadPack, testgit.KindReceivePack, testgit.KindOther} {
		n += w.git.Count(k)
	}
	return n
}

// Another client pushes to the branch just before each of crowsnest's
// first pushes reaches git: crowsnest's push is rejected (non-fast-forward)
// and must fetch, re-apply and push again, keeping the other client's
// commits.
func TestGitConcurrentPusher(t *testing.T) {
	w := newWorld(t, "git-race", worldOptions{kubeApps: 2, gitApps: 6, repos: 2})
	const races = 3
	var raced atomic.Int64
	var race func()
	race = func() {
		n := raced.Add(1)
		w.git.Seed(t, gitRepo, "main", map[string]string{fmt.Sprintf("other/change-%d.txt", n): "theirs\n"}, fmt.Sprintf("concurrent change %d", n))
		if n < races {
			w.git.BeforePush(race)
		}
	}
	w.git.BeforePush(race)
	start := time.Now()
	d := w.daemon(t, "crowsnest")
	d.start(t)
	finish(t, w, start, "git push rejected (concurrent pusher)", func() string {
		return fmt.Sprintf("git: another client pushed just before %d of crowsnest's pushes", raced.Load())
	}, 0, d)
	if raced.Load() != races {
		t.Errorf("%d races injected, want %d", raced.Load(), races)
	}
	for i := 1; i <= int(raced.Load()); i++ {
		if _, ok := w.git.ReadFile(t, gitRepo, "main", fmt.Sprintf("other/change-%d.txt", i)); !ok {
			t.Errorf("the concurrent client's change %d is gone from main", i)
		}
	}
}

// The Git server's answer to a push that landed is lost (the connection
// is reset after git moved the branch): crowsnest cannot tell it
// succeeded. Its retry must neither commit the change again nor forget to
// announce it.
func TestGitPushAnswerLost(t *testing.T) {
	w := newWorld(t, "git-ack", worldOptions{kubeApps: 2, gitApps: 6, repos: 2})
	w.git.DropPushAcks(1)
	start := time.Now()
	d := w.daemon(t, "crowsnest")
	d.start(t)
	finish(t, w, start, "git push answer lost", func() string {
		return "git: the first push landed but its connection was reset before the answer"
	}, 0, d)
}

// The Git server is down for a moment: every request answered 503 for
// less than the writer's own retries.
func TestGitServerDownBriefly(t *testing.T) {
	w := newWorld(t, "git-down", worldOptions{kubeApps: 2, gitApps: 6, repos: 2})
	gitOutage(t, w, "git down briefly (503)", 5*time.Second, testgit.Down503, "503")
}

// The Git server fails for longer than the writer's retries: an outage
// (connections reset) and refused credentials (a rotated token, fixed
// later; not retried at once). The batch fails and its Applications come
// back a minute later. Both wait for that minute, so they run side by side.
func TestGitSlowRecovery(t *testing.T) {
	t.Run("down for a while", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, "git-down", worldOptions{kubeApps: 2, gitApps: 6, repos: 2})
		gitOutage(t, w, "git down for a while (resets)", 20*time.Second, testgit.DownDrop, "connection reset")
	})
	t.Run("auth failure", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, "git-auth", worldOptions{kubeApps: 2, gitApps: 6, repos: 2})
		start := time.Now()
		w.git.SetAuthFailure(true)
		d := w.daemon(t, "crowsnest")
		d.start(t)
		testwait.Within(t, "a Git write-back to fail on credentials", time.Minute, func() bool {
			return d.count(`"msg":"git write-back failed; will retry"`) > 0
		})
		refused := gitRequests(w)
		w.git.SetAuthFailure(false)
		fixed := time.Since(start)
		finish(t, w, start, "git auth failure, then fixed", func() string {
			return fmt.Sprintf("git: credentials refused for the first %s (%d requests), then accepted", fixed.Round(time.Second), refused)
		}, 0, d)
	})
}

// gitOutage makes the Git server unavailable for downFor from the start.
func gitOutage(t *testing.T, w *world, scenario string, downFor time.Duration, mode int, desc string) {
	t.Helper()
	start := time.Now()
	w.git.SetDown(downFor, mode)
	d := w.daemon(t, "crowsnest")
	d.start(t)
	time.Sleep(time.Until(start.Add(downFor))) // sleep-ok: fault duration: Git stays down until then
	failed := gitRequests(w)
	finish(t, w, start, scenario, func() string {
		return fmt.Sprintf("git: every request answered %s for the first %s (%d requests)", desc, downFor, failed)
	}, 0, d)
	if failed == 0 {
		t.Error("no Git request met the outage: the scenario tested nothing")
	}
}
