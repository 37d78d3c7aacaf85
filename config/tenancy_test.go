package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTenancyValidation(t *testing.T) {
	tests := []struct {
		name    string
		section string
		wantErr string // "" when valid
	}{
		{"scoped secret", "credentials: [{pullSecret: 'secret:shared/robot#t', registries: [r.example.com], namespaces: [team-*]}]", ""},
		{"pullsecret needs no registries", "credentials: [{pullSecret: 'pullsecret:shared/regcred'}]", ""},
		{"git secret", "credentials: [{gitSecret: argocd/git-creds, namespaces: [team-a]}]", ""},
		{"repositories", "gitRepositories: ['https://git.example.com/**', '!https://git.example.com/secret/*']", ""},
		{"unscoped secret", "credentials: [{pullSecret: 'secret:shared/robot#t'}]", "tenancy.credentials[0].registries: required for secret"},
		{"unscoped env", "credentials: [{pullSecret: 'env:TOKEN'}]", "tenancy.credentials[0].registries: required for env"},
		{"neither", "credentials: [{namespaces: [a]}]", "tenancy.credentials[0]: set pullSecret or gitSecret"},
		{"both", "credentials: [{pullSecret: 'pullsecret:a/b', gitSecret: a/b}]", "not both"},
		{"bad git secret", "credentials: [{gitSecret: 'nope'}]", "tenancy.credentials[0].gitSecret: want <namespace>/<name>"},
		{"registries on a git secret", "credentials: [{gitSecret: a/b, registries: [r.io]}]", "applies to pullSecret only"},
		{"bad registry glob", "credentials: [{pullSecret: 'pullsecret:a/b', registries: ['r.io/path']}]", "tenancy.credentials[0].registries[0]"},
		{"bad namespace glob", "credentials: [{pullSecret: 'pullsecret:a/b', namespaces: ['[']}]", "tenancy.credentials[0].namespaces[0]"},
		{"empty repository", "gitRepositories: ['!', 'https://x.example.com/r']", "tenancy.gitRepositories[0]"},
		{"deny patterns only", "gitRepositories: ['!https://git.example.com/prod']", "only \"!\" patterns"},
		{"bad reference", "credentials: [{pullSecret: 'vault:x'}]", "tenancy.credentials[0].pullSecret"},
		{"registries", "registries: [ghcr.io, '*.example.com']", ""},
		{"bad registry", "registries: ['ghcr.io/org']", "tenancy.registries[0]"},
		{"write paths", "writePaths: [{projects: [platform], namespaces: [team-*], paths: ['/shared/**', 'envs/*/values.yaml']}]", ""},
		{"write paths for everyone", "writePaths: [{paths: ['/common/**']}]", ""},
		{"write paths without paths", "writePaths: [{namespaces: [team-a]}]", "tenancy.writePaths[0].paths: required"},
		{"write path with dots", "writePaths: [{paths: ['/team-b/../team-a/**']}]", "tenancy.writePaths[0].paths[0]: \"/team-b/../team-a/**\": \".\" and \"..\" segments"},
		{"empty write path", "writePaths: [{paths: ['/']}]", "tenancy.writePaths[0].paths[0]: want a path glob"},
		{"bad write path glob", "writePaths: [{paths: ['/shared/[']}]", "tenancy.writePaths[0].paths[0]: want a path glob"},
		{"bad write path project", "writePaths: [{projects: ['['], paths: [x]}]", "tenancy.writePaths[0].projects[0]"},
		{"unknown write path key", "writePaths: [{path: [x]}]", "tenancy.writePaths[0].path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\ntenancy:\n  " + tt.section + "\n"
			_, err := Parse([]byte(doc))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestTenancyAllows(t *testing.T) {
	ten := &Tenancy{Credentials: []TenancyCredential{
		{PullSecret: CredentialRef{Source: CredsSecret, Namespace: "shared", Name: "robot", Field: "t"}, Registries: []string{"*.example.com"}, Namespaces: []string{"team-*"}},
		{PullSecret: CredentialRef{Source: CredsPullSecret, Namespace: "shared", Name: "regcred"}},
		{GitSecret: "argocd/git-creds", Namespaces: []string{"team-a"}},
	}}
	robot := CredentialRef{Source: CredsSecret, Namespace: "shared", Name: "robot", Field: "t"}
	for _, tt := range []struct {
		ref      CredentialRef
		ns, host string
		want     bool
	}{
		{robot, "team-a", "r.example.com", true},
		{robot, "team-a", "R.Example.com", true},
		{robot, "team-a", "evil.io", false},
		{robot, "prod", "r.example.com", false},
		{CredentialRef{Source: CredsSecret, Namespace: "shared", Name: "robot", Field: "other"}, "team-a", "r.example.com", false},
		{CredentialRef{Source: CredsPullSecret, Namespace: "shared", Name: "regcred"}, "anyone", "any.io", true},
	} {
		if got := ten.AllowsPullSecret(tt.ref, tt.ns, tt.host); got != tt.want {
			t.Errorf("AllowsPullSecret(%s, %s, %s) = %v, want %v", tt.ref, tt.ns, tt.host, got, tt.want)
		}
	}
	if !ten.AllowsGitSecret("argocd/git-creds", "team-a") || ten.AllowsGitSecret("argocd/git-creds", "team-b") || ten.AllowsGitSecret("argocd/other", "team-a") {
		t.Error("AllowsGitSecret does not follow the gitSecret entry")
	}
}

func TestTenancyWritePathsFor(t *testing.T) {
	ten := &Tenancy{WritePaths: []TenancyWritePath{
		{Projects: []string{"platform"}, Paths: []string{"/shared/**"}},
		{Projects: []string{"*"}, Paths: []string{"/any-project/**"}},
		{Namespaces: []string{"team-*"}, Paths: []string{"/common/*.yaml"}},
		{Projects: []string{"web"}, Namespaces: []string{"team-a"}, Paths: []string{"/web/**"}},
	}}
	tests := []struct {
		project, namespace string
		want               []string
	}{
		{"platform", "argocd", []string{"/shared/**", "/any-project/**"}},
		{"platform", "team-b", []string{"/shared/**", "/any-project/**", "/common/*.yaml"}},
		{"web", "team-a", []string{"/any-project/**", "/common/*.yaml", "/web/**"}},
		{"web", "team-b", []string{"/any-project/**", "/common/*.yaml"}},
		{"other", "argocd", []string{"/any-project/**"}},
		{"", "team-a", []string{"/common/*.yaml"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ten.WritePathsFor(tt.project, tt.namespace)); diff != "" {
			t.Errorf("WritePathsFor(%s, %s) (-want +got):\n%s", tt.project, tt.namespace, diff)
		}
	}
}
