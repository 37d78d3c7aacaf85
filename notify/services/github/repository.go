package github

import (
	"net/url"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// repository is Kind.Repository: the repository a rendered github block
// acts on, named on the GitHub the service posts to. The owner and
// repository are read from repoURLPath as Send reads them, and the host
// is the service's (github.com, or enterpriseBaseURL's without /api/v3
// or an api. prefix), not the one repoURLPath names: Send ignores that
// host, so https://gitlab.example.com/team-a/app reaches
// github.com/team-a/app. The URL keeps the form repoURLPath is written in
// (an SSH or scp-like address gives git@host:owner/repo, anything else
// the API's scheme and host), so sourceRepos match it as Argo CD matches
// the Application's own repoURL. "" when Send would skip the block or
// refuse it before any request.
func repository(settings any, n notify.Notification) string {
	s, ok := settings.(*servicetypes.GitHubSettings)
	if !ok {
		return ""
	}
	var b servicetypes.GitHubBlock
	if found, err := svc.DecodeBlock(n, "github", &b); err != nil || !found || !acts(&b) {
		return ""
	}
	t, err := targetOf(&b)
	if err != nil {
		return ""
	}
	api, err := s.APIBase()
	if err != nil {
		return ""
	}
	u, err := url.Parse(api)
	if err != nil || u.Host == "" {
		return ""
	}
	if sshAddress(b.RepoURLPath) {
		return "git@" + strings.TrimPrefix(u.Hostname(), "api.") + ":" + t.String()
	}
	return u.Scheme + "://" + strings.TrimPrefix(u.Host, "api.") + "/" + t.String()
}

// sshAddress reports whether a repository URL is an SSH one: ssh:// (or
// Git's git+ssh:// and ssh+git://), or scp-like (git@host:org/repo), which
// has no scheme.
func sshAddress(repoURL string) bool {
	s := strings.ToLower(strings.TrimSpace(repoURL))
	for _, p := range []string{"ssh://", "git+ssh://", "ssh+git://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return !strings.Contains(s, "://")
}
