package testgit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Fixed identity and clock for commits made by helpers, so test repos are
// reproducible.
const (
	SeedAuthor = "Seeder"
	SeedEmail  = "seeder@example.com"
	SeedDate   = "2026-01-02T03:04:05Z"
)

// Commit is one commit on a branch, newest first in Log.
type Commit struct {
	SHA     string
	Author  string
	Subject string
	Body    string
}

// CreateRepo makes an empty bare repository that accepts pushes over HTTP
// and returns its clone URL. Its default branch is main.
func (s *Server) CreateRepo(tb testing.TB, name string) string {
	tb.Helper()
	dir := s.repoDir(name)
	s.git(tb, "", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	s.git(tb, dir, "config", "http.receivepack", "true")
	return s.RepoURL(name)
}

// Seed commits files (path -> content; "" content deletes the path) on top
// of branch, creating the branch (from nothing, or from base when base is
// set and the branch does not exist), and returns the new commit's SHA.
// It writes straight into the bare repository, as another client's push
// would.
func (s *Server) Seed(tb testing.TB, repo, branch string, files map[string]string, message string) string {
	tb.Helper()
	return s.SeedFrom(tb, repo, branch, "", files, message)
}

// SeedFrom is Seed with a base branch for a new branch.
func (s *Server) SeedFrom(tb testing.TB, repo, branch, base string, files map[string]string, message string) string {
	tb.Helper()
	dir := s.repoDir(repo)
	work := tb.TempDir()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, ".index"), "GIT_WORK_TREE=" + work}
	parent := s.revParse(tb, dir, "refs/heads/"+branch)
	old := parent
	if parent == "" && base != "" {
		parent = s.revParse(tb, dir, "refs/heads/"+base)
	}
	if parent != "" {
		s.gitEnv(tb, dir, env, "read-tree", parent)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if files[p] == "" {
			s.gitEnv(tb, dir, env, "rm", "--cached", "--quiet", "--ignore-unmatch", "--", p)
			continue
		}
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			tb.Fatal(err)
		}
		s.gitEnv(tb, dir, env, "add", "--", p)
	}
	tree := s.gitEnv(tb, dir, env, "write-tree")
	args := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	sha := s.gitEnv(tb, dir, env, args...)
	if old == "" {
		// Create only: fail if someone made the branch meanwhile.
		old = "0000000000000000000000000000000000000000"
	}
	s.git(tb, dir, "update-ref", "refs/heads/"+branch, sha, old)
	return sha
}

// ReadFile returns the content of path on branch, and whether it exists.
func (s *Server) ReadFile(tb testing.TB, repo, branch, path string) (string, bool) {
	tb.Helper()
	cmd := s.cmd(s.repoDir(repo), nil, "show", "refs/heads/"+branch+":"+path)
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

// Head returns the SHA branch points at, or "" when it does not exist.
func (s *Server) Head(tb testing.TB, repo, branch string) string {
	tb.Helper()
	return s.revParse(tb, s.repoDir(repo), "refs/heads/"+branch)
}

// Branches lists the repository's branch names, sorted.
func (s *Server) Branches(tb testing.TB, repo string) []string {
	tb.Helper()
	out := s.git(tb, s.repoDir(repo), "for-each-ref", "--format=%(refname:short)", "refs/heads/")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// Log lists the commits reachable from branch, newest first.
func (s *Server) Log(tb testing.TB, repo, branch string) []Commit {
	tb.Helper()
	if s.Head(tb, repo, branch) == "" {
		return nil
	}
	out := s.git(tb, s.repoDir(repo), "log", "-z", "--format=%H%x00%an <%ae>%x00%s%x00%b", "refs/heads/"+branch)
	fields := strings.Split(out, "\x00")
	var commits []Commit
	for i := 0; i+2 < len(fields); i += 4 {
		c := Commit{SHA: strings.TrimSpace(fields[i]), Author: fields[i+1], Subject: fields[i+2]}
		if i+3 < len(fields) {
			c.Body = strings.TrimSpace(fields[i+3])
		}
		commits = append(commits, c)
	}
	return commits
}

// ChangedFiles lists the paths a commit changed relative to its first
// parent.
func (s *Server) ChangedFiles(tb testing.TB, repo, sha string) []string {
	tb.Helper()
	out := s.git(tb, s.repoDir(repo), "diff-tree", "--no-commit-id", "--name-only", "-r", "--root", sha)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// Git runs the git CLI in the bare repository and returns its trimmed
// output, failing the test on error.
func (s *Server) Git(tb testing.TB, repo string, args ...string) string {
	tb.Helper()
	return s.git(tb, s.repoDir(repo), args...)
}

func (s *Server) revParse(tb testing.TB, dir, ref string) string {
	tb.Helper()
	out, err := s.cmd(dir, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func (s *Server) git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return s.gitEnv(tb, dir, nil, args...)
}

func (s *Server) gitEnv(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	cmd := s.cmd(dir, env, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Env is a hermetic environment for the git CLI: no user or system
// config, a fixed identity and clock.
func Env(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=" + SeedAuthor, "GIT_AUTHOR_EMAIL=" + SeedEmail, "GIT_AUTHOR_DATE=" + SeedDate,
		"GIT_COMMITTER_NAME=" + SeedAuthor, "GIT_COMMITTER_EMAIL=" + SeedEmail, "GIT_COMMITTER_DATE=" + SeedDate,
		"GIT_TERMINAL_PROMPT=0",
	}
}

func (s *Server) cmd(dir string, env []string, args ...string) *exec.Cmd {
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = s.Root
	cmd.Env = append(Env(s.Root), env...)
	return cmd
}
