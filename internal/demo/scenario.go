package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/daemon"
)

// Options are what a demo needs from its command.
type Options struct {
	// Dir is the demo's folder: the Git repository, the Applications, the
	// config, the clones and the daemon's log go there.
	Dir string
	// Out receives a line for each step, for people; nil discards them.
	Out io.Writer
	// Version is crowsnest's, as the daemon logs it.
	Version string
}

// Run runs the demo until its report: the registry, the Git repository,
// the webhook receiver and the Applications first, then the daemon in
// local mode; a newer image pushed midway; then what happened.
func Run(ctx context.Context, o Options) (*Report, error) {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	d := &scenario{say: say, dir: o.Dir, version: o.Version, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	// 1-4. The registry, the Git repository, the webhook sink, the
	// Applications and config.
	appsDir, cfgPath, cleanup, err := d.prepare(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// 5. The engine, as `crowsnest run --apps-dir` runs it.
	if d.logFile, err = os.Create(filepath.Join(o.Dir, "crowsnest.log")); err != nil {
		return nil, err
	}
	defer d.logFile.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	d.stopRun = stopRun
	if err := d.startEngine(runCtx, appsDir, cfgPath); err != nil {
		return nil, err
	}
	// 6. A newer image arrives.
	if err := d.pushAndWait(ctx); err != nil {
		return nil, err
	}
	// 7. The report.
	return d.report(ctx)
}

// scenario is one demo in progress: what each step set up, for the steps
// after it.
type scenario struct {
	say     func(format string, args ...any)
	dir     string
	regHost string
	// t0 is the creation time of the first tags; later tags are newer.
	t0     time.Time
	bare   string // the Git repository
	gitURL string
	seed   plumbing.Hash
	sink   *sink

	mu     sync.Mutex
	events []daemon.Event

	// The daemon: its version, its log, the daemon once started, its end
	// and how to stop it.
	version string
	logFile *os.File
	daemon  *daemon.Daemon
	done    chan error
	stopRun context.CancelFunc
}

var _ daemon.Observer = (*scenario)(nil)

// Observe records an Event of the daemon for the report, and says it.
func (d *scenario) Observe(ev daemon.Event) {
	d.mu.Lock()
	d.events = append(d.events, ev)
	d.mu.Unlock()
	d.say("event     %-12s %-16s %s", ev.App, ev.Reason, ev.Message)
}

// prepare starts the registry with images, seeds the Git repository,
// starts the webhook sink and writes the Applications and config;
// cleanup stops the sink, then the registry. On error what was started is
// stopped.
func (d *scenario) prepare(ctx context.Context) (appsDir, cfgPath string, cleanup func(), err error) {
	regHost, stopReg, err := startRegistry()
	if err != nil {
		return "", "", nil, err
	}
	d.regHost = regHost
	if err := d.pushImages(ctx); err != nil {
		stopReg()
		return "", "", nil, err
	}
	if err := d.seedGit(); err != nil {
		stopReg()
		return "", "", nil, err
	}
	if d.sink, err = startSink(d.say); err != nil {
		stopReg()
		return "", "", nil, err
	}
	cleanup = func() {
		d.sink.close()
		stopReg()
	}
	if appsDir, cfgPath, err = d.writeApps(); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return appsDir, cfgPath, cleanup, nil
}

// pushImages pushes images to the registry, older tags first.
func (d *scenario) pushImages(ctx context.Context) error {
	repos := slices.Sorted(func(yield func(string) bool) {
		for r := range images {
			if !yield(r) {
				return
			}
		}
	})
	for _, repo := range repos {
		for i, tag := range images[repo] {
			if err := pushImage(ctx, d.regHost, repo+":"+tag, d.t0.Add(time.Duration(i)*time.Hour)); err != nil {
				return err
			}
		}
		d.say("registry  %s/%s: %s", d.regHost, repo, strings.Join(images[repo], ", "))
	}
	return nil
}

// seedGit creates the bare Git repository web's write-back commits to.
func (d *scenario) seedGit() error {
	subst := strings.NewReplacer("{{REGISTRY}}", d.regHost)
	d.bare = filepath.Join(d.dir, "git", "deploy.git")
	d.gitURL = "file://" + filepath.ToSlash(d.bare)
	seed, err := seedRepo(d.bare, filepath.Join(d.dir, "seed"), subst)
	if err != nil {
		return fmt.Errorf("creating the demo's Git repository: %w", err)
	}
	d.seed = seed
	d.say("git       %s (main at %s)", d.gitURL, seed.String()[:7])
	return nil
}

// writeApps writes the Applications and the config, pointed at the
// registry, the Git repository and the sink.
func (d *scenario) writeApps() (appsDir, cfgPath string, _ error) {
	subst := strings.NewReplacer("{{REGISTRY}}", d.regHost, "{{GIT}}", d.gitURL, "{{WEBHOOK}}", d.sink.url)
	appsDir, cfgPath = filepath.Join(d.dir, "apps"), filepath.Join(d.dir, "config.yaml")
	if err := copyFiles("demo/apps", appsDir, subst); err != nil {
		return "", "", err
	}
	if err := copyFile("demo/config.yaml", cfgPath, subst); err != nil {
		return "", "", err
	}
	d.say("apps      web (Git write-back), api (Kubernetes mode), worker (project with a deny window)")
	return appsDir, cfgPath, nil
}

// startEngine builds the daemon as `crowsnest run --apps-dir` does, its
// Events observed, and runs it in the background.
func (d *scenario) startEngine(runCtx context.Context, appsDir, cfgPath string) error {
	logFormat := "json"
	dm, err := daemon.New(runCtx, daemon.Options{
		AppsDir: appsDir, ConfigPath: cfgPath, GitCacheDir: filepath.Join(d.dir, "cache"),
		MetricsAddr: "0", ProbeAddr: "0", WebhookAddr: "0", PprofAddr: "0",
		Overrides: daemon.Overrides{LogFormat: &logFormat},
		Version:   d.version, Stderr: d.logFile, Observer: d,
	})
	if err != nil {
		return fmt.Errorf("crowsnest did not start (log: %s): %w", d.logFile.Name(), err)
	}
	d.daemon = dm
	d.done = make(chan error, 1)
	go func() { d.done <- dm.Run(runCtx) }()
	return nil
}

// fail stops the daemon and says which step failed, with its error.
func (d *scenario) fail(step string, err error) error {
	d.stopRun()
	if serr := <-d.done; serr != nil && !errors.Is(serr, context.Canceled) {
		err = fmt.Errorf("%w; crowsnest: %w", err, serr)
	}
	return fmt.Errorf("%s: %w (daemon log: %s; keep it with --keep)", step, err, d.logFile.Name())
}

// pushAndWait waits for the first pass, pushes push and tells
// crowsnest (as a registry webhook would), then waits for the update and
// the pass after it.
func (d *scenario) pushAndWait(ctx context.Context) error {
	d.say("crowsnest first pass...")
	if err := d.daemon.WaitIdle(ctx); err != nil {
		return d.fail("waiting for the first pass", err)
	}
	if err := pushImage(ctx, d.regHost, push, d.t0.Add(24*time.Hour)); err != nil {
		return d.fail("pushing "+push, err)
	}
	d.say("registry  pushed %s/%s; telling crowsnest", d.regHost, push)
	repo, tag, _ := strings.Cut(push, ":")
	d.daemon.Refresh(d.regHost + "/" + repo)
	if err := waitUntil(ctx, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return slices.ContainsFunc(d.events, func(ev daemon.Event) bool {
			return ev.Reason == controller.EventImagesUpdated && strings.Contains(ev.Message, "-> "+tag)
		})
	}); err != nil {
		return d.fail("waiting for the update to "+tag, err)
	}
	if err := d.daemon.WaitIdle(ctx); err != nil {
		return d.fail("waiting for the second pass", err)
	}
	return nil
}

// report sorts the Events into the report, stops the daemon and adds the
// commits and the notifications as sent.
func (d *scenario) report(ctx context.Context) (*Report, error) {
	rep := &Report{Registry: d.regHost, Git: d.gitURL}
	d.mu.Lock()
	for _, ev := range d.events {
		d.reportEvent(ctx, rep, ev)
	}
	d.mu.Unlock()
	d.stopRun()
	if err := <-d.done; err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("crowsnest: %w (log: %s)", err, d.logFile.Name())
	}
	var err error
	if rep.Commits, err = repoCommits(d.bare, d.seed); err != nil {
		return nil, err
	}
	for _, b := range d.sink.bodies() {
		rep.Notifications = append(rep.Notifications, Notification{Body: b})
	}
	return rep, nil
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
