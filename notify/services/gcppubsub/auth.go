package gcppubsub

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/rs256"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

const (
	// googleTokenURL is Google's OAuth 2.0 token endpoint, for keys that
	// do not name one.
	googleTokenURL = "https://oauth2.googleapis.com/token"
	// pubsubScope is the OAuth scope of publishing.
	pubsubScope = "https://www.googleapis.com/auth/pubsub"
	// googleAssertionLifetime is the longest Google accepts.
	googleAssertionLifetime = time.Hour
	// googleTokenMargin renews a token this long before it expires, so a
	// request never carries one that expires on the way.
	googleTokenMargin = time.Minute
	// metadataHost answers for the workload's service account on GKE
	// (Workload Identity) and GCE; GCE_METADATA_HOST replaces it, as in
	// Google's client libraries.
	metadataHost = "metadata.google.internal"
)

// googleAuth gets OAuth 2.0 access tokens for Pub/Sub: from a service
// account key (an RS256 JWT assertion exchanged at the key's token_uri) or
// an authorized user's refresh token, else from the metadata server; and
// keeps one until shortly before it expires.
type googleAuth struct {
	c       *svc.Client
	keyFile string
	env     func(string) string

	mu      sync.Mutex
	current string
	expires time.Time
}

// googleKey is what crowsnest reads of a credentials JSON file.
type googleKey struct {
	Type         string `json:"type"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RefreshToken string `json:"refresh_token"`
}

// token returns a valid access token.
func (a *googleAuth) token(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.c.Now()
	if a.current != "" && now.Before(a.expires.Add(-googleTokenMargin)) {
		return a.current, nil
	}
	tok, ttl, err := a.fetch(ctx, now)
	if err != nil {
		return "", err
	}
	a.current, a.expires = tok, now.Add(ttl)
	return tok, nil
}

// forget drops tok after the API refused it.
func (a *googleAuth) forget(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.current == tok {
		a.current = ""
	}
}

func (a *googleAuth) fetch(ctx context.Context, now time.Time) (string, time.Duration, error) {
	raw, what, err := a.credentialsJSON()
	if err != nil {
		return "", 0, err
	}
	if raw == nil {
		return a.metadataToken(ctx)
	}
	var k googleKey
	if json.Unmarshal(raw, &k) != nil {
		return "", 0, notify.Permanent(fmt.Errorf("%s: %s: not a Google credentials JSON file", a.c.Service, what))
	}
	tokenURL := k.TokenURI
	if tokenURL == "" {
		tokenURL = googleTokenURL
	}
	form := url.Values{}
	switch k.Type {
	case "service_account":
		key, err := parseGoogleKey(k.PrivateKey)
		if err != nil || k.ClientEmail == "" {
			return "", 0, notify.Permanent(fmt.Errorf("%s: %s: want a service account key with client_email and an RSA private_key", a.c.Service, what))
		}
		jwt, err := signGoogleJWT(key, k.PrivateKeyID, k.ClientEmail, tokenURL, now)
		if err != nil {
			return "", 0, notify.Permanent(fmt.Errorf("%s: signing the token request: %w", a.c.Service, err))
		}
		form.Set("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
		form.Set("assertion", jwt)
	case "authorized_user":
		form.Set("grant_type", "refresh_token")
		form.Set("client_id", k.ClientID)
		form.Set("client_secret", k.ClientSecret)
		form.Set("refresh_token", k.RefreshToken)
	default:
		return "", 0, notify.Permanent(fmt.Errorf("%s: %s: credentials of type %q are not supported by crowsnest (service_account, authorized_user)", a.c.Service, what, k.Type))
	}
	resp, err := a.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: tokenURL,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(form.Encode()),
	})
	if err != nil {
		return "", 0, err
	}
	return a.readToken(resp)
}

// credentialsJSON is the keyFile's JSON (or the file it names), else
// GOOGLE_APPLICATION_CREDENTIALS' file; nil for the metadata server.
// Errors name the setting, never its content.
func (a *googleAuth) credentialsJSON() ([]byte, string, error) {
	if v, inline := trimKey(a.keyFile); inline {
		return []byte(v), "keyFile", nil
	}
	path, what := a.keyFile, "keyFile"
	if path == "" {
		path, what = a.env("GOOGLE_APPLICATION_CREDENTIALS"), "GOOGLE_APPLICATION_CREDENTIALS"
	}
	if path == "" {
		return nil, "", nil
	}
	raw, err := os.ReadFile(path) // the operator's credentials file
	if err != nil {
		return nil, "", notify.Permanent(fmt.Errorf("%s: reading %s: %w", a.c.Service, what, errors.Unwrap(err)))
	}
	return raw, what, nil
}

// metadataToken asks the metadata server for the workload's token.
func (a *googleAuth) metadataToken(ctx context.Context) (string, time.Duration, error) {
	host := a.env("GCE_METADATA_HOST")
	if host == "" {
		host = metadataHost
	}
	resp, err := a.c.Do(ctx, svc.Request{
		Method: http.MethodGet, URL: "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token",
		Header: http.Header{"Metadata-Flavor": {"Google"}},
	})
	if err != nil {
		return "", 0, fmt.Errorf("no keyFile or GOOGLE_APPLICATION_CREDENTIALS, and the metadata server: %w", err)
	}
	return a.readToken(resp)
}

func (a *googleAuth) readToken(resp *svc.Response) (string, time.Duration, error) {
	var t struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := resp.Decode(&t); err != nil || t.AccessToken == "" {
		return "", 0, fmt.Errorf("%s: the token endpoint answered without an access_token", a.c.Service)
	}
	ttl := time.Duration(t.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = googleTokenMargin // unknown lifetime: use it for this send only
	}
	return t.AccessToken, ttl, nil
}

// signGoogleJWT returns the RS256 assertion of a service account asking
// for a Pub/Sub token at aud (the key's token_uri).
func signGoogleJWT(key *rsa.PrivateKey, keyID, email, aud string, now time.Time) (string, error) {
	iat := now.Truncate(time.Second)
	return rs256.SignJWT(key, struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
		Kid string `json:"kid,omitempty"`
	}{"RS256", "JWT", keyID}, struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}{email, pubsubScope, aud, iat.Unix(), iat.Add(googleAssertionLifetime).Unix()})
}

// parseGoogleKey reads a service account's private_key (PEM, PKCS #8 as
// Google issues it, or PKCS #1).
func parseGoogleKey(s string) (*rsa.PrivateKey, error) { return rs256.ParseKey(s) }
