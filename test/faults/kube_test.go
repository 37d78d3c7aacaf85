package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// apiserverDownFor is how long the kube-apiserver stays stopped.
const apiserverDownFor = 5 * time.Second

// The kube-apiserver process is stopped while crowsnest is writing (etcd
// keeps the data) and started again: watches, patches, Events, the
// outbox's and the trigger state's ConfigMaps all fail meanwhile.
func TestKubeAPIServerRestart(t *testing.T) {
	w := newWorld(t, "apiserver", worldOptions{kubeApps: 20, gitApps: 20, repos: 4, hooks: 4})
	start := time.Now()
	d := w.daemon(t, "crowsnest")
	d.start(t)
	testwait.Within(t, "the first image update", time.Minute, func() bool { return d.count(`"msg":"images updated"`) > 0 })
	before := d.count(`"msg":"images updated"`)
	if err := env.StopAPIServer(); err != nil {
		t.Fatalf("stopping the apiserver: %v", err)
	}
	stopped := time.Now()
	time.Sleep(apiserverDownFor) // sleep-ok: fault duration: the apiserver stays down
	if err := env.StartAPIServer(context.WithoutCancel(t.Context())); err != nil {
		t.Fatalf("starting the apiserver again: %v\n%s", err, env.APIServerLog())
	}
	down := time.Since(stopped)
	t.Logf("apiserver down for %s; %d of %d Applications were updated before", down.Round(100*time.Millisecond), before, len(w.apps))
	finish(t, w, start, "kube-apiserver restarted mid-run", func() string {
		return fmt.Sprintf("kube-apiserver stopped after %d of %d updates, started again %s later", before, len(w.apps), down.Round(100*time.Millisecond))
	}, 0, d)
	if before >= len(w.apps) {
		t.Errorf("every update was done before the restart: the scenario tested nothing mid-run")
	}
}

// Another writer keeps updating the Applications (an annotation, as a
// person or another controller would) while crowsnest patches them:
// crowsnest's patches meet conflicts, both writers' changes survive.
func TestApplicationWriteConflicts(t *testing.T) {
	w := newWorld(t, "conflicts", worldOptions{kubeApps: 10, gitApps: 4, repos: 2, config: "log: {level: debug}\n"})
	const touchKey = "faults.crowsnest.dev/touched"
	var (
		writes, ownConflicts atomic.Int64
		lastMu               sync.Mutex
		last                 = map[string]string{}
	)
	// One writer per Application, each in a tight loop, so that most of
	// crowsnest's read-then-patch windows see the object change. They stop
	// between requests, never inside one, so the last value each wrote is
	// known.
	var stop atomic.Bool
	ctx := t.Context()
	var wg sync.WaitGroup
	for _, a := range w.apps {
		if a.git {
			continue
		}
		wg.Go(func() {
			for n := 0; !stop.Load() && ctx.Err() == nil; n++ {
				u, err := w.appClient().Get(ctx, a.name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				ann := u.GetAnnotations()
				ann[touchKey] = strconv.Itoa(n)
				u.SetAnnotations(ann)
				_, err = w.appClient().Update(ctx, u, metav1.UpdateOptions{})
				switch {
				case apierrors.IsConflict(err):
					ownConflicts.Add(1)
				case err == nil:
					writes.Add(1)
					lastMu.Lock()
					last[a.name] = strconv.Itoa(n)
					lastMu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	d := w.daemon(t, "crowsnest")
	d.start(t)
	testwait.Within(t, "every Kubernetes-mode update", 2*time.Minute, func() bool {
		list, err := w.appClient().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		updated := 0
		for i := range list.Items {
			if list.Items[i].GetGeneration() > 1 {
				updated++
			}
		}
		return updated == 10
	})
	time.Sleep(2 * time.Second) // sleep-ok: load duration: keep writing a little after the last patch
	stop.Store(true)
	wg.Wait()
	crowsnestConflicts := d.count(`"msg":"Application changed while patching; reading it again"`)
	finish(t, w, start, "Application write conflicts", func() string {
		return fmt.Sprintf("another writer updated the Applications %d times meanwhile; crowsnest's patches met %d conflicts, the other writer %d",
			writes.Load(), crowsnestConflicts, ownConflicts.Load())
	}, 0, d)
	if crowsnestConflicts == 0 {
		t.Error("crowsnest met no conflict: the scenario tested nothing")
	}
	for _, a := range w.apps {
		if a.git {
			continue
		}
		u, err := w.appClient().Get(t.Context(), a.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := u.GetAnnotations()[touchKey], last[a.name]; got != want {
			t.Errorf("%s: the other writer's last change (%s=%s) was lost: %q", a.name, touchKey, want, got)
		}
	}
}
