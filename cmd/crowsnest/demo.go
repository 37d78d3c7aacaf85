package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/examples"
)

// The demo: an embedded registry, a Git repository and a webhook sink on
// loopback, the Applications of examples/demo read through the file source,
// and the same engine `run` uses. It pushes a newer tag mid-run, then
// reports what happened.

type demoOptions struct {
	output  string
	keep    bool
	timeout time.Duration
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch crowsnest do its whole job on a laptop: no cluster, no network",
		Long: `Demo starts an OCI registry, a Git repository and a webhook receiver on
127.0.0.1, reads the Applications of examples/demo (embedded in the binary)
through the file source and runs the same engine as "crowsnest run":

  web     kustomize, Git write-back: a commit to its kustomization.yaml
  api     Helm, Kubernetes mode: a patch of its Helm parameters
  worker  in a project whose deny sync window is open: the update is held

Notifications of crowsnest's image events go to the webhook receiver. Midway
the demo pushes a newer web image, as a CI pipeline would, and the registry
tells crowsnest. It ends with a report: what was found, committed (the diff),
patched and held, and the notifications as sent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "report format: text or json")
	f.BoolVar(&o.keep, "keep", false, "keep the demo's folder (Git repository, Applications, config, daemon log) and print where it is")
	f.DurationVar(&o.timeout, "timeout", 50*time.Second, "give up when the demo takes longer than this")
	return cmd
}

// demoReport is what the demo shows at the end; -o json prints it as is.
type demoReport struct {
	Registry string  `json:"registry"`
	Git      string  `json:"git"`
	Folder   string  `json:"folder,omitempty"`
	Seconds  float64 `json:"seconds"`
	// Found lists each update crowsnest decided, as its Event says.
	Found         []AppEvent         `json:"found"`
	Commits       []demoCommit       `json:"commits"`
	Patched       []demoPatch        `json:"patched"`
	Held          []AppEvent         `json:"held"`
	Notifications []demoNotification `json:"notifications"`
	// Warnings are Warning Events; a clean demo has none.
	Warnings []AppEvent `json:"warnings"`
}

type demoCommit struct {
	SHA     string `json:"sha"`
	Message string `json:"message"`
	Diff    string `json:"diff"`
}

type demoPatch struct {
	App string `json:"app"`
	// Source is the Application's spec.source after the patch, as YAML.
	Source string `json:"source"`
}

type demoNotification struct {
	Body string `json:"body"`
}

// demoImages are the tags the registry starts with; demoPush is pushed
// mid-run.
var (
	demoImages = map[string][]string{
		"demo/web":    {"1.0.0", "1.1.0"},
		"demo/api":    {"2.0.0", "2.1.0", "3.0.0"},
		"demo/worker": {"3.0.0", "3.1.0"},
	}
	demoPush = "demo/web:1.2.0"
)

// demoRun is one demo in progress: what each step set up, for the steps
// after it.
type demoRun struct {
	say     func(format string, args ...any)
	dir     string
	regHost string
	// t0 is the creation time of the first tags; later tags are newer.
	t0     time.Time
	bare   string // the Git repository
	gitURL string
	seed   plumbing.Hash
	sink   *demoSink

	mu     sync.Mutex
	events []AppEvent

	// The daemon: its log, its parts once started, its end and how to
	// stop it.
	logFile *os.File
	parts   *runParts
	done    chan error
	stopRun context.CancelFunc
}

func (o *demoOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	d := &demoRun{say: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

	dir, err := os.MkdirTemp("", "crowsnest-demo-")
	if err != nil {
		return err
	}
	d.dir = dir
	if o.keep {
		defer d.say("the demo's folder is kept: %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	// 1-4. The registry, the Git repository, the webhook sink, the
	// Applications and config.
	appsDir, cfgPath, cleanup, err := d.prepare(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	// 5. The engine, as `crowsnest run --apps-dir` runs it.
	if d.logFile, err = os.Create(filepath.Join(dir, "crowsnest.log")); err != nil {
		return err
	}
	defer d.logFile.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	d.stopRun = stopRun
	if err := d.startEngine(runCtx, appsDir, cfgPath); err != nil {
		return err
	}
	// 6. A newer image arrives.
	if err := d.pushAndWait(ctx); err != nil {
		return err
	}
	// 7. The report.
	rep, err := d.report(ctx)
	if err != nil {
		return err
	}
	rep.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	if o.keep {
		rep.Folder = dir
	}
	return o.print(stdout, rep)
}

// print writes the report: -o json as is, else for people.
func (o *demoOptions) print(stdout io.Writer, rep *demoReport) error {
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printDemoReport(stdout, rep)
	return nil
}

// prepare starts the registry with demoImages, seeds the Git repository,
// starts the webhook sink and writes the Applications and config;
// cleanup stops the sink, then the registry. On error what was started is
// stopped.
func (d *demoRun) prepare(ctx context.Context) (appsDir, cfgPath string, cleanup func(), err error) {
	regHost, stopReg, err := startDemoRegistry()
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
	if d.sink, err = startDemoSink(d.say); err != nil {
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

// pushImages pushes demoImages to the registry, older tags first.
func (d *demoRun) pushImages(ctx context.Context) error {
	repos := slices.Sorted(func(yield func(string) bool) {
		for r := range demoImages {
			if !yield(r) {
				return
			}
		}
	})
	for _, repo := range repos {
		for i, tag := range demoImages[repo] {
			if err := pushDemoImage(ctx, d.regHost, repo+":"+tag, d.t0.Add(time.Duration(i)*time.Hour)); err != nil {
				return err
			}
		}
		d.say("registry  %s/%s: %s", d.regHost, repo, strings.Join(demoImages[repo], ", "))
	}
	return nil
}

// seedGit creates the bare Git repository web's write-back commits to.
func (d *demoRun) seedGit() error {
	subst := strings.NewReplacer("{{REGISTRY}}", d.regHost)
	d.bare = filepath.Join(d.dir, "git", "deploy.git")
	d.gitURL = "file://" + filepath.ToSlash(d.bare)
	seed, err := seedDemoRepo(d.bare, filepath.Join(d.dir, "seed"), subst)
	if err != nil {
		return fmt.Errorf("creating the demo's Git repository: %w", err)
	}
	d.seed = seed
	d.say("git       %s (main at %s)", d.gitURL, seed.String()[:7])
	return nil
}

// writeApps writes the Applications and the config, pointed at the
// registry, the Git repository and the sink.
func (d *demoRun) writeApps() (appsDir, cfgPath string, _ error) {
	subst := strings.NewReplacer("{{REGISTRY}}", d.regHost, "{{GIT}}", d.gitURL, "{{WEBHOOK}}", d.sink.url)
	appsDir, cfgPath = filepath.Join(d.dir, "apps"), filepath.Join(d.dir, "config.yaml")
	if err := copyDemoFiles("demo/apps", appsDir, subst); err != nil {
		return "", "", err
	}
	if err := copyDemoFile("demo/config.yaml", cfgPath, subst); err != nil {
		return "", "", err
	}
	d.say("apps      web (Git write-back), api (Kubernetes mode), worker (project with a deny window)")
	return appsDir, cfgPath, nil
}

// startEngine starts `crowsnest run --apps-dir` in the background, its
// Events recorded, and waits until it has started.
func (d *demoRun) startEngine(runCtx context.Context, appsDir, cfgPath string) error {
	parts := make(chan *runParts, 1)
	ro := &runOptions{
		onEvent: func(ev AppEvent) {
			d.mu.Lock()
			d.events = append(d.events, ev)
			d.mu.Unlock()
			d.say("event     %-12s %-16s %s", ev.App, ev.Reason, ev.Message)
		},
		started: func(p *runParts) { parts <- p },
	}
	runCmd := newRunCommandWith(ro)
	runCmd.SetArgs([]string{"--apps-dir", appsDir, "--config", cfgPath, "--git-cache-dir", filepath.Join(d.dir, "cache"),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0", "--log-format", "json"})
	runCmd.SetOut(io.Discard)
	runCmd.SetErr(d.logFile)
	runCmd.SilenceUsage, runCmd.SilenceErrors = true, true
	d.done = make(chan error, 1)
	go func() { d.done <- runCmd.ExecuteContext(runCtx) }()
	select {
	case d.parts = <-parts:
		return nil
	case err := <-d.done:
		return fmt.Errorf("crowsnest did not start (log: %s): %w", d.logFile.Name(), err)
	}
}

// fail stops the daemon and says which step failed, with its error.
func (d *demoRun) fail(step string, err error) error {
	d.stopRun()
	if serr := <-d.done; serr != nil && !errors.Is(serr, context.Canceled) {
		err = fmt.Errorf("%w; crowsnest: %w", err, serr)
	}
	return fmt.Errorf("%s: %w (daemon log: %s; keep it with --keep)", step, err, d.logFile.Name())
}

// pushAndWait waits for the first pass, pushes demoPush and tells
// crowsnest (as a registry webhook would), then waits for the update and
// the pass after it.
func (d *demoRun) pushAndWait(ctx context.Context) error {
	d.say("crowsnest first pass...")
	if err := d.parts.wait.wait(ctx); err != nil {
		return d.fail("waiting for the first pass", err)
	}
	if err := pushDemoImage(ctx, d.regHost, demoPush, d.t0.Add(24*time.Hour)); err != nil {
		return d.fail("pushing "+demoPush, err)
	}
	d.say("registry  pushed %s/%s; telling crowsnest", d.regHost, demoPush)
	repo, tag, _ := strings.Cut(demoPush, ":")
	d.parts.poller.Refresh(d.regHost + "/" + repo)
	if err := waitUntil(ctx, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return slices.ContainsFunc(d.events, func(ev AppEvent) bool {
			return ev.Reason == controller.EventImagesUpdated && strings.Contains(ev.Message, "-> "+tag)
		})
	}); err != nil {
		return d.fail("waiting for the update to "+tag, err)
	}
	if err := d.parts.wait.wait(ctx); err != nil {
		return d.fail("waiting for the second pass", err)
	}
	return nil
}

// report sorts the Events into the report, stops the daemon and adds the
// commits and the notifications as sent.
func (d *demoRun) report(ctx context.Context) (*demoReport, error) {
	rep := &demoReport{Registry: d.regHost, Git: d.gitURL}
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
	if rep.Commits, err = demoCommits(d.bare, d.seed); err != nil {
		return nil, err
	}
	for _, b := range d.sink.bodies() {
		rep.Notifications = append(rep.Notifications, demoNotification{Body: b})
	}
	return rep, nil
}

// reportEvent files one Event: found, held, a warning, and for a patch
// the Application's source after it.
func (d *demoRun) reportEvent(ctx context.Context, rep *demoReport, ev AppEvent) {
	switch ev.Reason {
	case controller.EventImagesUpdated:
		rep.Found = append(rep.Found, ev)
	case controller.EventImageUpdateHeld:
		if !slices.ContainsFunc(rep.Held, func(h AppEvent) bool { return h == ev }) {
			rep.Found = append(rep.Found, ev)
			rep.Held = append(rep.Held, ev)
		}
	}
	if ev.Type == "Warning" {
		rep.Warnings = append(rep.Warnings, ev)
	}
	if ev.Reason == controller.EventImagesUpdated && strings.Contains(ev.Message, "patched the Application") {
		ns, app, _ := strings.Cut(ev.App, "/")
		if u, ok := d.parts.local.Patched(ctx, ns, app); ok && !slices.ContainsFunc(rep.Patched, func(p demoPatch) bool { return p.App == ev.App }) {
			src, _ := unstructuredField(u.Object, "spec", "source")
			y, _ := yaml.Marshal(src)
			rep.Patched = append(rep.Patched, demoPatch{App: ev.App, Source: string(y)})
		}
	}
}

func unstructuredField(obj map[string]any, fields ...string) (any, bool) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[f]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func printDemoReport(w io.Writer, rep *demoReport) {
	fmt.Fprintf(w, "\ncrowsnest demo report (%.1fs)\n", rep.Seconds)
	section := func(title string, n int) { fmt.Fprintf(w, "\n== %s (%d)\n", title, n) }
	section("Found", len(rep.Found))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range rep.Found {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ev.App, ev.Reason, ev.Message)
	}
	_ = tw.Flush()
	section("Committed to Git", len(rep.Commits))
	for _, c := range rep.Commits {
		fmt.Fprintf(w, "  commit %s\n", c.SHA)
		for l := range strings.Lines(strings.TrimSpace(c.Message)) {
			fmt.Fprintf(w, "    %s", l)
		}
		fmt.Fprintf(w, "\n\n")
		for l := range strings.Lines(c.Diff) {
			fmt.Fprintf(w, "    %s", l)
		}
		fmt.Fprintln(w)
	}
	section("Patched (Kubernetes mode; in local mode an in-memory copy of the Application)", len(rep.Patched))
	for _, p := range rep.Patched {
		fmt.Fprintf(w, "  %s spec.source:\n", p.App)
		for l := range strings.Lines(p.Source) {
			fmt.Fprintf(w, "    %s", l)
		}
	}
	section("Held by a sync window", len(rep.Held))
	for _, ev := range rep.Held {
		fmt.Fprintf(w, "  %s: %s\n", ev.App, ev.Message)
	}
	section("Notifications sent to the webhook", len(rep.Notifications))
	for _, n := range rep.Notifications {
		fmt.Fprintf(w, "  %s\n", n.Body)
	}
	if len(rep.Warnings) > 0 {
		section("Warnings", len(rep.Warnings))
		for _, ev := range rep.Warnings {
			fmt.Fprintf(w, "  %s %s: %s\n", ev.App, ev.Reason, ev.Message)
		}
	}
	fmt.Fprintf(w, "\nNext: `crowsnest run --apps-dir DIR` on your own Applications, or install it in a cluster (examples/install).\n")
}

// startDemoRegistry serves go-containerregistry's in-memory registry on
// 127.0.0.1.
func startDemoRegistry() (host string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("starting the demo registry: %w", err)
	}
	srv := &http.Server{
		Handler:           ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// pushDemoImage pushes a small random linux/amd64 image built at created.
func pushDemoImage(ctx context.Context, host, repoTag string, created time.Time) error {
	ref, err := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err != nil {
		return err
	}
	img, err := random.Image(256, 1)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", repoTag, err)
	}
	return nil
}

// seedDemoRepo creates the bare repository and pushes examples/demo/repo
// as the first commit of main.
func seedDemoRepo(bare, work string, subst *strings.Replacer) (plumbing.Hash, error) {
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	}); err != nil {
		return plumbing.ZeroHash, err
	}
	r, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := copyDemoFiles("demo/repo", work, subst); err != nil {
		return plumbing.ZeroHash, err
	}
	wt, err := r.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, err
	}
	sig := &object.Signature{Name: "demo", Email: "demo@crowsnest.dev", When: time.Now()}
	h, err := wt.Commit("Deploy web, api and worker", &git.CommitOptions{Author: sig})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"file://" + filepath.ToSlash(bare)}}); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// demoCommits lists the commits on main after seed, oldest first, with
// their diffs.
func demoCommits(bare string, seed plumbing.Hash) ([]demoCommit, error) {
	r, err := git.PlainOpen(bare)
	if err != nil {
		return nil, err
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return nil, err
	}
	var out []demoCommit
	for h := ref.Hash(); h != seed; {
		c, err := r.CommitObject(h)
		if err != nil {
			return nil, err
		}
		parent, err := c.Parent(0)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		patch, err := parent.Patch(c)
		if err != nil {
			return nil, err
		}
		out = append(out, demoCommit{SHA: h.String(), Message: c.Message, Diff: patch.String()})
		h = parent.Hash
	}
	slices.Reverse(out)
	return out, nil
}

// copyDemoFiles copies the embedded folder from to the folder to, through subst.
func copyDemoFiles(from, to string, subst *strings.Replacer) error {
	return fs.WalkDir(examples.Demo, from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, from+"/")
		return copyDemoFile(p, filepath.Join(to, filepath.FromSlash(rel)), subst)
	})
}

func copyDemoFile(from, to string, subst *strings.Replacer) error {
	b, err := fs.ReadFile(examples.Demo, path.Clean(from))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, []byte(subst.Replace(string(b))), 0o644)
}

// demoSink is the webhook receiver the demo's notifications go to.
type demoSink struct {
	url   string
	srv   *http.Server
	mu    sync.Mutex
	recvd []string
}

func startDemoSink(say func(string, ...any)) (*demoSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the demo webhook receiver: %w", err)
	}
	s := &demoSink{url: "http://" + ln.Addr().String() + "/hook"}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		body := string(b)
		var compact bytes.Buffer
		if json.Compact(&compact, b) == nil {
			body = compact.String()
		}
		s.mu.Lock()
		s.recvd = append(s.recvd, body)
		s.mu.Unlock()
		say("webhook   %s", body)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *demoSink) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recvd)
}

func (s *demoSink) close() { _ = s.srv.Close() }

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
