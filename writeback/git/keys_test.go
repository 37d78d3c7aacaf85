package git

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// Results name their Applications by Key (namespace/name in the
// controller), never by the bare name two namespaces may share; the
// repository is named by RepoID, without the credentials one of the
// changes carried in its URL.
func TestResultsNameApplicationsByKey(t *testing.T) {
	const password = "s3cret-token"
	s, url := seeded(t, testgit.Options{Password: password})
	withCreds := strings.Replace(url, "://", "://bot:"+password+"@", 1)
	w := newWriter(t, nil)

	// Both URLs carry the same credentials: one batch (different ones
	// are different batches, credsecret_test.go).
	a := kustomizeWeb(withCreds, "1.2.0")
	a.Key = "team-a/web"
	b := Change{App: "web", Key: "team-b/web", RepoURL: withCreds, Branch: "main", Path: "missing", Target: Target{Kind: TargetKustomization},
		Images: []Image{{Name: "ghcr.io/acme/web", NewTag: "9.9.9"}}}
	res, err := w.Apply(t.Context(), []Change{b, a})
	if err == nil || len(res) != 1 {
		t.Fatalf("Apply: %v, %d results; want one result and team-b's error", err, len(res))
	}
	r := res[0]
	if r.RepoURL != url || RepoID(withCreds) != url {
		t.Errorf("result repository %q, RepoID %q; want %q", r.RepoURL, RepoID(withCreds), url)
	}
	if diff := cmp.Diff([]string{"team-a/web", "team-b/web"}, r.Keys); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	if len(r.Updates) != 1 || r.Updates[0].Key != "team-a/web" || r.Updates[0].App != "web" {
		t.Errorf("updates %+v, want team-a/web's one", r.Updates)
	}
	if len(r.Failed) != 1 || r.Failed[0].Key != "team-b/web" {
		t.Errorf("failed %+v, want team-b/web's change", r.Failed)
	}
	if r.CommitSHA != s.Head(t, "apps", "main") {
		t.Errorf("commit %q, want the head", r.CommitSHA)
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestRepoID(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{name: "https with a token", url: "https://bot:tok@git.example.com/org/apps.git", want: "https://git.example.com/org/apps.git"},
		{name: "https with a user only", url: "https://tok@git.example.com/org/apps.git", want: "https://git.example.com/org/apps.git"},
		{name: "https without credentials", url: "https://git.example.com/org/apps.git", want: "https://git.example.com/org/apps.git"},
		{name: "ssh login is no secret", url: "ssh://git@git.example.com/org/apps.git", want: "ssh://git@git.example.com/org/apps.git"},
		{name: "scp-like", url: "git@git.example.com:org/apps.git", want: "git@git.example.com:org/apps.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RepoID(tt.url); got != tt.want {
				t.Errorf("RepoID(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}
