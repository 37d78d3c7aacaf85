package githubapp

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/rs256"
)

const (
	// jwtSkew backdates the JWT's iat, as ghinstallation (Argo CD's
	// client) does: GitHub rejects a JWT issued "in the future" by a
	// clock a little ahead of its own.
	jwtSkew = 30 * time.Second
	// jwtLifetime is the JWT's exp after its iat (GitHub allows at most
	// 10 minutes; the JWT is only used for one token exchange).
	jwtLifetime = 2 * time.Minute
	// tokenMargin renews an installation token this long before it
	// expires, so no request starts with a token about to lapse.
	tokenMargin = time.Minute
	// tokenFallbackLifetime is how long a token without expires_at is
	// used (GitHub always sends it; an API double might not).
	tokenFallbackLifetime = 5 * time.Minute
)

// Exchanger sends one installation token request for a Source: POST
// TokenPath(installation) under the GitHub API with the header
// "Authorization: Bearer "+jwt and the JSON body null (what ghinstallation
// sends for no restriction of the token), and returns the body of a 2xx
// answer. Its errors are the caller's (rate limits, permanent refusals)
// and must not show jwt. Implemented by notify/services/github's sender
// and writeback/forge's GitHub client.
type Exchanger interface {
	Exchange(ctx context.Context, jwt string) ([]byte, error)
}

// TokenPath is the path of the token exchange under the API's root, with
// no leading slash.
func TokenPath(installation int64) string {
	return "app/installations/" + strconv.FormatInt(installation, 10) + "/access_tokens"
}

// Source is one app installation's token, shared by every request made
// with it.
type Source struct {
	appID string // decimal, the JWT's iss
	key   *rsa.PrivateKey
	ex    Exchanger
	now   func() time.Time

	// sem lets one caller exchange a token while others wait (or give
	// up with their context).
	sem     chan struct{}
	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// New returns the token source of app appID with privateKey (PEM, PKCS #1
// as GitHub hands it out, or PKCS #8), exchanging through ex. now is the
// clock (time.Now when nil). Errors never quote the key.
func New(appID int64, privateKey string, ex Exchanger, now func() time.Time) (*Source, error) {
	if appID <= 0 {
		return nil, errors.New("appID: want a positive integer")
	}
	key, err := rs256.ParseKey(privateKey)
	if err != nil {
		return nil, fmt.Errorf("privateKey: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Source{appID: strconv.FormatInt(appID, 10), key: key, ex: ex, now: now, sem: make(chan struct{}, 1)}, nil
}

// Token returns an installation token: the kept one while it is good,
// else a new one.
func (s *Source) Token(ctx context.Context) (string, error) {
	if tok, ok := s.cached(); ok {
		return tok, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.sem }()
	if tok, ok := s.cached(); ok { // another caller renewed it while we waited
		return tok, nil
	}
	return s.exchange(ctx)
}

func (s *Source) cached() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.token != "" && s.now().Before(s.renewAt)
}

// Forget drops token after GitHub refused it (revoked, or the app's
// installation changed), unless another caller renewed it already.
func (s *Source) Forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token, s.renewAt = "", time.Time{}
	}
}

// exchange asks GitHub for an installation token with the app's JWT.
func (s *Source) exchange(ctx context.Context) (string, error) {
	now := s.now()
	jwt, err := signJWT(s.key, s.appID, now)
	if err != nil {
		return "", fmt.Errorf("signing the GitHub App JWT: %w", err)
	}
	body, err := s.ex.Exchange(ctx, jwt)
	if err != nil {
		return "", err
	}
	var answer struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Token == "" {
		// The body is not printed: it may hold a token all the same.
		return "", errors.New("GitHub App installation token: the answer has no token")
	}
	renew := now.Add(tokenFallbackLifetime)
	if !answer.ExpiresAt.IsZero() {
		renew = answer.ExpiresAt.Add(-tokenMargin)
	}
	s.mu.Lock()
	s.token, s.renewAt = answer.Token, renew
	s.mu.Unlock()
	return answer.Token, nil
}

// signJWT returns the RS256 JWT a GitHub App authenticates with: iss is
// the app's ID; iat is backdated by jwtSkew and whole seconds, exp
// jwtLifetime after it (ghinstallation's claims, in its order, so both
// clients sign the same JWT in the same second).
func signJWT(key *rsa.PrivateKey, appID string, now time.Time) (string, error) {
	iat := now.Add(-jwtSkew).Truncate(time.Second)
	return rs256.SignJWT(key, struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}{"RS256", "JWT"}, struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
		Iat int64  `json:"iat"`
	}{appID, iat.Add(jwtLifetime).Unix(), iat.Unix()})
}
