package giteaenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// New starts a Gitea of its own for one test and stops it when the test
// ends: for a test that stops or breaks it. Others use Shared.
func New(tb testing.TB) *Gitea {
	tb.Helper()
	requireBuilt(tb)
	g, err := Start(tb.Context(), tb.TempDir())
	if err != nil {
		tb.Fatalf("starting Gitea %s: %v", Version(), err)
	}
	tb.Cleanup(g.Stop)
	return g
}

// Shared returns the test binary's one Gitea, started by the first test
// that asks and stopped by RunMain after the last. The package's TestMain
// must be `os.Exit(giteaenv.RunMain(m))`. Tests keep apart by creating
// repositories of their own (CreateRepo).
func Shared(tb testing.TB) *Gitea {
	tb.Helper()
	if !shared.inMain.Load() {
		tb.Fatal("giteaenv.Shared needs the package's TestMain to call giteaenv.RunMain")
	}
	requireBuilt(tb)
	shared.once.Do(func() {
		start := time.Now()
		shared.g, shared.err = startShared()
		if shared.err == nil {
			tb.Logf("Gitea %s serving %s (started in %s)", Version(), shared.g.URL, time.Since(start).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		tb.Fatalf("starting Gitea %s: %v", Version(), shared.err)
	}
	return shared.g
}

// startShared starts the shared Gitea in a folder of its own, which
// RunMain removes: not the test's TempDir nor its context, since the
// server outlives the test that started it.
func startShared() (*Gitea, error) {
	dir, err := os.MkdirTemp("", "crowsnest-gitea-")
	if err != nil {
		return nil, err
	}
	shared.dir = dir
	return Start(context.Background(), dir)
}

var shared struct {
	inMain atomic.Bool
	once   sync.Once
	g      *Gitea
	dir    string
	err    error
}

// RunMain runs the package's tests, then stops the Gitea that Shared
// started, if any, removes its files and checks that no goroutine was left
// behind: `func TestMain(m *testing.M) { os.Exit(giteaenv.RunMain(m)) }`.
func RunMain(m *testing.M) int {
	shared.inMain.Store(true)
	code := m.Run()
	if shared.g != nil {
		shared.g.Stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	if code == 0 {
		if err := goleak.Find(testenv.LeakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak after the tests:", err)
			return 1
		}
	}
	return code
}

// requireBuilt skips the test when Gitea is not built and BuildEnv says
// not to build it, and fails it under CI, where every test must run.
func requireBuilt(tb testing.TB) {
	tb.Helper()
	_, err := BinDir()
	switch {
	case err == nil:
	case errors.Is(err, ErrNotBuilt) && !inCI():
		tb.Skipf("skipping: %v", err)
	default:
		tb.Fatalf("Gitea %s: %v", Version(), err)
	}
}

// CreateRepo creates a repository of Admin's with a name made from prefix
// and one initial commit (a README) on main, and returns it.
func (g *Gitea) CreateRepo(tb testing.TB, prefix string) *gitea.Repository {
	tb.Helper()
	c, err := g.Client(tb.Context())
	if err != nil {
		tb.Fatalf("connecting to Gitea: %v", err)
	}
	name := prefix + "-" + strconv.FormatInt(repoSeq.Add(1), 10)
	repo, _, err := c.CreateRepo(gitea.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: "main", Readme: "Default"})
	if err != nil {
		tb.Fatalf("creating repository %s: %v\n%s", name, err, g.Logs())
	}
	return repo
}

// repoSeq numbers the repositories of a test binary, which share Admin.
var repoSeq atomic.Int64

// OpenPullRequests lists the open pull requests of Admin's repository
// repo: the first page, more than a test opens.
func (g *Gitea) OpenPullRequests(tb testing.TB, repo string) []*gitea.PullRequest {
	tb.Helper()
	c, err := g.Client(tb.Context())
	if err != nil {
		tb.Fatalf("connecting to Gitea: %v", err)
	}
	prs, _, err := c.ListRepoPullRequests(Admin, repo, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		tb.Fatalf("listing the pull requests of %s: %v", repo, err)
	}
	return prs
}

// DescribePulls says pull requests in a test's failure message:
// "#1 head -> base; ".
func DescribePulls(prs []*gitea.PullRequest) string {
	var b strings.Builder
	for _, p := range prs {
		fmt.Fprintf(&b, "#%d %s -> %s; ", p.Index, p.Head.Ref, p.Base.Ref)
	}
	return b.String()
}
