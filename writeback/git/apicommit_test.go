package git

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// gitData answers GitHub's REST Git database API (blobs, trees, commits,
// refs) against the bare repository the fake forge's Git server holds,
// as GitHub does: the commit really exists, its tree is what the blobs
// and base tree make, and a ref moves only by fast-forward unless forced.
// Other requests go to next (the pull requests' API). beforeRef, when
// set, runs before a ref is moved (another writer's push).
func gitData(next func(*fakeForge, testnotify.Request) testnotify.Answer, beforeRef *func()) func(*fakeForge, testnotify.Request) testnotify.Answer {
	return func(f *fakeForge, r testnotify.Request) testnotify.Answer {
		gitPath := f.path + "/git/"
		rest, ok := strings.CutPrefix(r.EscapedPath, gitPath)
		if !ok {
			return next(f, r)
		}
		dir := filepath.Join(f.git.Root, f.repo+".git")
		run := func(stdin string, env []string, args ...string) (string, error) {
			cmd := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...)
			cmd.Env = append(append(testgit.Env(f.git.Root), env...), "GIT_CONFIG_NOSYSTEM=1")
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.Output()
			return strings.TrimSpace(string(out)), err
		}
		fail := func(err error) testnotify.Answer {
			return jsonAnswer(http.StatusInternalServerError, obj{"message": err.Error()})
		}
		head := func(branch string) string {
			sha, err := run("", nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
			if err != nil {
				return ""
			}
			return sha
		}
		switch {
		case r.Method == http.MethodPost && rest == "blobs":
			var in struct{ Content, Encoding string }
			if !decode(r, &in) || in.Encoding != "base64" {
				return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
			}
			b, err := base64.StdEncoding.DecodeString(in.Content)
			if err != nil {
				return jsonAnswer(http.StatusBadRequest, obj{"message": err.Error()})
			}
			sha, err := run(string(b), nil, "hash-object", "-w", "--stdin")
			if err != nil {
				return fail(err)
			}
			return jsonAnswer(http.StatusCreated, obj{"sha": sha})
		case r.Method == http.MethodPost && rest == "trees":
			var in struct {
				BaseTree string `json:"base_tree"`
				Tree     []struct {
					Path, Mode, Type string
					SHA              *string
				}
			}
			if !decode(r, &in) {
				return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
			}
			env := []string{"GIT_INDEX_FILE=" + filepath.Join(f.t.TempDir(), "index")}
			if _, err := run("", env, "read-tree", in.BaseTree); err != nil {
				return jsonAnswer(http.StatusUnprocessableEntity, obj{"message": "Invalid tree info"})
			}
			var info strings.Builder
			for _, e := range in.Tree {
				if e.SHA == nil {
					info.WriteString("0 0000000000000000000000000000000000000000\t" + e.Path + "\n")
				} else {
					info.WriteString(e.Mode + " " + *e.SHA + "\t" + e.Path + "\n")
				}
			}
			if _, err := run(info.String(), env, "update-index", "--index-info"); err != nil {
				return fail(err)
			}
			sha, err := run("", env, "write-tree")
			if err != nil {
				return fail(err)
			}
			return jsonAnswer(http.StatusCreated, obj{"sha": sha})
		case r.Method == http.MethodPost && rest == "commits":
			var in struct {
				Message, Tree string
				Parents       []string
			}
			if !decode(r, &in) || len(in.Parents) != 1 {
				return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
			}
			bot := []string{"GIT_AUTHOR_NAME=crowsnest-app[bot]", "GIT_AUTHOR_EMAIL=1+crowsnest-app[bot]@users.noreply.github.com",
				"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com"}
			sha, err := run(in.Message, bot, "commit-tree", in.Tree, "-p", in.Parents[0])
			if err != nil {
				return fail(err)
			}
			return jsonAnswer(http.StatusCreated, obj{"sha": sha, "verification": obj{"verified": true}})
		case r.Method == http.MethodGet && strings.HasPrefix(rest, "ref/heads/"):
			sha := head(strings.TrimPrefix(rest, "ref/heads/"))
			if sha == "" {
				return notFound
			}
			return jsonAnswer(http.StatusOK, obj{"ref": "refs/" + strings.TrimPrefix(rest, "ref/"), "object": obj{"sha": sha, "type": "commit"}})
		case r.Method == http.MethodPost && rest == "refs":
			if beforeRef != nil && *beforeRef != nil {
				(*beforeRef)()
			}
			var in struct{ Ref, SHA string }
			if !decode(r, &in) || !strings.HasPrefix(in.Ref, "refs/heads/") {
				return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
			}
			if head(strings.TrimPrefix(in.Ref, "refs/heads/")) != "" {
				return jsonAnswer(http.StatusUnprocessableEntity, obj{"message": "Reference already exists"})
			}
			if _, err := run("", nil, "update-ref", in.Ref, in.SHA, ""); err != nil {
				return fail(err)
			}
			return jsonAnswer(http.StatusCreated, obj{"ref": in.Ref, "object": obj{"sha": in.SHA}})
		case r.Method == http.MethodPatch && strings.HasPrefix(rest, "refs/heads/"):
			if beforeRef != nil && *beforeRef != nil {
				(*beforeRef)()
			}
			var in struct {
				SHA   string
				Force bool
			}
			if !decode(r, &in) {
				return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
			}
			ref := "refs/" + strings.TrimPrefix(rest, "refs/")
			cur := head(strings.TrimPrefix(rest, "refs/heads/"))
			if cur == "" {
				return jsonAnswer(http.StatusUnprocessableEntity, obj{"message": "Reference does not exist"})
			}
			if _, err := run("", nil, "merge-base", "--is-ancestor", cur, in.SHA); err != nil && !in.Force {
				return jsonAnswer(http.StatusUnprocessableEntity, obj{"message": "Update is not a fast forward"})
			}
			if _, err := run("", nil, "update-ref", ref, in.SHA, cur); err != nil {
				return fail(err)
			}
			return jsonAnswer(http.StatusOK, obj{"ref": ref, "object": obj{"sha": in.SHA}})
		}
		return notFound
	}
}

// apiEnv is a GitHub Enterprise host (Git and API on one address) whose
// API commits for real, and a writer with git.commitMethod api.
func apiEnv(t *testing.T, beforeRef *func()) (*forgeEnv, *bytes.Buffer) {
	t.Helper()
	fc := forgeCases[0]
	fc.dialect = gitData(githubAPI, beforeRef)
	e := newForgeEnv(t, fc)
	e.w.CommitMethod = CommitMethodAPI
	var logs bytes.Buffer
	e.w.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return e, &logs
}

// gitDataCalls are the Git database requests of calls, from the from-th.
func (e *forgeEnv) gitDataCalls(from int) []string {
	var out []string
	for _, c := range e.forge.calls()[from:] {
		if method, path, _ := strings.Cut(c, " "); strings.HasPrefix(path, e.fc.api+"/git/") {
			out = append(out, method+" "+strings.TrimPrefix(path, e.fc.api))
		}
	}
	return out
}

func TestAPICommitLands(t *testing.T) {
	e, logs := apiEnv(t, nil)
	for i, tag := range []string{"1.2.0", "1.3.0"} {
		before := e.headSHA(t, "main")
		calls := len(e.forge.calls())
		res := mustApply(t, e.w, kustomizeWeb(e.url, tag))
		if res.CommitSHA == "" || res.CommitSHA != e.headSHA(t, "main") || res.Attempts != 1 {
			t.Fatalf("write %d: result %+v, head %s", i, res, e.headSHA(t, "main"))
		}
		if got := kustomizationTag(t, e.git, e.fc.repo, "main"); got != tag {
			t.Errorf("write %d: main's tag = %q, want %q", i, got, tag)
		}
		if got := e.git.Git(t, e.fc.repo, "rev-parse", res.CommitSHA+"^"); got != before {
			t.Errorf("write %d: parent = %s, want %s", i, got, before)
		}
		if diff := cmp.Diff([]string{"web/kustomization.yaml"}, e.git.ChangedFiles(t, e.fc.repo, res.CommitSHA)); diff != "" {
			t.Errorf("write %d: files (-want +got):\n%s", i, diff)
		}
		if log := e.git.Log(t, e.fc.repo, "main"); !strings.HasPrefix(log[0].Author, "crowsnest-app[bot]") {
			t.Errorf("write %d: author %q: GitHub, not the writer, names it", i, log[0].Author)
		}
		want := []string{"POST /git/blobs", "POST /git/trees", "POST /git/commits", "PATCH /git/refs/heads/main"}
		if diff := cmp.Diff(want, e.gitDataCalls(calls)); diff != "" {
			t.Errorf("write %d: requests (-want +got):\n%s", i, diff)
		}
	}
	if n := e.git.Count(testgit.KindReceivePack); n != 0 {
		t.Errorf("%d pushes; the API commits", n)
	}
	for _, r := range e.forge.Requests() {
		if got := r.Header.Get("Authorization"); got != "Bearer "+forgeToken {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, got)
		}
	}
	if strings.Contains(logs.String(), forgeToken) {
		t.Errorf("the token is in the log:\n%s", logs)
	}
}

// A branch that moves between the fetch and the ref's update is refused
// by the API, as a push is, and the batch is made again on the new head.
func TestAPICommitBranchMovedIsRetried(t *testing.T) {
	var hook func()
	e, _ := apiEnv(t, &hook)
	var other string
	hook = func() {
		hook = nil
		other = e.git.Seed(t, e.fc.repo, "main", map[string]string{"README.md": "someone else\n"}, "another writer")
	}
	res := mustApply(t, e.w, kustomizeWeb(e.url, "1.2.0"))
	if res.Attempts != 2 || res.CommitSHA != e.headSHA(t, "main") {
		t.Fatalf("result %+v, head %s", res, e.headSHA(t, "main"))
	}
	if got := e.git.Git(t, e.fc.repo, "rev-parse", res.CommitSHA+"^"); got != other {
		t.Errorf("parent = %s, want the other writer's %s", got, other)
	}
	if got, _ := e.git.ReadFile(t, e.fc.repo, "main", "README.md"); got != "someone else\n" {
		t.Errorf("the other writer's file is %q", got)
	}
	if got := kustomizationTag(t, e.git, e.fc.repo, "main"); got != "1.2.0" {
		t.Errorf("tag = %q", got)
	}
	if n := opCount(e.w, opPush, resultRejected); n != 1 {
		t.Errorf("%d rejected, want 1", n)
	}
}

// A repository that is not on GitHub fails with an error naming
// git.commitMethod; nothing falls back to a push.
func TestAPICommitRefusedOffGitHub(t *testing.T) {
	e, _ := apiEnv(t, nil)
	e.w.Forges = resolved(forge.KindGitLab)(strings.TrimSuffix(e.url, "/"+e.fc.repo+e.fc.suffix))
	res, err := e.w.Apply(t.Context(), []Change{kustomizeWeb(e.url, "1.2.0")})
	if !errors.Is(err, ErrCommitMethod) || !strings.Contains(err.Error(), "git.commitMethod") || res[0].Attempts != 1 {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if e.headSHA(t, "main") != e.seed || e.git.Count(testgit.KindReceivePack) != 0 {
		t.Errorf("something was written")
	}
	e.w.Forges = nil
	if _, err := e.w.Apply(t.Context(), []Change{kustomizeWeb(e.url, "1.2.0")}); !errors.Is(err, ErrCommitMethod) {
		t.Errorf("no forges: err = %v", err)
	}
}

// A refusal quoting the token reaches neither the error nor the log.
func TestAPICommitKeepsTheTokenOut(t *testing.T) {
	e, logs := apiEnv(t, nil)
	e.forge.failNext(1, jsonAnswer(http.StatusForbidden, obj{"message": "Resource not accessible by integration", "token": forgeToken}))
	_, err := e.w.Apply(t.Context(), []Change{kustomizeWeb(e.url, "1.2.0")})
	if err == nil || strings.Contains(err.Error(), forgeToken) || strings.Contains(logs.String(), forgeToken) {
		t.Fatalf("err = %v\nlog:\n%s", err, logs)
	}
	if e.headSHA(t, "main") != e.seed {
		t.Errorf("main moved")
	}
}

// Pull-request mode: the head branch is created through the API, then
// fast-forwarded while its pull request is open.
func TestAPICommitPullRequest(t *testing.T) {
	e, _ := apiEnv(t, nil)
	commit := []string{"POST /git/blobs", "POST /git/trees", "POST /git/commits"}
	steps := []struct {
		tag, action string
		closeFirst  bool
		ref         []string
	}{
		{"1.2.0", PullRequestOpened, false, []string{"POST /git/refs"}},
		{"1.3.0", PullRequestUpdated, false, []string{"PATCH /git/refs/heads/crowsnest/main"}},
		// Closed: the head is rebuilt from main, forced if still
		// where it was fetched.
		{"1.4.0", PullRequestOpened, true, []string{"PATCH /git/refs/heads/crowsnest/main"}},
	}
	for _, st := range steps {
		if st.closeFirst {
			e.forge.mu.Lock()
			e.forge.pulls[0].head = "closed"
			e.forge.mu.Unlock()
		}
		calls := len(e.forge.calls())
		res := mustApply(t, e.w, e.change(st.tag))
		if res.PullRequestAction != st.action || res.CommitSHA != e.headSHA(t, prHead) || e.headSHA(t, "main") != e.seed {
			t.Fatalf("%s: result %+v", st.tag, res)
		}
		want := append(append([]string{}, commit...), st.ref...)
		if st.closeFirst {
			want = append([]string{"GET /git/ref/heads/crowsnest/main"}, want...)
			if got := e.git.Git(t, e.fc.repo, "rev-parse", res.CommitSHA+"^"); got != e.seed {
				t.Errorf("%s: parent %s, want main's %s", st.tag, got, e.seed)
			}
		}
		if diff := cmp.Diff(want, e.gitDataCalls(calls)); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", st.tag, diff)
		}
		if got := kustomizationTag(t, e.git, e.fc.repo, prHead); got != st.tag {
			t.Errorf("%s: head's tag = %q", st.tag, got)
		}
	}
	if n := e.git.Count(testgit.KindReceivePack); n != 0 {
		t.Errorf("%d pushes", n)
	}
}
