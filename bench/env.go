package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// webhookSecret authenticates the harness's registry webhooks; crowsnest
// reads it from the environment variable its config names.
const (
	webhookSecret    = "bench-webhook-secret"
	webhookSecretEnv = "BENCH_WEBHOOK_SECRET"
	// webhookBatch is how many push events go in one distribution
	// envelope, as the distribution registry batches them.
	webhookBatch = 50
)

// env is what every round of a scenario shares.
type env struct {
	opts    *options
	s       scenario
	dir     string
	cluster *cluster
	reg     *registry
	// pushers write each repository's tags, uncounted.
	pushers []*pusher
	// newest is the index of the newest tag in every repository.
	newest int
}

// seedRegistry pushes T tags to each of the K repositories.
func (e *env) seedRegistry(ctx context.Context) error {
	e.pushers = make([]*pusher, e.s.K)
	e.newest = e.s.T - 1
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for k := range e.s.K {
		g.Go(func() error {
			p, err := e.reg.pusher(ctx, e.s.repo(k))
			if err != nil {
				return err
			}
			e.pushers[k] = p
			for t := range e.s.T {
				if err := p.push(ctx, tag(t), t); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// pushAll pushes tag(t) to every repository.
func (e *env) pushAll(ctx context.Context, t int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, p := range e.pushers {
		g.Go(func() error { return p.push(ctx, tag(t), t) })
	}
	e.newest = max(e.newest, t)
	return g.Wait()
}

func (e *env) writeConfig(dir, extra string) (string, error) {
	var limits string
	if e.opts.registryRate > 0 {
		limits += fmt.Sprintf("\n      rateLimit: %g", e.opts.registryRate)
	}
	if e.opts.registryConcurrency > 0 {
		limits += fmt.Sprintf("\n      maxConcurrency: %d", e.opts.registryConcurrency)
	}
	cfg := fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
registries:
  pollInterval: %s
  list:
    - prefix: %s
      caFile: %s%s
  webhook:
    sources:
      - type: distribution
        secretEnv: %s
%s`, e.pollInterval(), e.reg.host, e.reg.caFile, limits, webhookSecretEnv, extra)
	path := filepath.Join(dir, "crowsnest.yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

func (e *env) pollInterval() time.Duration {
	if e.opts.pollInterval > 0 {
		return e.opts.pollInterval
	}
	return e.s.PollInterval
}

// startDaemon runs crowsnest for namespace ns with the config given.
func (e *env) startDaemon(dir, ns, config string) (*daemon, error) {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := e.cluster.env.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	return startDaemon(daemonOptions{
		bin: e.opts.bin, dir: dir, kubeconfig: kubeconfig, config: config, namespace: ns,
		extraArgs: e.opts.crowsnestArgs, env: []string{webhookSecretEnv + "=" + webhookSecret},
	})
}

// launch starts crowsnest for namespace ns with the benchmark's config
// plus extra, and a meter of the round that starts with the process (its
// counters and peak RSS are the round's).
func (e *env) launch(dir, ns, extra string, git *gitServer) (*daemon, *meter, error) {
	cfg, err := e.writeConfig(dir, extra)
	if err != nil {
		return nil, nil, err
	}
	base := e.reg.snapshot()
	d, err := e.startDaemon(dir, ns, cfg)
	if err != nil {
		return nil, nil, err
	}
	return d, &meter{d: d, reg: e.reg, git: git, registry: base, kube: map[string]int{}, rssRound: true}, nil
}

// endRound waits until crowsnest is idle for quiet (see settle) and fills
// r with what the round cost.
func (e *env) endRound(ctx context.Context, m *meter, r *result, quiet time.Duration) error {
	if err := settle(ctx, m.d, e.reg, quiet, 30*time.Second); err != nil {
		return err
	}
	return m.finish(ctx, e, r)
}

func (e *env) newResult(round, title string, want int) result {
	return result{Scenario: e.s.Name, N: e.s.N, K: e.s.K, T: e.s.T, Round: round, Title: title, Want: want}
}

// profileRound collects CPU profiles of the daemon (25 s each, under the
// pprof endpoint's write timeout) until the returned stop is called, with
// -pprof. Stop waits for the profile in flight (a cancelled one is lost)
// and may be called again.
func (e *env) profileRound(ctx context.Context, d *daemon, round string) (stop func()) {
	if !e.opts.pprof {
		return func() {}
	}
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stopped.Load() && ctx.Err() == nil; i++ {
			path := filepath.Join(e.opts.out, fmt.Sprintf("%s-round%s-cpu-%d.pprof", e.s.Name, round, i))
			err := d.profile(ctx, "profile", 25, path)
			if errors.Is(err, syscall.ECONNREFUSED) {
				i--
				time.Sleep(20 * time.Millisecond) // not listening yet
				continue
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopped.Store(true)
			<-done
		})
	}
}

// saveMetrics keeps crowsnest's /metrics at the end of a round, for
// finding out where the time went.
func (e *env) saveMetrics(ctx context.Context, d *daemon, r *result) {
	_, body, err := httpGet(ctx, "http://"+d.metricsAddr+"/metrics")
	if err != nil {
		return
	}
	name := fmt.Sprintf("%s-round%s-%s.metrics.txt", r.Scenario, r.Round, strings.ReplaceAll(strings.ReplaceAll(r.Title, " ", "-"), ",", ""))
	_ = os.WriteFile(filepath.Join(e.opts.out, name), []byte(body), 0o644)
}

func (e *env) saveHeap(ctx context.Context, d *daemon, round string) {
	if !e.opts.pprof {
		return
	}
	path := filepath.Join(e.opts.out, fmt.Sprintf("%s-round%s-heap.pprof", e.s.Name, round))
	if err := d.profile(ctx, "heap", 0, path); err != nil {
		fmt.Fprintln(os.Stderr, "bench: heap profile:", err)
	}
}
