package giteaenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// Admin is the user Start creates: a site administrator who owns the
// repositories CreateRepo makes.
const Admin = "crowsnest"

// startTimeout bounds Start: Gitea migrates a new SQLite database and
// answers in a few seconds here; CI machines may be slower.
const startTimeout = 2 * time.Minute

// clientTimeout bounds one API request of Client: Gitea answers in
// milliseconds, a merge (git in a temporary clone) in well under a second.
const clientTimeout = time.Minute

// Gitea is a running Gitea.
type Gitea struct {
	// URL is the base URL, http://127.0.0.1:PORT, without a trailing slash.
	URL string
	// Password is Admin's; Token an access token of Admin's with every
	// scope, for the API and as the password of Git over HTTP.
	Password, Token string
	// Dir holds app.ini, the database, the repositories and gitea.log.
	Dir string

	host string // 127.0.0.1:PORT
	proc *testenv.Process
}

// Start runs Gitea with its files under dir, creates Admin and an access
// token, and returns once the API answers.
func Start(ctx context.Context, dir string) (_ *Gitea, err error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	g := &Gitea{URL: "http://" + host, Dir: dir, Password: randomString(), host: host}
	defer func() {
		if err != nil {
			g.Stop()
		}
	}()
	conf, env, err := g.configure(bin, port)
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(bin, "gitea")
	g.proc = &testenv.Process{
		Name: "gitea", Path: exe, Dir: dir, Env: env, LogPath: filepath.Join(dir, "gitea.log"),
		Args: []string{"--config", conf, "--work-path", dir, "web"},
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := g.proc.Start(); err != nil {
		return nil, err
	}
	if err := g.proc.WaitReady(ctx, testenv.HTTPOK(http.DefaultClient, g.URL+"/api/healthz")); err != nil {
		return nil, err
	}
	// The server has made the tables; the CLI writes the user into them.
	create := exec.CommandContext(ctx, exe, "--config", conf, "--work-path", dir, "admin", "user", "create",
		"--username", Admin, "--password", g.Password, "--email", Admin+"@example.test",
		"--admin", "--must-change-password=false")
	create.Dir, create.Env = dir, env
	if out, err := create.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("creating Gitea's admin user: %w\n%s", err, out)
	}
	c, err := gitea.NewClient(g.URL, gitea.SetBasicAuth(Admin, g.Password), gitea.SetContext(ctx),
		gitea.SetHTTPClient(&http.Client{Timeout: clientTimeout}))
	if err != nil {
		return nil, fmt.Errorf("connecting to Gitea: %w", err)
	}
	tok, _, err := c.CreateAccessToken(gitea.CreateAccessTokenOption{Name: "crowsnest-tests", Scopes: []gitea.AccessTokenScope{gitea.AccessTokenScopeAll}})
	if err != nil {
		return nil, fmt.Errorf("creating Gitea's access token: %w", err)
	}
	g.Token = tok.Token
	return g, nil
}

// Stop stops Gitea; its files stay in Dir.
func (g *Gitea) Stop() {
	if g.proc != nil {
		_ = g.proc.Stop()
	}
}

// Logs returns the tail of Gitea's log, for a failing test.
func (g *Gitea) Logs() string {
	if g.proc == nil {
		return ""
	}
	return g.proc.LogTail()
}

// Client is a Gitea API client acting as Admin with the token, whose
// requests end with ctx.
func (g *Gitea) Client(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(g.URL, gitea.SetToken(g.Token), gitea.SetContext(ctx),
		gitea.SetHTTPClient(&http.Client{Timeout: clientTimeout}))
}

// CloneURL is the Git-over-HTTP URL of Admin's repository repo, with
// Admin and the token as its credentials.
func (g *Gitea) CloneURL(repo string) string {
	u := url.URL{Scheme: "http", User: url.UserPassword(Admin, g.Token), Host: g.host, Path: "/" + Admin + "/" + repo + ".git"}
	return u.String()
}

// configure writes app.ini and makes the folders it names; it returns
// app.ini's path and Gitea's environment.
func (g *Gitea) configure(bin string, port int) (conf string, env []string, err error) {
	home, tmp := filepath.Join(g.Dir, "home"), filepath.Join(g.Dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", nil, err
		}
	}
	var b bytes.Buffer
	err = appINI.Execute(&b, map[string]any{
		"WorkPath": g.Dir, "StaticRoot": bin, "Port": port, "URL": g.URL + "/",
		"SecretKey": randomString(), "InternalToken": randomString(),
		"Root": os.Getuid() == 0,
	})
	if err != nil {
		return "", nil, err
	}
	conf = filepath.Join(g.Dir, "app.ini")
	if err := os.WriteFile(conf, b.Bytes(), 0o600); err != nil {
		return "", nil, err
	}
	// Only what Gitea needs: the test's own GIT_* variables would reach the
	// git processes Gitea runs.
	env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "USER=" + os.Getenv("USER")}
	return conf, env, nil
}

// randomString is 32 random bytes, URL-safe: secrets and passwords of a
// test instance.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
