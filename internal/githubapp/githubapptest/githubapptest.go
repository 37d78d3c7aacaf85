// Package githubapptest stands in for GitHub's side of a GitHub App's
// token exchange in tests: an app key, and the check GitHub makes of the
// JWT before it issues an installation token.
package githubapptest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// key is the tests' app key, made once per process: a 2048-bit key (the
// size GitHub issues) takes a while to generate.
var key = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// Key returns the test app's private key and its PEM (PKCS #1, as GitHub
// hands it out).
func Key(tb testing.TB) (*rsa.PrivateKey, string) {
	tb.Helper()
	k, err := key()
	if err != nil {
		tb.Fatal(err)
	}
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// CheckJWT checks an Authorization header as GitHub does before it issues
// an installation token: a Bearer JWT signed RS256 by pub's key, iss
// appID, issued by now and valid for at most ten minutes.
func CheckJWT(pub *rsa.PublicKey, appID int64, header string) error {
	jwt, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return fmt.Errorf("not a Bearer JWT: %q", header)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("JWT has %d parts, want 3", len(parts))
	}
	enc := base64.RawURLEncoding
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("JWT signature: %w", err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("JWT not signed by the app's key: %w", err)
	}
	var head struct{ Alg string }
	var claims struct {
		Iss      string
		Iat, Exp int64
	}
	hb, _ := enc.DecodeString(parts[0])
	cb, _ := enc.DecodeString(parts[1])
	if json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		return fmt.Errorf("JWT header %s or claims %s are not JSON", hb, cb)
	}
	now := time.Now().Unix()
	if head.Alg != "RS256" || claims.Iss != fmt.Sprint(appID) || claims.Iat > now || claims.Exp <= now || claims.Exp-claims.Iat > 600 {
		return fmt.Errorf("JWT header %s claims %s: want RS256, iss %d, issued by now, at most ten minutes", hb, cb, appID)
	}
	return nil
}
