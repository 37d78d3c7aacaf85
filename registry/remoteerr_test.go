package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// remoteMarker stands for what an internal service would answer.
const remoteMarker = "INTERNAL-ANSWER-5c2e"

// A registry answering with an error status and a body (the spec's JSON
// errors, or anything else) gives an error that says the request, the
// status and the spec's error codes, never what the registry wrote:
// image names come from annotations, so the registry may be any service.
func TestRegistryAnswerBodyNeverInError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		// wantList is what the tag list's error says; a manifest's
		// HEAD has no body, so its error says only the status.
		wantList, wantStatus string
	}{
		{name: "403 spec JSON", status: http.StatusForbidden,
			body:     `{"errors":[{"code":"DENIED","message":"` + remoteMarker + `","detail":{"x":"` + remoteMarker + `"}}]}`,
			wantList: "/tags/list?n=1000: HTTP 403 Forbidden (DENIED)", wantStatus: "HTTP 403 Forbidden"},
		{name: "401 unknown code", status: http.StatusUnauthorized,
			body:     `{"errors":[{"code":"` + remoteMarker + `","message":"m"},{"code":"UNAUTHORIZED"}]}`,
			wantList: "HTTP 401 Unauthorized (UNAUTHORIZED)", wantStatus: "HTTP 401 Unauthorized"},
		{name: "404 HTML", status: http.StatusNotFound, body: "<html>" + remoteMarker + "</html>", wantList: "HTTP 404 Not Found", wantStatus: "HTTP 404 Not Found"},
		{name: "400 text", status: http.StatusBadRequest, body: remoteMarker, wantList: "HTTP 400 Bad Request", wantStatus: "HTTP 400 Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := testreg.StartOCI(t, testreg.OCIOptions{})
			reg.Push(t, "team/web:1.0.0", testreg.Image(t, t0, "linux/amd64"))
			reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, "/tags/list") && !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
				return true
			})
			c := &Client{Hosts: fastHosts}
			repo := repoOf(t, reg, "team/web")
			_, err := c.ListTags(t.Context(), repo)
			checkRemoteError(t, err, tt.wantList)
			_, err = c.Metadata(t.Context(), repo, "1.0.0", nil)
			checkRemoteError(t, err, "/manifests/1.0.0: "+tt.wantStatus)
		})
	}
}

func checkRemoteError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), remoteMarker) {
		t.Errorf("the registry's answer shows in the error: %v", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		t.Errorf("error %v no longer wraps the transport.Error", err)
	}
}
