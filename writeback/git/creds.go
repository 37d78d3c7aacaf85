package git

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Credentials authenticate to a Git server over HTTPS. A token is a
// Password with an empty or arbitrary Username.
type Credentials struct {
	Username string
	Password string
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

// StaticCredentials gives the same credentials for every repository.
type StaticCredentials Credentials

var _ CredentialsSource = StaticCredentials{}

// Credentials implements CredentialsSource.
func (s StaticCredentials) Credentials(context.Context, string) (Credentials, bool, error) {
	return Credentials(s), s.Password != "", nil
}

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

// splitURL removes user information from a repository URL, returning it
// as credentials: a URL with a password in it still works, and the
// password is never part of a cache key, log line or error.
func splitURL(raw string) (clean string, c Credentials) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
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

// redact returns err with user information in URLs and every given
// secret replaced by "***".
func redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := userinfoRE.ReplaceAllString(err.Error(), "${1}***@")
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return &redactedError{msg: msg, err: err}
}
