package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Headers carrying signatures.
const (
	// GitHubSignatureHeader is GitHub's HMAC-SHA256 of the body,
	// "sha256=<hex>".
	GitHubSignatureHeader = "X-Hub-Signature-256"
	// SignatureHeader is crowsnest's own HMAC-SHA256 of the body for the
	// generic form, "sha256=<hex>", the same scheme as GitHub's.
	SignatureHeader = "X-Crowsnest-Signature-256"
)

// authenticate checks a request the way the source's product can send
// credentials. A source without a secret exists only when
// AllowUnauthenticated was set.
func (s *source) authenticate(r *http.Request, body []byte) bool {
	if len(s.Secret) == 0 {
		return true
	}
	switch s.Type {
	case GHCR:
		return validSignature(r.Header.Get(GitHubSignatureHeader), s.Secret, body)
	case Generic:
		return validSignature(r.Header.Get(SignatureHeader), s.Secret, body) || validToken(bearer(r), s.Secret)
	case Harbor:
		// Harbor sends its "Auth Header" setting verbatim; accept it with
		// or without a "Bearer " prefix.
		return validToken(r.Header.Get("Authorization"), s.Secret) || validToken(bearer(r), s.Secret)
	default: // Docker Hub, Quay and distribution cannot sign.
		return validToken(bearer(r), s.Secret) || validToken(r.URL.Query().Get("secret"), s.Secret)
	}
}

func bearer(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return auth[len("Bearer "):]
	}
	return ""
}

// validToken compares in constant time. Hashing first makes the time
// independent of the secret's length too.
func validToken(got string, secret []byte) bool {
	if got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// validSignature checks "sha256=<hex>" against the HMAC-SHA256 of body.
func validSignature(header string, secret, body []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(secret, body))
}

// Sign returns the HMAC-SHA256 of body under secret, the value (hex
// encoded, after "sha256=") of SignatureHeader and GitHubSignatureHeader.
func Sign(secret, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return mac.Sum(nil)
}
