package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The proxy in front of Gitea names each request crowsnest makes: the
// pull-request API calls of a write and of following one, and Git over
// HTTP.
func TestForgeKind(t *testing.T) {
	tests := []struct {
		name, method, target string
		want                 string
	}{
		{"find the open pull request", http.MethodGet, "/api/v1/repos/crowsnest/deploy-000/pulls?state=open&base_branch=main", forgeListPulls},
		{"open", http.MethodPost, "/api/v1/repos/crowsnest/deploy-000/pulls", forgeOpenPull},
		{"follow", http.MethodGet, "/api/v1/repos/crowsnest/deploy-000/pulls/7", forgeGetPull},
		{"update title and body", http.MethodPatch, "/api/v1/repos/crowsnest/deploy-000/pulls/7", forgeEditPull},
		{"auto-merge", http.MethodPost, "/api/v1/repos/crowsnest/deploy-000/pulls/7/merge", forgeOtherAPI},
		{"labels", http.MethodGet, "/api/v1/repos/crowsnest/deploy-000/labels?page=1", forgeOtherAPI},
		{"refs", http.MethodGet, "/crowsnest/deploy-000.git/info/refs?service=git-upload-pack", forgeGitRefs},
		{"fetch", http.MethodPost, "/crowsnest/deploy-000.git/git-upload-pack", forgeGitFetch},
		{"push", http.MethodPost, "/crowsnest/deploy-000.git/git-receive-pack", forgeGitPush},
		{"a page", http.MethodGet, "/crowsnest/deploy-000/pulls", forgeOtherHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := forgeKind(httptest.NewRequest(tt.method, tt.target, http.NoBody))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("forgeKind(%s %s) (-want +got):\n%s", tt.method, tt.target, diff)
			}
		})
	}
}
