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

// credentials is what a request's header and query say about its sender,
// read before the body so that most refusals cost no body at all.
type credentials int

const (
	// credentialsMissing: nothing the source accepts, whatever the body.
	credentialsMissing credentials = iota
	// credentialsValid: a valid token, or a source without a secret.
	credentialsValid
	// credentialsSigned: a well-formed signature only the body can check.
	credentialsSigned
)

// checkCredentials checks a request the way the source's product can send
// credentials, as far as that is possible without the body. A source
// without a secret exists only when AllowUnauthenticated was set.
func (s *source) checkCredentials(r *http.Request) credentials {
	if len(s.Secret) == 0 || s.validToken(r) {
		return credentialsValid
	}
	if h := s.signatureHeader(); h != "" {
		if _, ok := parseSignature(r.Header.Get(h)); ok {
			return credentialsSigned
		}
	}
	return credentialsMissing
}

func (s *source) validToken(r *http.Request) bool {
	switch s.Type {
	case GHCR: // GitHub signs; a token alone is not enough.
		return false
	case Generic:
		return tokenMatches(bearer(r), s.Secret)
	case Harbor:
		// Harbor sends its "Auth Header" setting verbatim; accept it with
		// or without a "Bearer " prefix.
		return tokenMatches(r.Header.Get("Authorization"), s.Secret) || tokenMatches(bearer(r), s.Secret)
	default: // Docker Hub, Quay and distribution cannot sign.
		return tokenMatches(bearer(r), s.Secret) || tokenMatches(r.URL.Query().Get("secret"), s.Secret)
	}
}

// signatureHeader names the header carrying the source's HMAC of the
// body, "" for products that cannot sign.
func (s *source) signatureHeader() string {
	switch s.Type {
	case GHCR:
		return GitHubSignatureHeader
	case Generic:
		return SignatureHeader
	default:
		return ""
	}
}

// validSignature checks the signature checkCredentials found against
// the body.
func (s *source) validSignature(r *http.Request, body []byte) bool {
	got, ok := parseSignature(r.Header.Get(s.signatureHeader()))
	return ok && hmac.Equal(got, Sign(s.Secret, body))
}

func bearer(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if len(auth) > len("Bearer ") && strings.EqualFold(auth[:len("Bearer ")], "Bearer ") {
		return auth[len("Bearer "):]
	}
	return ""
}

// tokenMatches compares in constant time. Hashing first makes the time
// independent of the secret's length too.
func tokenMatches(got string, secret []byte) bool {
	if got == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// parseSignature reads "sha256=<hex>"; anything else, including a digest
// of the wrong length, cannot be a valid signature and is refused without
// reading the body.
func parseSignature(header string) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSig) != 2*sha256.Size {
		return nil, false
	}
	sig, err := hex.DecodeString(hexSig)
	return sig, err == nil
}

// Sign returns the HMAC-SHA256 of body under secret, the value (hex
// encoded, after "sha256=") of SignatureHeader and GitHubSignatureHeader.
func Sign(secret, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return mac.Sum(nil)
}
