package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// gitHTTPBackend is where Debian's git package installs the smart-HTTP CGI
// program.
const gitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// Credentials of the benchmark's Git server, given to crowsnest as an Argo
// CD repository Secret.
const (
	gitUser     = "bench"
	gitPassword = "bench-token"
)

// gitServer serves bare repositories over smart HTTP (git http-backend)
// with basic auth, and counts pushes.
type gitServer struct {
	root   string
	url    string
	srv    *http.Server
	cgi    *cgi.Handler
	pushes atomic.Int64
}

func startGitServer(root string) (*gitServer, error) {
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		return nil, fmt.Errorf("git http-backend not installed (apt-get install git): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("git server: %w", err)
	}
	g := &gitServer{root: root, url: "http://" + ln.Addr().String()}
	g.cgi = &cgi.Handler{
		Path: gitHTTPBackend,
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root,
		},
		Stderr: os.Stderr,
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

func (g *gitServer) close() { _ = g.srv.Close() }

func (g *gitServer) serve(w http.ResponseWriter, r *http.Request) {
	if u, p, ok := r.BasicAuth(); !ok || u != gitUser || p != gitPassword {
		w.Header().Set("WWW-Authenticate", `Basic realm="bench"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		g.pushes.Add(1)
	}
	g.cgi.ServeHTTP(w, r)
}

func (g *gitServer) repoURL(name string) string { return g.url + "/" + name + ".git" }
func (g *gitServer) repoDir(name string) string { return filepath.Join(g.root, name+".git") }

// createRepo makes a bare repository whose main branch holds files
// (path -> content) in one commit.
func (g *gitServer) createRepo(name string, files map[string]string) error {
	dir := g.repoDir(name)
	if _, err := g.git("", nil, "init", "--quiet", "--bare", "--initial-branch=main", dir); err != nil {
		return err
	}
	if _, err := g.git(dir, nil, "config", "http.receivepack", "true"); err != nil {
		return err
	}
	work, err := os.MkdirTemp(g.root, "seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, ".index"), "GIT_WORK_TREE=" + work}
	if _, err := g.git(dir, env, "add", "--all", "."); err != nil {
		return err
	}
	tree, err := g.git(dir, env, "write-tree")
	if err != nil {
		return err
	}
	sha, err := g.git(dir, env, "commit-tree", tree, "-m", "seed")
	if err != nil {
		return err
	}
	_, err = g.git(dir, nil, "update-ref", "refs/heads/main", sha)
	return err
}

// head returns the commit main points at.
func (g *gitServer) head(name string) (string, error) {
	return g.git(g.repoDir(name), nil, "rev-parse", "refs/heads/main")
}

// commits counts the commits on main.
func (g *gitServer) commits(name string) (int, error) {
	out, err := g.git(g.repoDir(name), nil, "rev-list", "--count", "refs/heads/main")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// filesContaining counts the files of commit rev whose content contains
// text.
func (g *gitServer) filesContaining(name, rev, text string) (int, error) {
	out, err := g.git(g.repoDir(name), nil, "grep", "-l", "-F", text, rev, "--")
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return 0, nil // no match
	}
	if err != nil {
		return 0, err
	}
	if out == "" {
		return 0, nil
	}
	return strings.Count(out, "\n") + 1, nil
}

func (g *gitServer) git(dir string, env []string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = g.root
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + g.root,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com",
	}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
