package testgit

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PushFiles is another Git client at work: it clones repo over HTTP with
// the git CLI (using the server's credentials), commits files on branch
// and pushes without force. A push that loses a race returns an error, so
// the caller can retry like a real client would.
func (s *Server) PushFiles(tb testing.TB, repo, branch string, files map[string]string, message string) error {
	tb.Helper()
	u, err := url.Parse(s.RepoURL(repo))
	if err != nil {
		return err
	}
	if s.opts.Password != "" {
		user := s.opts.Username
		if user == "" {
			user = "token"
		}
		u.User = url.UserPassword(user, s.opts.Password)
	}
	dir := filepath.Join(tb.TempDir(), "clone")
	run := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = Env(s.Root)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", args[0], err, out)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := run("clone", "--quiet", "--branch", branch, u.String(), "."); err != nil {
		return err
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
		if err := run("add", "--", p); err != nil {
			return err
		}
	}
	if err := run("commit", "--quiet", "-m", message); err != nil {
		return err
	}
	return run("push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
}
