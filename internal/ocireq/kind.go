package ocireq

import (
	"net/http"
	"strings"
)

// Kind names a registry request: "ping" (GET /v2/), "list" (tags),
// "head" and "manifest" (manifests), "blob", "token" (anything outside
// /v2/: the auth realm a registry points to) or "other".
func Kind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		return "ping"
	case strings.HasSuffix(p, "/tags/list"):
		return "list"
	case strings.Contains(p, "/manifests/") && r.Method == http.MethodHead:
		return "head"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case !strings.HasPrefix(p, "/v2/"):
		return "token"
	default:
		return "other"
	}
}
