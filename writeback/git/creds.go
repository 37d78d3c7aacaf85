package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Credentials authenticate to a Git server: over HTTPS with Username and
// Password (a token is a Password with an empty or arbitrary Username),
// over SSH (ssh:// and scp-like URLs) with SSHPrivateKey, checking the
// server's host key against SSHKnownHosts.
type Credentials struct {
	Username string
	Password string
	// SSHPrivateKey is a PEM private key (OpenSSH, PKCS#1, PKCS#8 or
	// SEC 1) without a passphrase, as in Argo CD's sshPrivateKey field.
	SSHPrivateKey string
	// SSHKnownHosts is known_hosts text: an SSH server whose host key it
	// does not list is refused, never trusted on first use.
	SSHKnownHosts string
}

// tokenUser is sent with a token when no user name is given: GitHub wants
// this one and other forges accept any non-empty name.
const tokenUser = "x-access-token"

// CredentialsSource finds credentials for a repository URL (Argo CD's
// repository and repo-creds Secrets, a named Secret, a test's fixed
// value). ok false means anonymous access.
type CredentialsSource interface {
	Credentials(ctx context.Context, repoURL string) (c Credentials, ok bool, err error)
}

type credentialsSecretKey struct{}

// WithCredentialsSecret tells a CredentialsSource, through ctx, which
// Secret ("namespace/name") the batch's changes name
// (Change.CredentialsSecret).
func WithCredentialsSecret(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, credentialsSecretKey{}, secret)
}

// CredentialsSecret is the Secret WithCredentialsSecret put in ctx, or "".
func CredentialsSecret(ctx context.Context) string {
	s, _ := ctx.Value(credentialsSecretKey{}).(string)
	return s
}

type projectKey struct{}

// WithProject tells a CredentialsSource, through ctx, the AppProject of
// the Applications the credentials are for (Change.Project): Argo CD's
// repository Secrets scoped to a project (their project field) serve that
// project's Applications only.
func WithProject(ctx context.Context, project string) context.Context {
	return context.WithValue(ctx, projectKey{}, project)
}

// Project is the AppProject WithProject put in ctx, or "".
func Project(ctx context.Context) string {
	s, _ := ctx.Value(projectKey{}).(string)
	return s
}

// StaticCredentials gives the same credentials for every repository.
type StaticCredentials Credentials

var _ CredentialsSource = StaticCredentials{}

// Credentials implements CredentialsSource.
func (s StaticCredentials) Credentials(context.Context, string) (Credentials, bool, error) {
	return Credentials(s), s.Password != "" || s.SSHPrivateKey != "", nil
}

// authFor picks the auth method for repoURL: SSH public-key auth for SSH
// URLs, basic auth (or anonymous) otherwise. timeout bounds an SSH
// connection's TCP dial.
func (c Credentials) authFor(repoURL string, timeout time.Duration) (transport.AuthMethod, error) {
	if isSSHURL(repoURL) {
		return c.newSSHAuth(repoURL, timeout)
	}
	return c.auth(), nil
}

// id is the credentials' identity, to key batches by: a digest of every
// field (never the secret itself, which must not reach a key that may be
// logged or compared), "" for none.
func (c Credentials) id() string {
	if c == (Credentials{}) {
		return ""
	}
	h := sha256.New()
	for _, f := range []string{c.Username, c.Password, c.SSHPrivateKey, c.SSHKnownHosts} {
		// Length-prefixed, so no two different sets of fields hash alike.
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// secrets lists what must never be shown, for redact.
func (c Credentials) secrets() []string { return []string{c.Password, c.SSHPrivateKey} }

func (c Credentials) auth() transport.AuthMethod {
	if c.Password == "" {
		return nil
	}
	user := c.Username
	if user == "" {
		user = tokenUser
	}
	return &githttp.BasicAuth{Username: user, Password: c.Password}
}

// RepoID is a repository's identity: its URL without credentials, as
// Result.RepoURL, the clone cache and log lines name it. Compare a
// Change's RepoURL (which may carry user:token@) with anything the writer
// returns only through RepoID.
func RepoID(repoURL string) string {
	clean, _ := splitURL(repoURL)
	return clean
}

// RepoKey is a repository URL as every spelling of one repository shares
// it, compared as Argo CD compares repository URLs: without credentials
// (RepoID), case, a trailing "/" or ".git"; an scp-like address (and
// git+ssh://) becomes the ssh:// URL it stands for and SSH's default port
// is dropped, so git@host:org/repo, ssh://git@host/org/repo and
// ssh://git@host:22/org/repo are one key (and prefixes of one another's
// paths, as repo-creds match).
func RepoKey(u string) string {
	u = strings.ToLower(RepoID(strings.TrimSpace(u)))
	if !strings.Contains(u, "://") {
		if m := SCPLikeURL.FindStringSubmatch(u); m != nil {
			u = "ssh://" + m[1] + m[2] + "/" + m[3]
		}
	}
	for _, scheme := range []string{"git+ssh://", "ssh+git://"} {
		if rest, ok := strings.CutPrefix(u, scheme); ok {
			u = "ssh://" + rest
		}
	}
	if rest, ok := strings.CutPrefix(u, "ssh://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		u = "ssh://" + strings.TrimSuffix(host, ":22") + "/" + path
	}
	u = strings.TrimSuffix(u, "/")
	return strings.TrimSuffix(u, ".git")
}

// splitURL removes user information from a repository URL, returning it
// as credentials: a URL with a password in it still works, and the
// password is never part of a cache key, log line or error. The user of
// an SSH URL without a password stays: it is the SSH login, not a secret.
func splitURL(raw string) (clean string, c Credentials) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, Credentials{}
	}
	if _, hasPassword := u.User.Password(); !hasPassword && isSSHURL(raw) {
		return raw, Credentials{}
	}
	c.Username = u.User.Username()
	c.Password, _ = u.User.Password()
	u.User = nil
	return u.String(), c
}

var userinfoRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// redactedError hides credentials in an error's text; errors.Is and As
// still see the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err with user information in URLs (but an SSH URL's
// login name) and every given secret replaced by "***".
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := userinfoRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
		scheme, userinfo, _ := strings.Cut(m, "://")
		if isSSHURL(scheme+"://") && !strings.Contains(userinfo, ":") {
			return m // an SSH login name, not a secret
		}
		return scheme + "://***@"
	})
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return &redactedError{msg: msg, err: err}
}
