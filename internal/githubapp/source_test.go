package githubapp

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

func keyPEM(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := testKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// fakeExchange stands in for GitHub's token endpoint: it keeps every JWT
// it was given and answers with a numbered token that expires ttl after
// the clock.
type fakeExchange struct {
	now  func() time.Time
	ttl  time.Duration
	body string // answered as is when set
	err  error

	mu   sync.Mutex
	jwts []string
}

func (f *fakeExchange) Exchange(_ context.Context, jwt string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jwts = append(f.jwts, jwt)
	if f.err != nil {
		return nil, f.err
	}
	if f.body != "" {
		return []byte(f.body), nil
	}
	return fmt.Appendf(nil, `{"token":"ghs_%d","expires_at":%q}`, len(f.jwts), f.now().Add(f.ttl).UTC().Format(time.RFC3339)), nil
}

func (f *fakeExchange) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jwts)
}

// claimsOf checks jwt's RS256 signature with pub and returns its claims.
func claimsOf(t *testing.T, pub *rsa.PublicKey, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT %q has not three parts", jwt)
	}
	enc := base64.RawURLEncoding
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		t.Fatalf("JWT signature: %v", err)
	}
	var header, claims map[string]any
	for i, out := range []*map[string]any{&header, &claims} {
		b, err := enc.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, out) != nil {
			t.Fatalf("JWT part %d is not base64url JSON: %v", i, err)
		}
	}
	if diff := cmp.Diff(map[string]any{"alg": "RS256", "typ": "JWT"}, header); diff != "" {
		t.Errorf("JWT header (-want +got):\n%s", diff)
	}
	return claims
}

// One exchange serves callers until the token is a minute from expiry;
// the JWT is signed by the app's key with iss the app's ID, iat backdated
// 30 s and exp two minutes after it.
func TestSourceToken(t *testing.T) {
	key, pemKey := keyPEM(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 500, time.UTC)
	clock := func() time.Time { return now }
	ex := &fakeExchange{now: clock, ttl: time.Hour}
	s, err := New(1234, pemKey, ex, clock)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if tok, err := s.Token(t.Context()); err != nil || tok != "ghs_1" {
			t.Fatalf("Token = %q, %v; want ghs_1", tok, err)
		}
	}
	claims := claimsOf(t, &key.PublicKey, ex.jwts[0])
	iat := now.Add(-30 * time.Second).Truncate(time.Second).Unix()
	want := map[string]any{"iss": "1234", "iat": float64(iat), "exp": float64(iat + 120)}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("JWT claims (-want +got):\n%s", diff)
	}

	now = now.Add(58 * time.Minute) // still outside the margin
	if tok, _ := s.Token(t.Context()); tok != "ghs_1" {
		t.Errorf("Token 58 minutes on = %q, want the kept ghs_1", tok)
	}
	now = now.Add(time.Minute) // a minute before it expires: renewed
	if tok, _ := s.Token(t.Context()); tok != "ghs_2" {
		t.Errorf("Token a minute before expiry = %q, want a new ghs_2", tok)
	}
	s.Forget("ghs_1") // an old token refused: the kept one stays
	if tok, _ := s.Token(t.Context()); tok != "ghs_2" {
		t.Errorf("Token after forgetting an old token = %q, want ghs_2", tok)
	}
	s.Forget("ghs_2")
	if tok, _ := s.Token(t.Context()); tok != "ghs_3" {
		t.Errorf("Token after forgetting it = %q, want a new ghs_3", tok)
	}
}

// Callers that need a token at once wait for one exchange.
func TestSourceOneExchangeForConcurrentCallers(t *testing.T) {
	_, pemKey := keyPEM(t)
	ex := &fakeExchange{now: time.Now, ttl: time.Hour}
	s, err := New(7, pemKey, ex, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if tok, err := s.Token(t.Context()); err != nil || tok != "ghs_1" {
				t.Errorf("Token = %q, %v", tok, err)
			}
		})
	}
	wg.Wait()
	if n := ex.count(); n != 1 {
		t.Errorf("%d exchanges for 8 callers, want 1", n)
	}
}

func TestSourceFailures(t *testing.T) {
	_, pemKey := keyPEM(t)
	refused := errors.New("401 Bad credentials")
	tests := []struct {
		name    string
		appID   int64
		key     string
		ex      *fakeExchange
		wantNew string
		wantErr string
	}{
		{name: "no app ID", appID: 0, key: pemKey, wantNew: "appID: want a positive integer"},
		{name: "not a key", appID: 1, key: "-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END RSA PRIVATE KEY-----\n", wantNew: "privateKey: not an RSA private key in PKCS #1 or PKCS #8"},
		{name: "not PEM", appID: 1, key: "secret-key-bytes", wantNew: "privateKey: not a PEM block"},
		{name: "exchange refused", appID: 1, key: pemKey, ex: &fakeExchange{err: refused}, wantErr: refused.Error()},
		{name: "answer without a token", appID: 1, key: pemKey, ex: &fakeExchange{body: `{"message":"ok"}`}, wantErr: "GitHub App installation token: the answer has no token"},
		{name: "answer not JSON", appID: 1, key: pemKey, ex: &fakeExchange{body: `ghs_secret`}, wantErr: "GitHub App installation token: the answer has no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.appID, tt.key, tt.ex, nil)
			if tt.wantNew != "" {
				if err == nil || err.Error() != tt.wantNew {
					t.Fatalf("New = %v, want %q", err, tt.wantNew)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Token(t.Context())
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Token = %v, want %q", err, tt.wantErr)
			}
			if tt.ex.err != nil && !errors.Is(err, tt.ex.err) {
				t.Errorf("Token = %v, want the exchange's own error", err)
			}
		})
	}
}

// A caller that gives up while another exchanges returns its context's
// error.
func TestSourceWaitEndsWithContext(t *testing.T) {
	_, pemKey := keyPEM(t)
	s, err := New(1, pemKey, &fakeExchange{now: time.Now, ttl: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.sem <- struct{}{} // an exchange in flight
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Token = %v, want context.Canceled", err)
	}
	<-s.sem
}
