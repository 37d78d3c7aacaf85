package github

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/githubapp"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// githubAuth gives GitHub API requests their Authorization header: an
// installation token of a GitHub App (internal/githubapp: a JWT signed
// with the app's private key, exchanged through this service's client and
// kept until shortly before it expires), or a fixed token (crowsnest's
// `token` setting).
type githubAuth struct {
	c        *svc.Client
	app      *githubapp.Source // nil with a fixed token
	tokenURL string
	static   string
}

var _ githubapp.Exchanger = (*githubAuth)(nil)

// header returns the Authorization header value for an API request.
func (a *githubAuth) header(ctx context.Context) (string, error) {
	if a.app == nil {
		return "token " + a.static, nil
	}
	tok, err := a.app.Token(ctx)
	if err != nil {
		return "", err
	}
	return "token " + tok, nil
}

// renewable reports whether a 401 may be cured by a new token.
func (a *githubAuth) renewable() bool { return a.app != nil }

// forget drops header's token after GitHub refused it (revoked, or the
// app's installation changed), unless another send renewed it already.
func (a *githubAuth) forget(header string) {
	if a.app != nil {
		a.app.Forget(strings.TrimPrefix(header, "token "))
	}
}

// Exchange implements githubapp.Exchanger: POST
// /app/installations/{id}/access_tokens with the app's JWT, through the
// service's client, a refusal shaped as the outbox needs it.
func (a *githubAuth) Exchange(ctx context.Context, jwt string) ([]byte, error) {
	// The body is JSON null, as ghinstallation sends its unset options:
	// GitHub reads it as no restriction of the token.
	resp, err := a.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: a.tokenURL, Body: []byte("null"),
		Header: http.Header{"Authorization": {"Bearer " + jwt}, "Accept": {githubMediaV3}, "Content-Type": {"application/json"}},
	})
	if err != nil {
		return nil, fmt.Errorf("GitHub App installation token: %w", scrub(githubRateLimited(a.c, resp, err), jwt))
	}
	return resp.Body, nil
}

// githubRateLimited turns GitHub's rate limit answers that svc.Client.Do
// reads as permanent into a *notify.RateLimitError: GitHub answers an
// exhausted primary limit (X-RateLimit-Remaining: 0) and a secondary
// limit with 403, not 429. Other errors are returned as they are. A 403
// about permissions also carries X-RateLimit-Reset (GitHub sends it on
// every answer), so the reset alone proves nothing.
func githubRateLimited(c *svc.Client, resp *svc.Response, err error) error {
	if resp == nil || resp.Status != http.StatusForbidden {
		return err
	}
	retryAfter := resp.Header.Get("Retry-After") != ""
	exhausted := resp.Header.Get("X-RateLimit-Remaining") == "0"
	secondary := bytes.Contains(bytes.ToLower(resp.Body), []byte("rate limit"))
	if !retryAfter && !exhausted && !secondary {
		return err
	}
	// GitHub's advice: Retry-After when sent, the reset time when the
	// limit is used up, else at least a minute.
	wait := time.Minute
	if retryAfter || exhausted {
		if d, ok := notify.RetryAfter(resp.Header, c.Now()); ok {
			wait = d
		}
	}
	return fmt.Errorf("%w: %s", &notify.RateLimitError{Service: c.Service, RetryAfter: wait}, err.Error())
}

// scrubbedError is an error whose text had a secret the answer echoed
// (an Authorization header): its text masks it, errors.As still finds
// what it wraps (permanent, rate limited).
type scrubbedError struct {
	err    error
	secret string
}

func (e *scrubbedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.secret, "***") }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub masks secret in err's text.
func scrub(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &scrubbedError{err: err, secret: secret}
}
