package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// options are the harness's flags.
type options struct {
	scenarios     []scenario
	rounds        map[string]bool
	out           string
	bin           string
	crowsnestArgs []string
	pollInterval  time.Duration
	// registryRate and registryConcurrency set the benchmark registry's
	// rateLimit and maxConcurrency in crowsnest's config; zero keeps
	// crowsnest's defaults.
	registryRate        float64
	registryConcurrency int
	roundTimeout        time.Duration
	pprof               bool
	keep                bool
	log                 io.Writer
	start               time.Time
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		o         options
		scen, rds string
		extra     string
	)
	fs.StringVar(&scen, "scenarios", "S1,S2,S3", "scenarios to run: S1 (N=100 K=10 T=50), S2 (N=1000 K=50 T=200), S3 (N=10000 K=500 T=200)")
	fs.StringVar(&rds, "rounds", "1,2,3,4,5,7", "rounds: 1 cold start, 2 steady state, 3 new tag (poll and webhook), 4 Git mode, 5 notifications, 6 push to deployed with a real Argo CD (opt-in; first scenario only), 7 cold start with 50 ms registry latency, 8 pull requests on a real Gitea (opt-in); 4, 5, 7 and 8 run for S1 and S2 only")
	argoOpts.register(fs)
	fs.StringVar(&o.out, "out", "bin/bench", "folder for results.json, results.md and profiles")
	fs.StringVar(&o.bin, "bin", "", "crowsnest binary to measure (default: go build ./cmd/crowsnest)")
	fs.StringVar(&extra, "crowsnest-args", "", "extra flags for `crowsnest run`, space separated (e.g. \"--kube-api-qps=200 --workers=8\")")
	fs.DurationVar(&o.pollInterval, "poll-interval", 0, "registries.pollInterval for crowsnest (default per scenario: 10s, 20s, 60s)")
	fs.Float64Var(&o.registryRate, "registry-rate-limit", 0, "registries.list[].rateLimit (requests/s) for the benchmark registry (default: crowsnest's)")
	fs.IntVar(&o.registryConcurrency, "registry-max-concurrency", 0, "registries.list[].maxConcurrency for the benchmark registry (default: crowsnest's)")
	fs.DurationVar(&o.roundTimeout, "round-timeout", 0, "give up on a round after this long (default per scenario: 2m, 5m, 15m)")
	fs.BoolVar(&o.pprof, "pprof", false, "save CPU profiles of rounds 1, 4 and 5 (25 s each while the round runs) and a heap profile after round 1 into -out")
	fs.BoolVar(&o.keep, "keep", false, "keep the work folder (control plane data, crowsnest logs, Git repositories)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, name := range strings.Split(scen, ",") {
		s, ok := findScenario(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (want S1, S2 or S3)", name)
		}
		o.scenarios = append(o.scenarios, s)
	}
	o.rounds = map[string]bool{}
	for _, r := range strings.Split(rds, ",") {
		r = strings.TrimSpace(r)
		if len(r) != 1 || r < "1" || r > "8" {
			return nil, fmt.Errorf("-rounds: unknown round %q (want 1 to 8)", r)
		}
		o.rounds[r] = true
	}
	if o.pollInterval != 0 && o.pollInterval < 5*time.Second {
		return nil, fmt.Errorf("-poll-interval: %s is below crowsnest's minimum of 5s", o.pollInterval)
	}
	if o.registryRate < 0 || o.registryConcurrency < 0 {
		return nil, errors.New("-registry-rate-limit and -registry-max-concurrency must not be negative")
	}
	o.crowsnestArgs = strings.Fields(extra)
	o.log, o.start = os.Stderr, time.Now()
	return &o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := mainErr(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	rep, err := run(ctx, o)
	if rep != nil {
		fmt.Fprint(os.Stdout, rep.markdown())
		fmt.Fprintf(os.Stderr, "bench: results in %s\n", o.out)
	}
	return err
}

// run measures every selected scenario and writes the report after each.
func run(ctx context.Context, o *options) (*report, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(root, o.out)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "crowsnest-bench-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintln(o.log, "bench: work folder", work)
	} else {
		defer os.RemoveAll(work)
	}
	if o.bin == "" {
		o.logf("building crowsnest")
		if o.bin, err = buildCrowsnest(ctx, root, work); err != nil {
			return nil, err
		}
	}
	rep := &report{Started: time.Now(), Machine: machine(), Commit: gitCommit(root), Args: o.crowsnestArgs}
	if o.registryRate > 0 {
		rep.Registry += fmt.Sprintf("rateLimit %g ", o.registryRate)
	}
	if o.registryConcurrency > 0 {
		rep.Registry += fmt.Sprintf("maxConcurrency %d", o.registryConcurrency)
	}
	rep.Registry = strings.TrimSpace(rep.Registry)
	for _, s := range o.scenarios {
		results, err := runScenario(ctx, o, s, filepath.Join(work, s.Name))
		rep.Results = append(rep.Results, results...)
		if err != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", s.Name, err))
		}
		if werr := rep.write(o.out); werr != nil {
			return rep, werr
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(rep.Failures) > 0 {
		return rep, fmt.Errorf("%d scenario(s) failed: %s", len(rep.Failures), strings.Join(rep.Failures, "; "))
	}
	return rep, nil
}

func (o *options) logf(format string, args ...any) {
	fmt.Fprintf(o.log, "bench %5.1fs: "+format+"\n", append([]any{time.Since(o.start).Seconds()}, args...)...)
}

// runScenario starts the parts for one scenario, seeds it and runs its
// rounds.
func runScenario(ctx context.Context, o *options, s scenario, dir string) ([]result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	opts := *o
	if opts.roundTimeout == 0 {
		opts.roundTimeout = s.RoundTimeout
	}
	e := &env{opts: &opts, s: s, dir: dir}
	o.logf("%s: starting etcd and kube-apiserver", s.Name)
	cpDir := filepath.Join(dir, "controlplane")
	if err := os.MkdirAll(cpDir, 0o755); err != nil {
		return nil, err
	}
	cl, err := startCluster(ctx, cpDir)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	e.cluster = cl
	if e.reg, err = startRegistry(dir); err != nil {
		return nil, err
	}
	defer e.reg.close()
	start := time.Now()
	if err := e.seedRegistry(ctx); err != nil {
		return nil, err
	}
	o.logf("%s: %d repositories with %d tags each pushed in %s", s.Name, s.K, s.T, time.Since(start).Round(time.Millisecond))

	var results []result
	step := func(name string, f func() ([]result, error)) error {
		o.logf("%s: %s", s.Name, name)
		rs, err := f()
		for i := range rs {
			r := &rs[i]
			o.logf("%s round %s (%s): %d/%d in %.2f s, CPU %.2f s, peak RSS %.1f MB", r.Scenario, r.Round, r.Title, r.Done, r.Want, r.WallSeconds, r.CPUSeconds, r.PeakRSSMB)
		}
		results = append(results, rs...)
		return err
	}
	one := func(f func(context.Context) (result, error)) func() ([]result, error) {
		return func() ([]result, error) {
			r, err := f(ctx)
			return []result{r}, err
		}
	}
	if o.rounds["1"] || o.rounds["2"] || o.rounds["3"] {
		if err := step("rounds 1-3, Kubernetes mode", func() ([]result, error) { return e.kubeRounds(ctx) }); err != nil {
			return results, err
		}
	}
	small := s.Name != "S3"
	if o.rounds["4"] && small {
		if err := step("round 4, Git mode", one(e.gitRound)); err != nil {
			return results, err
		}
	}
	if o.rounds["5"] && small {
		if err := step("round 5, notifications", one(e.notifyRound)); err != nil {
			return results, err
		}
	}
	if o.rounds["7"] && small {
		if err := step("round 7, cold start with registry latency", one(e.latencyRound)); err != nil {
			return results, err
		}
	}
	if o.rounds["8"] && small {
		if err := step("round 8, pull requests on Gitea", func() ([]result, error) { return e.prRound(ctx) }); err != nil {
			return results, err
		}
	}
	if o.rounds["6"] && s.Name == o.scenarios[0].Name {
		if err := step("round 6, push to deployed with Argo CD", func() ([]result, error) { return nil, e.argocdRound(ctx) }); err != nil {
			return results, err
		}
	}
	return results, nil
}

// machine describes where the numbers were taken.
func machine() string {
	desc := fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				desc += ", " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return desc + ", " + runtime.Version()
}

func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
