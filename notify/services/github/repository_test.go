package github_test

import (
	"encoding/json"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/github"
)

// Kind.Repository names the repository Send would act on, on the
// service's GitHub, in the form repoURLPath is written in; "" where Send
// reaches no repository.
func TestGitHubRepository(t *testing.T) {
	status := `"status": {"state": "success"}`
	tests := []struct {
		name       string
		enterprise string
		block      string // the rendered github block's JSON; "" for none
		want       string
	}{
		{"https repoURL", "", `{"repoURLPath": "https://github.com/team-a/app.git", ` + status + `}`, "https://github.com/team-a/app"},
		{"scp-like repoURL", "", `{"repoURLPath": "git@github.com:team-a/app.git", ` + status + `}`, "git@github.com:team-a/app"},
		{"ssh:// repoURL", "", `{"repoURLPath": "ssh://git@github.com/team-a/app", ` + status + `}`, "git@github.com:team-a/app"},
		// Send posts to the service's GitHub whatever host repoURLPath
		// names: the host is the service's.
		{"another host is the service's", "", `{"repoURLPath": "https://gitlab.example.com/team-b/app", ` + status + `}`, "https://github.com/team-b/app"},
		{"a longer path is owner/repo", "", `{"repoURLPath": "https://github.com/team-b/app/tree/main", ` + status + `}`, "https://github.com/team-b/app"},
		{"GitHub Enterprise", "https://ghe.example.com:8443/api/v3", `{"repoURLPath": "https://ghe.example.com:8443/team-a/app", "deployment": {"state": "success"}}`, "https://ghe.example.com:8443/team-a/app"},
		{"GitHub Enterprise over SSH", "https://ghe.example.com/api/v3", `{"repoURLPath": "git@ghe.example.com:team-a/app", "checkRun": {"name": "x"}}`, "git@ghe.example.com:team-a/app"},
		{"GitHub Enterprise on an api. host", "https://api.acme.ghe.com", `{"repoURLPath": "https://acme.ghe.com/team-a/app", "repositoryDispatch": {"event_type": "x"}}`, "https://acme.ghe.com/team-a/app"},
		{"pull request comment", "", `{"repoURLPath": "https://github.com/team-b/app", "pullRequestComment": {"content": "x"}}`, "https://github.com/team-b/app"},
		// Send skips or refuses these before any request.
		{"no block", "", "", ""},
		{"nothing to do", "", `{"repoURLPath": "https://github.com/team-b/app"}`, ""},
		{"no owner/repo", "", `{"repoURLPath": "https://github.com/", ` + status + `}`, ""},
		{"not a name", "", `{"repoURLPath": "https://github.com/team-b/..", ` + status + `}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := notify.Notification{Message: "m"}
			if tt.block != "" {
				n.Blocks = map[string]json.RawMessage{"github": json.RawMessage(tt.block)}
			}
			got := github.Kind.Repository(&servicetypes.GitHubSettings{Token: "t", EnterpriseBaseURL: tt.enterprise}, n)
			if got != tt.want {
				t.Errorf("Repository = %q, want %q", got, tt.want)
			}
		})
	}
}

// appID and installationID skip their number check only when they are a
// whole `$key` reference, Argo CD's syntax (servicetypes.IsSecretRef); "$" with
// anything else is no reference and must be a number.
func TestGitHubSettingsSecretReferences(t *testing.T) {
	tests := []struct {
		name, appID string
		wantErr     bool
	}{
		{"number", "1", false},
		{"reference", "$github-app_id.1", false},
		{"dollar alone", "$", true},
		{"dollar and blank", "$ 1", true},
		{"reference and more", "$id:1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := github.Kind.Type.Validate(&servicetypes.GitHubSettings{AppID: tt.appID, InstallationID: "2", PrivateKey: "$k"})
			if (err != nil) != tt.wantErr {
				t.Errorf("Validate(appID %q) = %v, want error %v", tt.appID, err, tt.wantErr)
			}
		})
	}
}
