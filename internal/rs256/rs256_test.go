package rs256_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/rs256"
)

// Keys are read as GitHub (PKCS #1) and Google (PKCS #8) hand them out;
// anything else is refused without quoting it.
func TestParseKey(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(rk)
	if err != nil {
		t.Fatal(err)
	}
	ec8, err := x509.MarshalPKCS8PrivateKey(ek)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	tests := []struct {
		name, in, wantErr string
	}{
		{name: "PKCS #1", in: enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk))},
		{name: "PKCS #8 with blanks around", in: "\n  " + enc("PRIVATE KEY", pkcs8) + "\n"},
		{name: "EC key", in: enc("PRIVATE KEY", ec8), wantErr: "not an RSA key (RS256 needs one)"},
		{name: "garbage in PEM", in: enc("RSA PRIVATE KEY", []byte("secret-bytes")), wantErr: "not an RSA private key in PKCS #1 or PKCS #8"},
		{name: "not PEM", in: "secret-bytes", wantErr: "not a PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := rs256.ParseKey(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseKey = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !k.Equal(rk) {
				t.Fatalf("ParseKey = %v, want the key", err)
			}
		})
	}
}

// A signed JWT verifies with the key's public half.
func TestSignJWT(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwt, err := rs256.SignJWT(k, map[string]string{"alg": "RS256"}, map[string]int{"iat": 1})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || parts[0] != "eyJhbGciOiJSUzI1NiJ9" || parts[1] != "eyJpYXQiOjF9" {
		t.Fatalf("JWT = %q, want the header and claims as base64url JSON", jwt)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		t.Errorf("signature: %v", err)
	}
}
