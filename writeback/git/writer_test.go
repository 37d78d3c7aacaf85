package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

func golden(t *testing.T, name, which, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "edit", name, which, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newWriter is a writer on a fresh cache with quick retries and its own
// metrics.
func newWriter(t *testing.T, creds CredentialsSource) *Writer {
	t.Helper()
	return &Writer{
		CacheDir:    filepath.Join(t.TempDir(), "cache"),
		Credentials: creds,
		AuthorName:  "Crow Bot",
		AuthorEmail: "bot@example.com",
		Backoff:     20 * time.Millisecond,
		MaxBackoff:  200 * time.Millisecond,
		Timeout:     30 * time.Second,
		Metrics:     NewMetrics(prometheus.NewRegistry()),
	}
}

func opCount(w *Writer, op, result string) int {
	return int(testutil.ToFloat64(w.Metrics.ops.WithLabelValues(op, result)))
}

// seeded is a server with one repository "apps" holding the golden
// originals.
func seeded(t *testing.T, opts testgit.Options) (*testgit.Server, string) {
	t.Helper()
	s := testgit.Start(t, opts)
	url := s.CreateRepo(t, "apps")
	s.Seed(t, "apps", "main", map[string]string{
		"web/kustomization.yaml":            golden(t, "kustomization-update", "original", "kustomization.yaml"),
		"chart/values.yaml":                 golden(t, "helmvalues", "original", "values.yaml"),
		"legacy/.argocd-source-legacy.yaml": golden(t, "argocd-source-helm-update", "original", ".argocd-source-web.yaml"),
		"README.md":                         "# apps\n",
		"list.yaml":                         "- a\n- b\n",
	}, "seed")
	return s, url
}

func mustApply(t *testing.T, w *Writer, changes ...Change) Result {
	t.Helper()
	res, err := w.Apply(t.Context(), changes)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(res), res)
	}
	return res[0]
}

func kustomizeWeb(url string, tags ...string) Change {
	c := Change{App: "web", RepoURL: url, Branch: "main", Path: "web", Target: Target{Kind: TargetKustomization}}
	names := []string{"ghcr.io/acme/web", "ghcr.io/acme/api", "redis"}
	for i, tag := range tags {
		c.Images = append(c.Images, Image{Name: names[i], NewTag: tag})
	}
	return c
}

func TestApplyKustomization(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	res := mustApply(t, w, kustomizeWeb(url, "1.2.0", "v3", "7.2"))

	if res.CommitSHA == "" || res.CommitSHA != s.Head(t, "apps", "main") || res.NoOp || res.Attempts != 1 {
		t.Fatalf("result %+v, head %s", res, s.Head(t, "apps", "main"))
	}
	if diff := cmp.Diff([]string{"web/kustomization.yaml"}, res.FilesChanged); diff != "" {
		t.Errorf("FilesChanged (-want +got):\n%s", diff)
	}
	got, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml")
	if diff := cmp.Diff(golden(t, "kustomization-update", "expected", "kustomization.yaml"), got); diff != "" {
		t.Errorf("kustomization.yaml (-want +got):\n%s", diff)
	}
	head := s.Log(t, "apps", "main")[0]
	want := testgit.Commit{
		SHA:     res.CommitSHA,
		Author:  "Crow Bot <bot@example.com>",
		Subject: "build: automatic update of web",
		Body: "updates image ghcr.io/acme/web tag '1.0.0' to '1.2.0'\n" +
			"updates image ghcr.io/acme/api tag 'v2' to 'v3'\n" +
			"updates image redis tag '7.0' to '7.2'",
	}
	if diff := cmp.Diff(want, head); diff != "" {
		t.Errorf("commit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web/kustomization.yaml"}, s.ChangedFiles(t, "apps", res.CommitSHA)); diff != "" {
		t.Errorf("commit touched (-want +got):\n%s", diff)
	}
	for _, op := range []string{opClone, opCommit, opPush} {
		if n := opCount(w, op, resultSuccess); n != 1 {
			t.Errorf("operations{op=%s,result=success} = %d, want 1", op, n)
		}
	}
	if n := testutil.CollectAndCount(w.Metrics.latency); n != 3 {
		t.Errorf("duration series = %d, want 3 (clone, commit, push)", n)
	}
}

func TestApplyHelmAndArgoCDSourceInOneCommit(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	changes := []Change{
		{
			App: "chart", RepoURL: url, Branch: "main", Path: "chart", SourceType: SourceHelm,
			Target: Target{Kind: TargetHelmValues},
			Images: []Image{
				{Name: "ghcr.io/acme/web", NewTag: "1.1.0", HelmImageTag: "image.tag"},
				{Name: "ghcr.io/acme/side", NewTag: "v9", HelmImageTag: "sidecar.image.tag"},
				{Name: "busybox", NewTag: "1.37", HelmImageSpec: "containers.0.image"},
				{Name: "ghcr.io/acme/worker", NewTag: "2.0", HelmImageName: "worker.image.name", HelmImageTag: "worker.image.tag"},
			},
		},
		{
			App: "web", RepoURL: url, Branch: "main", Path: "web", SourceType: SourceHelm,
			Target: Target{Kind: TargetArgoCDSource},
			Images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0"}},
		},
		{
			App: "legacy", RepoURL: url, Branch: "main", Path: "legacy", SourceType: SourceHelm,
			Images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0"}},
		},
	}
	res := mustApply(t, w, changes...)
	if diff := cmp.Diff([]string{"chart/values.yaml", "legacy/.argocd-source-legacy.yaml", "web/.argocd-source-web.yaml"}, res.FilesChanged); diff != "" {
		t.Errorf("FilesChanged (-want +got):\n%s", diff)
	}
	for file, want := range map[string]string{
		"chart/values.yaml":                 golden(t, "helmvalues", "expected", "values.yaml"),
		"web/.argocd-source-web.yaml":       golden(t, "argocd-source-helm-create", "expected", ".argocd-source-web.yaml"),
		"legacy/.argocd-source-legacy.yaml": golden(t, "argocd-source-helm-update", "expected", ".argocd-source-web.yaml"),
	} {
		got, _ := s.ReadFile(t, "apps", "main", file)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	log := s.Log(t, "apps", "main")
	if len(log) != 2 || log[0].Subject != "build: automatic update of 3 applications" {
		t.Fatalf("log %+v", log)
	}
	if !strings.Contains(log[0].Body, "updates image ghcr.io/acme/web tag '1.0.0' to '1.1.0' (chart)") {
		t.Errorf("body:\n%s", log[0].Body)
	}
}

func TestBatchManyChangesOneCommitAndNoOp(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	var changes []Change
	for i := range 50 {
		changes = append(changes, Change{
			App: "app" + string(rune('a'+i/26)) + string(rune('a'+i%26)), RepoURL: url, Branch: "main",
			Path: "apps", SourceType: SourceKustomize,
			Images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.2.3"}},
		})
	}
	res := mustApply(t, w, changes...)
	if len(res.FilesChanged) != 50 || len(res.Updates) != 50 {
		t.Fatalf("files %d updates %d, want 50", len(res.FilesChanged), len(res.Updates))
	}
	if n := len(s.Log(t, "apps", "main")); n != 2 {
		t.Fatalf("%d commits, want seed + 1", n)
	}
	if n := s.Count(testgit.KindReceivePack); n != 1 {
		t.Fatalf("%d pushes, want 1", n)
	}
	got, _ := s.ReadFile(t, "apps", "main", "apps/.argocd-source-appbx.yaml")
	if got != "kustomize:\n  images:\n    - ghcr.io/acme/web:1.2.3\n" {
		t.Fatalf("created file:\n%s", got)
	}

	// The same changes again: nothing to do, nothing pushed.
	s.ResetCounts()
	again := mustApply(t, w, changes...)
	if !again.NoOp || again.CommitSHA != "" || len(again.FilesChanged) != 0 {
		t.Fatalf("second apply: %+v", again)
	}
	if n := len(s.Log(t, "apps", "main")); n != 2 {
		t.Fatalf("%d commits after no-op, want 2", n)
	}
	if n := s.Count(testgit.KindReceivePack); n != 0 {
		t.Fatalf("no-op pushed %d times", n)
	}
}

func TestConcurrentPushIsRetriedAndBothSurvive(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	// Another client changes the same file (another image) while our
	// push is on its way; ours is rejected, re-applied on theirs, pushed.
	s.BeforePush(func() {
		content, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml")
		content = strings.Replace(content, "newTag: 7.0", "newTag: \"7.4\"", 1)
		s.Seed(t, "apps", "main", map[string]string{"web/kustomization.yaml": content, "other.txt": "theirs\n"}, "concurrent change")
	})
	res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))
	if res.Attempts != 2 {
		t.Fatalf("attempts = %d, want 2", res.Attempts)
	}
	log := s.Log(t, "apps", "main")
	var subjects []string
	for _, c := range log {
		subjects = append(subjects, c.Subject)
	}
	if diff := cmp.Diff([]string{"build: automatic update of web", "concurrent change", "seed"}, subjects); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	got, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml")
	if !strings.Contains(got, `newTag: "1.2.0"`) || !strings.Contains(got, `newTag: "7.4"`) {
		t.Fatalf("both changes should be in the file:\n%s", got)
	}
	if n := testutil.ToFloat64(w.Metrics.retries); n != 1 {
		t.Errorf("push retries = %v, want 1", n)
	}
	if n := opCount(w, opPush, resultRejected); n != 1 {
		t.Errorf("operations{op=push,result=rejected} = %d, want 1", n)
	}
	if n := opCount(w, opFetch, resultSuccess); n != 1 {
		t.Errorf("operations{op=fetch,result=success} = %d, want 1", n)
	}
}

func TestTwoWritersRacing(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	const rounds = 3
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for _, app := range []string{"left", "right"} {
		w := newWriter(t, nil)
		w.MaxAttempts = 20
		wg.Go(func() {
			for i := range rounds {
				_, err := w.Apply(t.Context(), []Change{{
					App: app, RepoURL: url, Branch: "main", Path: "race",
					Images: []Image{{Name: "ghcr.io/acme/" + app, NewTag: "v" + string(rune('0'+i))}},
				}})
				errs <- err
			}
		})
	}
	// And a git CLI client pushing too, retrying as people do.
	wg.Go(func() {
		for i := range rounds {
			for try := 0; try < 20; try++ {
				if err := s.PushFiles(t, "apps", "main", map[string]string{"cli.txt": string(rune('0'+i)) + "\n"}, "cli "+string(rune('0'+i))); err == nil {
					break
				}
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, app := range []string{"left", "right"} {
		got, _ := s.ReadFile(t, "apps", "main", "race/.argocd-source-"+app+".yaml")
		if !strings.Contains(got, "ghcr.io/acme/"+app+":v2") {
			t.Errorf("%s file:\n%s", app, got)
		}
	}
	count := map[string]int{}
	for _, c := range s.Log(t, "apps", "main") {
		count[c.Subject]++
	}
	if count["build: automatic update of left"] != rounds || count["build: automatic update of right"] != rounds || count["cli 2"] != 1 {
		t.Errorf("commits by subject: %v", count)
	}
}

func TestServerDownThenUp(t *testing.T) {
	for _, mode := range []int{testgit.Down503, testgit.DownDrop} {
		t.Run(map[int]string{testgit.Down503: "503", testgit.DownDrop: "dropped"}[mode], func(t *testing.T) {
			s, url := seeded(t, testgit.Options{})
			w := newWriter(t, nil)
			w.Backoff, w.MaxAttempts = 100*time.Millisecond, 8
			mustApply(t, w, kustomizeWeb(url, "1.1.0")) // warm the cache
			s.SetDown(400*time.Millisecond, mode)
			res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))
			if res.Attempts < 2 {
				t.Fatalf("attempts = %d, want retries during the outage", res.Attempts)
			}
			if got, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml"); !strings.Contains(got, `"1.2.0"`) {
				t.Fatalf("not written:\n%s", got)
			}
			if opCount(w, opFetch, resultError) == 0 {
				t.Error("no failed fetch counted")
			}
		})
	}
}

func TestServerDownTooLong(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	w.MaxAttempts = 3
	s.SetDown(time.Minute, testgit.Down503)
	res, err := w.Apply(t.Context(), []Change{kustomizeWeb(url, "1.2.0")})
	if !errors.Is(err, ErrPushFailed) || res[0].Attempts != 3 || !errors.Is(res[0].Err, ErrPushFailed) {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if n := testutil.ToFloat64(w.Metrics.retries); n != 2 {
		t.Errorf("retries = %v, want 2", n)
	}
}

func TestAuth(t *testing.T) {
	const password = "s3cret-Pa55"
	s, url := seeded(t, testgit.Options{Username: "bot", Password: password})

	w := newWriter(t, StaticCredentials{Username: "bot", Password: password})
	mustApply(t, w, kustomizeWeb(url, "1.2.0"))

	tests := []struct {
		name  string
		creds CredentialsSource
		url   string
	}{
		{"wrong password", StaticCredentials{Username: "bot", Password: "wrong-" + password}, url},
		{"none", nil, url},
		{"in the URL", nil, strings.Replace(url, "http://", "http://bot:wrong-"+password+"@", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, tt.creds)
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(tt.url, "1.3.0")})
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("err = %v, want ErrAuth", err)
			}
			if strings.Contains(err.Error(), password) || strings.Contains(res[0].Err.Error(), password) {
				t.Fatalf("error leaks the password: %v", err)
			}
			if res[0].Attempts != 1 {
				t.Errorf("attempts = %d; refused credentials are not retried", res[0].Attempts)
			}
			if res[0].RepoURL != url {
				t.Errorf("RepoURL %q keeps credentials", res[0].RepoURL)
			}
			if opCount(w, opClone, resultAuth) != 1 {
				t.Error("operations{op=clone,result=auth} not counted")
			}
		})
	}

	// The server turning credentials down later (rotation) is as clear.
	s.SetAuthFailure(true)
	_, err := w.Apply(t.Context(), []Change{kustomizeWeb(url, "1.4.0")})
	if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), password) {
		t.Fatalf("err = %v", err)
	}
	if opCount(w, opFetch, resultAuth) != 1 {
		t.Error("operations{op=fetch,result=auth} not counted")
	}
}

func TestCacheReuseFetchesInsteadOfCloning(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	mustApply(t, w, kustomizeWeb(url, "1.1.0"))
	first := s.Count(testgit.KindUploadPack)

	// Someone else commits; the next batch fetches just that.
	s.Seed(t, "apps", "main", map[string]string{"other.txt": "x\n"}, "other")
	s.ResetCounts()
	mustApply(t, w, kustomizeWeb(url, "1.2.0"))
	if opCount(w, opClone, resultSuccess) != 1 || opCount(w, opFetch, resultSuccess) != 1 {
		t.Fatalf("clones %d fetches %d, want 1 and 1", opCount(w, opClone, resultSuccess), opCount(w, opFetch, resultSuccess))
	}
	if n := s.Count(testgit.KindUploadPack); n > first || n > 1 {
		t.Errorf("second batch made %d upload-pack requests (first %d)", n, first)
	}
	entries, _ := os.ReadDir(w.CacheDir)
	if len(entries) != 1 {
		t.Errorf("%d clones in the cache, want 1", len(entries))
	}
}

func TestCorruptCacheIsRecloned(t *testing.T) {
	corruptions := map[string]func(t *testing.T, dir string){
		"objects removed": func(t *testing.T, dir string) {
			t.Helper()
			if err := os.RemoveAll(filepath.Join(dir, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
		},
		"garbage config": func(t *testing.T, dir string) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[[[ not git"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"not a repository": func(t *testing.T, dir string) {
			t.Helper()
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			s, url := seeded(t, testgit.Options{})
			w := newWriter(t, nil)
			mustApply(t, w, kustomizeWeb(url, "1.1.0"))
			corrupt(t, filepath.Join(w.CacheDir, cacheKey(url)))
			res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))
			if res.CommitSHA != s.Head(t, "apps", "main") {
				t.Fatalf("result %+v", res)
			}
			if n := opCount(w, opClone, resultSuccess); n != 2 {
				t.Errorf("clones = %d, want 2", n)
			}
		})
	}
}

func TestBaseTargetBranch(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	c := kustomizeWeb(url, "1.2.0")
	c.Branch = "main:image-updater-{{.App}}-{{(index .Images 0).NewTag}}"
	mainHead := s.Head(t, "apps", "main")
	res := mustApply(t, w, c)
	if res.Branch != "image-updater-web-1.2.0" {
		t.Fatalf("branch %q", res.Branch)
	}
	if s.Head(t, "apps", "main") != mainHead {
		t.Fatal("main moved")
	}
	log := s.Log(t, "apps", res.Branch)
	if len(log) != 2 || log[1].SHA != mainHead || log[0].SHA != res.CommitSHA {
		t.Fatalf("target branch log %+v", log)
	}
	c.Branch = "main:bump-{{.AppName}}-{{.SHA256 | printf \"%.8s\"}}-{{sha256 \"x\" | printf \"%.4s\"}}"
	if res := mustApply(t, w, c); len(res.Branch) != len("bump-web-12345678-2d71") {
		t.Fatalf("branch %q", res.Branch)
	}
	// Again with another tag for the same target: on top of the target.
	c.Branch = "main:updates"
	first := mustApply(t, w, c)
	c.Images[0].NewTag = "1.3.0"
	second := mustApply(t, w, c)
	log = s.Log(t, "apps", "updates")
	if len(log) != 3 || log[0].SHA != second.CommitSHA || log[1].SHA != first.CommitSHA {
		t.Fatalf("updates log %+v", log)
	}
	// A missing base is a clear, terminal error.
	c.Branch = "nope:other"
	if _, err := w.Apply(t.Context(), []Change{c}); !errors.Is(err, ErrBranchNotFound) {
		t.Fatalf("err = %v, want ErrBranchNotFound", err)
	}
}

func TestDefaultBranch(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	c := kustomizeWeb(url, "1.2.0")
	c.Branch = ""
	res := mustApply(t, w, c)
	if res.Branch != "main" || res.CommitSHA != s.Head(t, "apps", "main") {
		t.Fatalf("result %+v", res)
	}
	c.Branch = "HEAD:feature"
	c.Images[0].NewTag = "1.3.0"
	res = mustApply(t, w, c)
	if res.Branch != "feature" || res.CommitSHA != s.Head(t, "apps", "feature") {
		t.Fatalf("result %+v", res)
	}
}

func TestCacheEviction(t *testing.T) {
	s := testgit.Start(t, testgit.Options{})
	w := newWriter(t, nil)
	w.MaxRepos = 2
	var urls []string
	for _, name := range []string{"a", "b", "c"} {
		url := s.CreateRepo(t, name)
		s.Seed(t, name, "main", map[string]string{"README": "x\n"}, "seed")
		urls = append(urls, url)
		mustApply(t, w, Change{App: "x", RepoURL: url, Branch: "main", Images: []Image{{Name: "nginx", NewTag: "1"}}})
	}
	entries, _ := os.ReadDir(w.CacheDir)
	if len(entries) != 2 {
		t.Fatalf("%d clones, want 2", len(entries))
	}
	if _, err := os.Stat(filepath.Join(w.CacheDir, cacheKey(urls[0]))); !os.IsNotExist(err) {
		t.Fatalf("least recently used clone kept: %v", err)
	}
	if n := testutil.ToFloat64(w.Metrics.evictions); n != 1 {
		t.Fatalf("evictions = %v, want 1", n)
	}

	// A size bound evicts down to what fits, keeping the clone in use.
	w2 := newWriter(t, nil)
	w2.MaxCacheBytes = 1
	for _, url := range urls[:2] {
		mustApply(t, w2, Change{App: "y", RepoURL: url, Branch: "main", Images: []Image{{Name: "nginx", NewTag: "2"}}})
	}
	if entries, _ := os.ReadDir(w2.CacheDir); len(entries) != 0 {
		t.Fatalf("%d clones over a 1-byte bound", len(entries))
	}
}

func TestApplyCanceled(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	s.SetDown(time.Minute, testgit.Down503)
	w.Backoff = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := w.Apply(ctx, []Change{kustomizeWeb(url, "1.2.0")})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestInvalidChanges(t *testing.T) {
	_, url := seeded(t, testgit.Options{})
	tests := []struct {
		name string
		c    Change
	}{
		{"escape by dots", Change{App: "a", RepoURL: url, Branch: "main", Path: "../..", Target: Target{Kind: TargetHelmValues}, Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"into .git", Change{App: "a", RepoURL: url, Branch: "main", Path: ".git", Target: Target{Kind: TargetHelmValues, Path: "config"}, Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"missing kustomization", Change{App: "a", RepoURL: url, Branch: "main", Path: "nowhere", Target: Target{Kind: TargetKustomization}, Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"not a mapping", Change{App: "a", RepoURL: url, Branch: "main", Target: Target{Kind: TargetHelmValues, Path: "/list.yaml"}, Scope: &Scope{Files: []string{"list.yaml"}}, Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"bad app name", Change{App: "../x", RepoURL: url, Branch: "main", Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"bad branch name", Change{App: "a", RepoURL: url, Branch: "main:has space..lock", Images: []Image{{Name: "x", NewTag: "1"}}}},
		{"bad branch template", Change{App: "a", RepoURL: url, Branch: "main:{{.Nope}}", Images: []Image{{Name: "x", NewTag: "1"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, nil)
			_, err := w.Apply(t.Context(), []Change{tt.c})
			if !errors.Is(err, ErrInvalidChange) {
				t.Fatalf("err = %v, want ErrInvalidChange", err)
			}
		})
	}
}

func TestSameWriterConcurrentApply(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	var wg sync.WaitGroup
	results := make([]Result, 4)
	for i := range results {
		wg.Go(func() {
			res, err := w.Apply(t.Context(), []Change{{
				App: "app" + string(rune('a'+i)), RepoURL: url, Branch: "main", Path: "same",
				Images: []Image{{Name: "nginx", NewTag: "1.0"}},
			}})
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res[0]
		})
	}
	wg.Wait()
	for i, r := range results {
		// The per-repository lock serializes them: no push races.
		if r.Attempts != 1 || r.CommitSHA == "" {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if n := len(s.Log(t, "apps", "main")); n != 5 {
		t.Fatalf("%d commits, want seed + 4", n)
	}
	if n := opCount(w, opClone, resultSuccess); n != 1 {
		t.Fatalf("%d clones, want 1", n)
	}
}

func TestBadChangeDoesNotHoldBackItsBatch(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	bad := Change{App: "broken", RepoURL: url, Branch: "main", Target: Target{Kind: TargetHelmValues, Path: "/list.yaml"}, Scope: &Scope{Files: []string{"list.yaml"}}, Images: []Image{{Name: "x", NewTag: "1"}}}
	res, err := w.Apply(t.Context(), []Change{bad, kustomizeWeb(url, "1.2.0")})
	if !errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), "broken: invalid change: list.yaml") {
		t.Fatalf("err = %v", err)
	}
	r := res[0]
	if r.Err != nil || r.CommitSHA != s.Head(t, "apps", "main") || len(r.Failed) != 1 || r.Failed[0].App != "broken" {
		t.Fatalf("result %+v", r)
	}
	if got := s.Log(t, "apps", "main")[0].Subject; got != "build: automatic update of web" {
		t.Fatalf("subject %q names only the applied app", got)
	}
}
