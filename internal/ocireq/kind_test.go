package ocireq_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/ocireq"
)

func TestKind(t *testing.T) {
	tests := []struct {
		name, method, path, want string
	}{
		{name: "ping", method: http.MethodGet, path: "/v2/", want: "ping"},
		{name: "ping without slash", method: http.MethodGet, path: "/v2", want: "ping"},
		{name: "tags", method: http.MethodGet, path: "/v2/team/app/tags/list", want: "list"},
		{name: "head", method: http.MethodHead, path: "/v2/team/app/manifests/v1", want: "head"},
		{name: "manifest", method: http.MethodGet, path: "/v2/team/app/manifests/v1", want: "manifest"},
		{name: "blob", method: http.MethodGet, path: "/v2/team/app/blobs/sha256:abc", want: "blob"},
		{name: "referrers", method: http.MethodGet, path: "/v2/team/app/referrers/sha256:abc", want: "referrers"},
		{name: "token", method: http.MethodGet, path: "/token", want: "token"},
		{name: "catalog", method: http.MethodGet, path: "/v2/_catalog", want: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, http.NoBody)
			if got := ocireq.Kind(r); got != tt.want {
				t.Errorf("Kind(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
			}
		})
	}
}
