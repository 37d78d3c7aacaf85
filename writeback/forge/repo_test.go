package forge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func TestGitHubRepo(t *testing.T) {
	tests := []struct {
		name, repoURL, api string
		want               forge.Repo
		wantErr            string
	}{
		{name: "https", repoURL: "https://github.com/team/deploy", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "https with .git and slash", repoURL: "https://github.com/team/deploy.git/", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "https with credentials", repoURL: "https://x-access-token:ghp_secret@github.com/team/deploy.git", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "scp-like ssh", repoURL: "git@github.com:team/deploy.git", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "ssh URL with a port", repoURL: "ssh://git@github.com:22/team/deploy.git", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "www host", repoURL: "https://www.github.com/team/deploy", want: forge.Repo{API: "https://api.github.com", Owner: "team", Name: "deploy"}},
		{name: "enterprise server", repoURL: "https://ghe.example.com/team/deploy.git", want: forge.Repo{API: "https://ghe.example.com/api/v3", Owner: "team", Name: "deploy"}},
		{name: "enterprise over ssh", repoURL: "git@ghe.example.com:team/deploy.git", want: forge.Repo{API: "https://ghe.example.com/api/v3", Owner: "team", Name: "deploy"}},
		{name: "enterprise on a port over http", repoURL: "http://ghe.example.com:8080/team/deploy", want: forge.Repo{API: "http://ghe.example.com:8080/api/v3", Owner: "team", Name: "deploy"}},
		{name: "API given", repoURL: "git@ghe.example.com:team/deploy.git", api: "https://api.ghe.example.com/", want: forge.Repo{API: "https://api.ghe.example.com", Owner: "team", Name: "deploy"}},
		{name: "dots and dashes", repoURL: "https://github.com/my-org/my.repo_x", want: forge.Repo{API: "https://api.github.com", Owner: "my-org", Name: "my.repo_x"}},
		{name: "nested path", repoURL: "https://github.com/team/deploy/tree/main", wantErr: "want OWNER/REPOSITORY on GitHub"},
		{name: "owner only", repoURL: "https://github.com/team", wantErr: "want OWNER/REPOSITORY on GitHub"},
		{name: "climbing out", repoURL: "https://github.com/team/../admin", wantErr: `".." is not an owner`},
		{name: "escaped slash", repoURL: "https://github.com/team/a%2Fb", wantErr: "want OWNER/REPOSITORY"},
		{name: "query in a name", repoURL: "git@github.com:team/de?ploy", wantErr: `"de?ploy" is not an owner`},
		{name: "not a URL", repoURL: "deploy", wantErr: "not a Git repository URL"},
		{name: "API with credentials", repoURL: "https://github.com/team/deploy", api: "https://u:secret@api.example.com", wantErr: "want http(s)://HOST"},
		{name: "API not http", repoURL: "https://github.com/team/deploy", api: "ftp://api.example.com", wantErr: "want http(s)://HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := forge.GitHubRepo(tt.repoURL, tt.api)
			checkRepo(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestGitLabRepo(t *testing.T) {
	tests := []struct {
		name, repoURL, api string
		want               forge.Repo
		wantErr            string
	}{
		{name: "https", repoURL: "https://gitlab.com/team/deploy.git", want: forge.Repo{API: "https://gitlab.com/api/v4", Owner: "team", Name: "deploy"}},
		{name: "nested groups", repoURL: "https://gitlab.com/team/platform/apps/deploy", want: forge.Repo{API: "https://gitlab.com/api/v4", Owner: "team/platform/apps", Name: "deploy"}},
		{name: "scp-like ssh", repoURL: "git@gitlab.example.com:team/platform/deploy.git", want: forge.Repo{API: "https://gitlab.example.com/api/v4", Owner: "team/platform", Name: "deploy"}},
		{name: "ssh URL on a port", repoURL: "ssh://git@gitlab.example.com:2222/team/deploy.git", want: forge.Repo{API: "https://gitlab.example.com/api/v4", Owner: "team", Name: "deploy"}},
		{name: "http on a port", repoURL: "http://gitlab.example.com:8080/team/deploy", want: forge.Repo{API: "http://gitlab.example.com:8080/api/v4", Owner: "team", Name: "deploy"}},
		{name: "credentials dropped", repoURL: "https://oauth2:glpat-secret@gitlab.com/team/deploy.git", want: forge.Repo{API: "https://gitlab.com/api/v4", Owner: "team", Name: "deploy"}},
		{name: "API given", repoURL: "git@gitlab.example.com:team/deploy.git", api: "https://gitlab-api.example.com/api/v4/", want: forge.Repo{API: "https://gitlab-api.example.com/api/v4", Owner: "team", Name: "deploy"}},
		{name: "served under a path", repoURL: "https://example.com/gitlab/team/deploy.git", api: "https://example.com/gitlab/api/v4", want: forge.Repo{API: "https://example.com/gitlab/api/v4", Owner: "team", Name: "deploy"}},
		{name: "served under a path, ssh", repoURL: "git@example.com:team/deploy.git", api: "https://example.com/gitlab/api/v4", want: forge.Repo{API: "https://example.com/gitlab/api/v4", Owner: "team", Name: "deploy"}},
		{name: "web URL of a page", repoURL: "https://gitlab.com/team/deploy/-/merge_requests", wantErr: `"-" is not an owner`},
		{name: "project only", repoURL: "https://gitlab.com/deploy", wantErr: "want GROUP/PROJECT on GitLab"},
		{name: "climbing out", repoURL: "https://gitlab.com/team/./deploy", wantErr: `"." is not an owner`},
		{name: "empty segment", repoURL: "https://gitlab.com/team//deploy", wantErr: `"" is not an owner`},
		{name: "not a URL", repoURL: "", wantErr: "not a Git repository URL"},
		{name: "bad API", repoURL: "https://gitlab.com/team/deploy", api: "gitlab.com/api/v4", wantErr: "want http(s)://HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := forge.GitLabRepo(tt.repoURL, tt.api)
			checkRepo(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkRepo(t *testing.T, got forge.Repo, err error, want forge.Repo, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %+v, %v; want an error with %q", got, err, wantErr)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows a credential: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
