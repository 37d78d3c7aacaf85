package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// GitHubAppFor returns the notifications' github service whose GitHub App
// is for Git host (as git.forges names it: "github.com",
// "ghe.example.com", "ghe.example.com:8443"), for
// git.forges.<host>.useNotificationsGitHubApp: the one service with app
// credentials whose API (enterpriseBaseURL, or api.github.com without
// one) is on host or on api.<host>, ports aside. None, or more than one,
// is an error that says which.
func (n *Notifications) GitHubAppFor(host string) (string, *servicetypes.GitHubSettings, error) {
	want := strings.ToLower(hostname(host))
	var names []string
	var found *servicetypes.GitHubSettings
	for _, name := range slices.Sorted(maps.Keys(n.Services)) {
		s := n.Services[name]
		g, ok := s.Settings().(*servicetypes.GitHubSettings)
		if !ok || !g.HasApp() {
			continue
		}
		api, err := g.APIBase()
		if err != nil {
			continue // the service's own check names it
		}
		u, err := url.Parse(api)
		if err != nil {
			continue
		}
		if h := strings.ToLower(u.Hostname()); h == want || h == "api."+want {
			names, found = append(names, name), g
		}
	}
	switch len(names) {
	case 0:
		return "", nil, fmt.Errorf("no notifications github service with a GitHub App (appID, installationID, privateKey) is for %s: "+
			"its enterpriseBaseURL must be on %s (none for github.com)", host, want)
	case 1:
		return names[0], found, nil
	}
	return "", nil, fmt.Errorf("notifications github services %s all have a GitHub App for %s: leave one", strings.Join(names, ", "), host)
}

// hostname is host without its port.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// validateForgeApps checks that each git.forges host that lends the
// notifications' GitHub App has one, when every notification service is
// in this file. Services read from an argocd-notifications-cm, or whose
// enterpriseBaseURL is a Secret reference, are known when crowsnest runs:
// a write is refused then, with the same error.
func (c *Config) validateForgeApps(errs *fieldErrors) {
	n := &c.Notifications
	if n.ArgoCDConfigMap.Name != "" {
		return
	}
	for _, s := range n.Services {
		if g, ok := s.Settings().(*servicetypes.GitHubSettings); ok && g.HasApp() && servicetypes.IsSecretRef(g.EnterpriseBaseURL) {
			return
		}
	}
	for _, host := range slices.Sorted(maps.Keys(c.Git.Forges)) {
		f := c.Git.Forges[host]
		if !f.UseNotificationsGitHubApp || f.Kind != ForgeGitHub {
			continue
		}
		if _, _, err := n.GitHubAppFor(host); err != nil {
			errs.invalid(fieldpath.Join("git.forges["+host+"]", "useNotificationsGitHubApp"), "%v", err)
		}
	}
}
