package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// The harness's own traffic (seeding, status updates, watching) is not
// crowsnest's: it runs on a client whose limiter never slows it, with a
// bounded number of goroutines.
const (
	setupWorkers = 32
	setupQPS     = 5000
	setupBurst   = 5000
)

// cluster is the control plane plus the harness's clients.
type cluster struct {
	env  *testenv.Env
	dyn  dynamic.Interface
	core kubernetes.Interface
}

func startCluster(ctx context.Context, dir string) (*cluster, error) {
	env, err := testenv.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = setupQPS, setupBurst
	c := &cluster{env: env}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		env.Stop()
		return nil, err
	}
	if c.core, err = kubernetes.NewForConfig(cfg); err != nil {
		env.Stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) stop() { c.env.Stop() }

func (c *cluster) apps(ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(testenv.ApplicationsGVR).Namespace(ns)
}

func (c *cluster) createNamespace(ctx context.Context, name string) error {
	_, err := c.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// createGitSecret stores the Git server's credentials as an Argo CD
// repository Secret in ns, where crowsnest looks for them.
func (c *cluster) createGitSecret(ctx context.Context, ns, repoURL string) error {
	return c.createArgoSecret(ctx, ns, "repository", repoURL, gitUser, gitPassword)
}

// createArgoSecret stores Git credentials as an Argo CD Secret of type
// typ ("repository" for url exactly, "repo-creds" for every repository
// under it) in ns.
func (c *cluster) createArgoSecret(ctx context.Context, ns, typ, url, user, password string) error {
	_, err := c.core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + typ, Labels: map[string]string{"argocd.argoproj.io/secret-type": typ}},
		StringData: map[string]string{"url": url, "username": user, "password": password},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the Git %s Secret: %w", typ, err)
	}
	return nil
}

// createApps creates n Applications from obj(i) and then writes their
// status, as Argo CD would have (Argo CD's CRD has no status subresource:
// its controller writes status through the Application itself).
func (c *cluster) createApps(ctx context.Context, ns string, n int, obj func(i int) (spec, status map[string]any)) error {
	apps := c.apps(ns)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(setupWorkers)
	for i := range n {
		g.Go(func() error {
			o, status := obj(i)
			created, err := apps.Create(ctx, &unstructured.Unstructured{Object: o}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating Application %d: %w", i, err)
			}
			created.Object["status"] = status
			if _, err := apps.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("writing the status of Application %d: %w", i, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// floorAnnotation is the annotation the floor writes.
const floorAnnotation = "bench.crowsnest.dev/floor"

// floor measures what the apiserver alone needs for a cold pass over the
// n Applications of ns: one list and one patch each (an annotation no one
// reads), as fast as the harness's unthrottled client can. It ends when
// tr, the harness's watch, has seen every patch, as a round ends when the
// same watch has seen crowsnest's last patch: both include the watch's
// delivery of the last write. When the last patch was answered is kept
// beside it, for the report.
func (c *cluster) floor(ctx context.Context, ns string, n int, tr *tracker) (floorRun, error) {
	apps := c.apps(ns)
	start := time.Now()
	var names []string
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := apps.List(ctx, opts)
		if err != nil {
			return floorRun{}, err
		}
		for i := range list.Items {
			names = append(names, list.Items[i].GetName())
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if len(names) != n {
		return floorRun{}, fmt.Errorf("floor: listed %d Applications, want %d", len(names), n)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(setupWorkers)
	patch := []byte(`{"metadata":{"annotations":{"` + floorAnnotation + `":"1"}}}`)
	for _, name := range names {
		g.Go(func() error {
			_, err := apps.Patch(gctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return floorRun{}, fmt.Errorf("floor: %w", err)
	}
	answered := time.Since(start)
	seen, err := tr.waitMarked(ctx, n)
	if err != nil {
		return floorRun{}, fmt.Errorf("floor: %w", err)
	}
	return floorRun{seen: latest(seen).Sub(start), answered: answered}, nil
}

// floorRun is a floor's time: until the harness's watch saw every patch
// (the floor rounds are compared with), and until the last was answered.
type floorRun struct{ seen, answered time.Duration }

// tracker watches the Applications of a namespace and records when each
// first carried each image tag in spec.source.kustomize.images, and when
// each first carried the floor's annotation.
type tracker struct {
	mu     sync.Mutex
	tag    map[string]string               // app -> current tag
	seenAt map[string]map[string]time.Time // tag -> app -> first seen
	marked map[string]time.Time            // app -> floor annotation first seen
	// refreshed is when app last gained Argo CD's refresh annotation
	// (round 6: when crowsnest asked Argo CD to look at its commit).
	refreshed  map[string]time.Time
	refreshing map[string]struct{}
	cond       chan struct{} // closed and replaced on every change
}

func (c *cluster) track(ctx context.Context, ns string) (*tracker, error) {
	t := &tracker{tag: map[string]string{}, seenAt: map[string]map[string]time.Time{}, marked: map[string]time.Time{}, refreshed: map[string]time.Time{}, refreshing: map[string]struct{}{}, cond: make(chan struct{})}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, ns, nil)
	inf := f.ForResource(testenv.ApplicationsGVR).Informer()
	// Keep only what the tracker reads: 10,000 whole Applications would
	// make the harness, on the same machine, the biggest process measured.
	if err := inf.SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		slim := &unstructured.Unstructured{Object: map[string]any{}}
		slim.SetName(u.GetName())
		slim.SetNamespace(u.GetNamespace())
		slim.SetResourceVersion(u.GetResourceVersion())
		if images, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images"); found {
			_ = unstructured.SetNestedStringSlice(slim.Object, images, "spec", "source", "kustomize", "images")
		}
		kept := map[string]string{}
		for _, k := range []string{floorAnnotation, refreshAnnotation} {
			if v, ok := u.GetAnnotations()[k]; ok {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			slim.SetAnnotations(kept)
		}
		return slim, nil
	}); err != nil {
		return nil, err
	}
	record := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		now := time.Now()
		t.observe(u.GetName(), kustomizeTag(u), now)
		if _, ok := u.GetAnnotations()[floorAnnotation]; ok {
			t.mark(u.GetName(), now)
		}
		t.refresh(u.GetName(), u.GetAnnotations()[refreshAnnotation] != "", now)
	}
	if err := watchInformer(ctx, inf, f.Start, record); err != nil {
		return nil, fmt.Errorf("watching Applications in %s: %w", ns, err)
	}
	return t, nil
}

// watchInformer calls record with every object inf adds or updates, starts
// it (start is its factory's Start) and waits until its cache is synced.
func watchInformer(ctx context.Context, inf cache.SharedIndexInformer, start func(stop <-chan struct{}), record func(obj any)) error {
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return err
	}
	start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("cache did not sync")
	}
	return nil
}

func (t *tracker) observe(app, tag string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tag[app] == tag {
		return
	}
	t.tag[app] = tag
	if t.seenAt[tag] == nil {
		t.seenAt[tag] = map[string]time.Time{}
	}
	if _, ok := t.seenAt[tag][app]; !ok {
		t.seenAt[tag][app] = at
	}
	close(t.cond)
	t.cond = make(chan struct{})
}

// refreshAnnotation is Argo CD's; crowsnest sets it after a commit.
const refreshAnnotation = "argocd.argoproj.io/refresh"

// refresh records when app gains the refresh annotation (on is whether
// it carries it now).
func (t *tracker) refresh(app string, on bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, had := t.refreshing[app]
	switch {
	case on && !had:
		t.refreshing[app] = struct{}{}
		t.refreshed[app] = at
	case !on:
		delete(t.refreshing, app)
	}
}

// refreshedSince is when app last gained the refresh annotation, if that
// was at or after since.
func (t *tracker) refreshedSince(app string, since time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.refreshed[app]
	return at, ok && !at.Before(since)
}

// mark records that app carries the floor's annotation.
func (t *tracker) mark(app string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.marked[app]; ok {
		return
	}
	t.marked[app] = at
	close(t.cond)
	t.cond = make(chan struct{})
}

// waitAll waits until n Applications have carried tag and returns when
// each first did.
func (t *tracker) waitAll(ctx context.Context, tag string, n int) (map[string]time.Time, error) {
	return t.wait(ctx, n, "tag "+tag, func() map[string]time.Time { return t.seenAt[tag] })
}

// waitMarked waits until n Applications have carried the floor's
// annotation and returns when each first did.
func (t *tracker) waitMarked(ctx context.Context, n int) (map[string]time.Time, error) {
	return t.wait(ctx, n, "the floor's annotation", func() map[string]time.Time { return t.marked })
}

// wait waits until seen (read under t.mu) holds n Applications and
// returns a copy.
func (t *tracker) wait(ctx context.Context, n int, what string, seen func() map[string]time.Time) (map[string]time.Time, error) {
	for {
		t.mu.Lock()
		got := len(seen())
		ch := t.cond
		var out map[string]time.Time
		if got >= n {
			out = maps.Clone(seen())
		}
		t.mu.Unlock()
		if out != nil {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d Applications carry %s: %w", got, n, what, ctx.Err())
		case <-ch:
		}
	}
}

// count is how many Applications have carried tag so far.
func (t *tracker) count(tag string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seenAt[tag])
}

// kustomizeTag is the tag of the first spec.source.kustomize.images entry.
func kustomizeTag(u *unstructured.Unstructured) string {
	images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
	if len(images) == 0 {
		return ""
	}
	ref := images[0]
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[i+1:]
	}
	return ""
}
