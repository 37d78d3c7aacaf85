package forge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func TestResolver(t *testing.T) {
	r := &forge.Resolver{Hosts: map[string]forge.Host{
		"git.example.com":       {Kind: forge.KindGitea},
		"code.example.com:3000": {Kind: forge.KindForgejo},
		"gitea.internal":        {Kind: forge.KindGitea, API: "https://api.gitea.internal/api/v1/"},
		"stash.example.com":     {Kind: forge.KindBitbucketServer},
		"gitlab.example.com":    {Kind: forge.KindGitLab},
		"ghe.example.com":       {Kind: forge.KindGitHub, API: "https://ghe.example.com/api/v3"},
	}}
	tests := []struct {
		url, kind string
		want      forge.Repo
		wantErr   string
	}{
		{url: "https://git.example.com/team/deploy.git", want: forge.Repo{API: "https://git.example.com/api/v1", Owner: "team", Name: "deploy"}},
		{url: "https://user:secret-token@git.example.com/team/deploy", want: forge.Repo{API: "https://git.example.com/api/v1", Owner: "team", Name: "deploy"}},
		{url: "https://git.example.com/gitea/team/deploy.git", want: forge.Repo{API: "https://git.example.com/gitea/api/v1", Owner: "team", Name: "deploy"}},
		{url: "http://code.example.com:3000/team/deploy", want: forge.Repo{API: "http://code.example.com:3000/api/v1", Owner: "team", Name: "deploy"}},
		{url: "git@git.example.com:team/deploy.git", want: forge.Repo{API: "https://git.example.com/api/v1", Owner: "team", Name: "deploy"}},
		{url: "ssh://git@git.example.com:2222/team/deploy.git", want: forge.Repo{API: "https://git.example.com/api/v1", Owner: "team", Name: "deploy"}},
		{url: "https://gitea.internal/team/deploy", want: forge.Repo{API: "https://api.gitea.internal/api/v1", Owner: "team", Name: "deploy"}},
		{url: "https://GIT.example.com/team/deploy", want: forge.Repo{API: "https://git.example.com/api/v1", Owner: "team", Name: "deploy"}},
		{url: "https://other.example.com/team/deploy", wantErr: "forge unknown; name its kind in the config's git.forges"},
		// The repository's settings name the kind of a host nobody
		// configured (argocd-image-updater's pullRequest.github: GitHub
		// Enterprise at https://HOST/api/v3).
		{url: "https://other.example.com/team/deploy", kind: forge.KindGitHub, want: forge.Repo{API: "https://other.example.com/api/v3", Owner: "team", Name: "deploy"}},
		{url: "https://other.example.com/team/deploy", kind: forge.KindGitLab, want: forge.Repo{API: "https://other.example.com/api/v4", Owner: "team", Name: "deploy"}},
		// The operator's entry wins over what the settings name.
		{url: "https://ghe.example.com/team/deploy", kind: forge.KindGitLab, want: forge.Repo{API: "https://ghe.example.com/api/v3", Owner: "team", Name: "deploy"}},
		{url: "https://ghe.example.com:443/team/deploy", want: forge.Repo{API: "https://ghe.example.com/api/v3", Owner: "team", Name: "deploy"}},
		// Well-known hosts need no entry.
		{url: "https://gitlab.com/group/sub/deploy.git", want: forge.Repo{API: "https://gitlab.com/api/v4", Owner: "group/sub", Name: "deploy"}},
		{url: "https://acme.visualstudio.com/platform/_git/deploy", want: forge.Repo{API: "https://acme.visualstudio.com", Owner: "platform", Name: "deploy"}},
		{url: "https://x-token-auth:secret-token@bitbucket.org/team/deploy.git", want: forge.Repo{API: "https://api.bitbucket.org/2.0", Owner: "team", Name: "deploy"}},
		{url: "https://stash.example.com/scm/ops/deploy.git", want: forge.Repo{API: "https://stash.example.com/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{url: "https://dev.azure.com/acme/platform/_git/deploy", want: forge.Repo{API: "https://dev.azure.com/acme", Owner: "platform", Name: "deploy"}},
		{url: "https://bitbucket.org/deploy", wantErr: "not a Bitbucket Cloud repository URL"},
		{url: "git@github.com:acme/deploy.git", want: forge.Repo{API: "https://api.github.com", Owner: "acme", Name: "deploy"}},
		{url: "https://gitlab.example.com/platform/apps/deploy.git", want: forge.Repo{API: "https://gitlab.example.com/api/v4", Owner: "platform/apps", Name: "deploy"}},
		{url: "https://git.example.com/team/de%3Fploy", wantErr: "is not an owner, group or repository name"},
		{url: "https://git.example.com/deploy", wantErr: "not owner/name"},
		{url: "https://git.example.com/team/../deploy", wantErr: "not owner/name"},
		{url: "file:///srv/git/deploy", wantErr: "cannot be read"},
		{url: "https://user:secret-token@other.example.com/team/deploy", wantErr: "forge unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			f, got, err := r.Resolve(tt.url, tt.kind, "user", "token")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "secret-token") {
					t.Fatalf("err = %v, want one saying %q without the URL's credential", err, tt.wantErr)
				}
				return
			}
			if err != nil || f == nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("repo (-want +got):\n%s", diff)
			}
		})
	}
}
