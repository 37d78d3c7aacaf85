package ocireq

import (
	"net/http"
	"strings"
)

// The kinds Kind tells apart.
const (
	Ping     = "ping"
	Token    = "token"
	List     = "list"
	Head     = "head"
	Manifest = "manifest"
	Blob     = "blob"
	// Referrers is the OCI 1.1 referrers API, where signatures are found.
	Referrers = "referrers"
	Other     = "other"
)

// Kind names a registry request: Ping (GET /v2/), List (tags), Head and
// Manifest (manifests), Blob, Token (anything outside /v2/: the auth
// realm a registry points to) or Other.
func Kind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		return Ping
	case strings.HasSuffix(p, "/tags/list"):
		return List
	case strings.Contains(p, "/manifests/") && r.Method == http.MethodHead:
		return Head
	case strings.Contains(p, "/manifests/"):
		return Manifest
	case strings.Contains(p, "/blobs/"):
		return Blob
	case strings.Contains(p, "/referrers/"):
		return Referrers
	case !strings.HasPrefix(p, "/v2/"):
		return Token
	default:
		return Other
	}
}
