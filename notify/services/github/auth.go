package github

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

const (
	// githubJWTSkew backdates a GitHub App JWT's iat, as ghinstallation
	// (Argo CD's client) does: GitHub rejects a JWT issued "in the future"
	// by a clock a little ahead of its own.
	githubJWTSkew = 30 * time.Second
	// githubJWTLifetime is the JWT's exp after its iat (GitHub allows at
	// most 10 minutes; the JWT is only used for one token exchange).
	githubJWTLifetime = 2 * time.Minute
	// githubTokenMargin renews an installation token this long before it
	// expires, so no request starts with a token about to lapse.
	githubTokenMargin = time.Minute
	// githubTokenFallbackLifetime is how long a token without expires_at
	// is used (GitHub always sends it; an API double might not).
	githubTokenFallbackLifetime = 5 * time.Minute
)

// githubAuth gives GitHub API requests their Authorization header: an
// installation token of a GitHub App, exchanged for a JWT signed with
// the app's private key and cached until shortly before it expires, or
// a fixed token (crowsnest's `token` setting).
type githubAuth struct {
	c        *svc.Client
	appID    string // decimal, the JWT's iss
	key      *rsa.PrivateKey
	tokenURL string
	static   string

	// sem lets one send exchange a token while others wait (or give up
	// with their context).
	sem     chan struct{}
	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// header returns the Authorization header value for an API request.
func (a *githubAuth) header(ctx context.Context) (string, error) {
	if a.static != "" {
		return "token " + a.static, nil
	}
	if tok, ok := a.cached(); ok {
		return "token " + tok, nil
	}
	select {
	case a.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-a.sem }()
	if tok, ok := a.cached(); ok { // another send renewed it while we waited
		return "token " + tok, nil
	}
	tok, err := a.exchange(ctx)
	if err != nil {
		return "", err
	}
	return "token " + tok, nil
}

func (a *githubAuth) cached() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token, a.token != "" && a.c.Now().Before(a.renewAt)
}

// renewable reports whether a 401 may be cured by a new token.
func (a *githubAuth) renewable() bool { return a.static == "" }

// forget drops header's token after GitHub refused it (revoked, or the
// app's installation changed), unless another send renewed it already.
func (a *githubAuth) forget(header string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if "token "+a.token == header {
		a.token, a.renewAt = "", time.Time{}
	}
}

// exchange asks GitHub for an installation token (POST
// /app/installations/{id}/access_tokens with the app's JWT).
func (a *githubAuth) exchange(ctx context.Context) (string, error) {
	now := a.c.Now()
	jwt, err := signGitHubJWT(a.key, a.appID, now)
	if err != nil {
		return "", notify.Permanent(fmt.Errorf("%s: signing the GitHub App JWT: %w", a.c.Service, err))
	}
	// The body is JSON null, as ghinstallation sends its unset options:
	// GitHub reads it as no restriction of the token.
	resp, err := a.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: a.tokenURL, Body: []byte("null"),
		Header: http.Header{"Authorization": {"Bearer " + jwt}, "Accept": {githubMediaV3}, "Content-Type": {"application/json"}},
	})
	if err != nil {
		return "", fmt.Errorf("GitHub App installation token: %w", scrub(githubRateLimited(a.c, resp, err), jwt))
	}
	var answer struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(resp.Body, &answer); err != nil || answer.Token == "" {
		// The body is not printed: it may hold a token all the same.
		return "", fmt.Errorf("%s: GitHub App installation token: answer (HTTP %d) has no token", a.c.Service, resp.Status)
	}
	renew := now.Add(githubTokenFallbackLifetime)
	if !answer.ExpiresAt.IsZero() {
		renew = answer.ExpiresAt.Add(-githubTokenMargin)
	}
	a.mu.Lock()
	a.token, a.renewAt = answer.Token, renew
	a.mu.Unlock()
	return answer.Token, nil
}

// signGitHubJWT returns the RS256 JWT a GitHub App authenticates with:
// iss is the app's ID; iat is backdated by githubJWTSkew and whole
// seconds, exp githubJWTLifetime after it (ghinstallation's claims, in
// its order, so both clients sign the same JWT in the same second).
func signGitHubJWT(key *rsa.PrivateKey, appID string, now time.Time) (string, error) {
	iat := now.Add(-githubJWTSkew).Truncate(time.Second)
	return svc.SignRS256JWT(key, struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}{"RS256", "JWT"}, struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
		Iat int64  `json:"iat"`
	}{appID, iat.Add(githubJWTLifetime).Unix(), iat.Unix()})
}

// parseGitHubKey reads a GitHub App's private key: PEM, PKCS #1 as
// GitHub hands it out, or PKCS #8. Errors never quote the key.
func parseGitHubKey(s string) (*rsa.PrivateKey, error) {
	k, err := svc.ParseRSAKey(s)
	if err != nil {
		return nil, fmt.Errorf("privateKey: %w", err)
	}
	return k, nil
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
