package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// forgeAppConfig is a config with git.forges and notification services
// (YAML under each key, indented).
func forgeAppConfig(forges, services, extra string) []byte {
	return []byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\ngit:\n  forges:\n" + forges +
		"notifications:\n" + extra + "  services:\n" + services)
}

const (
	ghApp    = "      github: {appID: 1, installationID: 2, privateKey: $github-key}\n"
	gheApp   = "      github: {appID: 3, installationID: 4, privateKey: $ghe-key, enterpriseBaseURL: https://ghe.example.com/api/v3}\n"
	ghToken  = "      github: {token: $github-token}\n"
	slackSvc = "      slack: {token: $slack-token}\n"
)

// useNotificationsGitHubApp is refused, naming the field, on a forge that
// is not GitHub and when no github service's app is for the host (none,
// a token, another host's, or two); an entry for github.com needs no
// kind. With an argocd-notifications-cm, whose services are read at run,
// the check waits for the write.
func TestUseNotificationsGitHubApp(t *testing.T) {
	tests := []struct {
		name, forges, services, extra string
		want                          []FieldError
	}{
		{name: "github.com without a kind", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    gh:\n" + ghApp + "    chat:\n" + slackSvc},
		{name: "enterprise", forges: "    ghe.example.com: {kind: github, useNotificationsGitHubApp: true}\n", services: "    gh:\n" + ghApp + "    ghe:\n" + gheApp},
		{name: "enterprise on another port", forges: "    ghe.example.com:8443: {kind: github, useNotificationsGitHubApp: true}\n", services: "    ghe:\n" + gheApp},
		{name: "not opted in", forges: "    github.com: {kind: github}\n", services: "    chat:\n" + slackSvc},
		{name: "argocd-notifications-cm", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    chat:\n" + slackSvc,
			extra: "  argocdConfigMap: {name: argocd-notifications-cm}\n"},
		{
			name: "not GitHub", forges: "    gitlab.example.com: {kind: gitlab, useNotificationsGitHubApp: true}\n", services: "    gh:\n" + ghApp,
			want: []FieldError{{Path: "git.forges[gitlab.example.com].useNotificationsGitHubApp", Line: 5, Msg: "works on GitHub only (kind github), not gitlab"}},
		},
		{
			name: "no github service", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    chat:\n" + slackSvc,
			want: []FieldError{{Path: "git.forges[github.com].useNotificationsGitHubApp", Line: 5, Msg: "no notifications github service with a GitHub App"}},
		},
		{
			name: "a token is no app", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    gh:\n" + ghToken,
			want: []FieldError{{Path: "git.forges[github.com].useNotificationsGitHubApp", Line: 5, Msg: "no notifications github service with a GitHub App"}},
		},
		{
			name: "another host's app", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    ghe:\n" + gheApp,
			want: []FieldError{{Path: "git.forges[github.com].useNotificationsGitHubApp", Line: 5, Msg: "its enterpriseBaseURL must be on github.com (none for github.com)"}},
		},
		{
			name: "two apps", forges: "    github.com: {useNotificationsGitHubApp: true}\n", services: "    a:\n" + ghApp + "    b:\n" + ghApp,
			want: []FieldError{{Path: "git.forges[github.com].useNotificationsGitHubApp", Line: 5, Msg: "notifications github services a, b all have a GitHub App for github.com: leave one"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(forgeAppConfig(tt.forges, tt.services, tt.extra))
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				for host, f := range c.Git.Forges {
					if f.Kind != ForgeGitHub && f.UseNotificationsGitHubApp {
						t.Errorf("git.forges[%s].kind = %q, want github", host, f.Kind)
					}
				}
				return
			}
			if diff := cmp.Diff(tt.want, gotFieldErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// The app for a host is the github service whose API is on it or on its
// api. host, ports aside; token services and other hosts' are passed by.
func TestGitHubAppFor(t *testing.T) {
	c, err := Parse(forgeAppConfig("    github.com: {}\n", "    gh:\n"+ghApp+"    ghe:\n"+gheApp+"    tok:\n"+ghToken+
		"    cloud:\n      github: {appID: 5, installationID: 6, privateKey: $k, enterpriseBaseURL: https://api.acme.ghe.com}\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]string{
		"github.com": "gh", "ghe.example.com": "ghe", "ghe.example.com:8443": "ghe", "GHE.example.com": "ghe", "acme.ghe.com": "cloud", "gitlab.com": "",
	} {
		name, s, err := c.Notifications.GitHubAppFor(host)
		if name != want || (want != "" && (err != nil || s == nil)) || (want == "" && (err == nil || !strings.Contains(err.Error(), host))) {
			t.Errorf("GitHubAppFor(%s) = %q, %v, %v; want %q", host, name, s, err, want)
		}
	}
}
