package setup

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// NotificationApps are the notification services in force, kept for the
// Git writer: it lends their github service's GitHub App to pull requests
// on the hosts git.forges opts in (useNotificationsGitHubApp). The
// notifications' setup hands it each config it puts in force, so a
// reload, a changed argocd-notifications-cm or a rotated key in its
// Secret reaches the next write.
type NotificationApps struct {
	mu       sync.Mutex
	services map[string]config.Service // nil until the first config
}

// Applied keeps the services of n, a config put in force (its
// argocd-notifications-cm merged, `$key` references resolved).
func (a *NotificationApps) Applied(n *config.Notifications) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.services = maps.Clone(n.Services)
	if a.services == nil {
		a.services = map[string]config.Service{}
	}
}

// current is the notifications in force, nil before the first.
func (a *NotificationApps) current() *config.Notifications {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.services == nil {
		return nil
	}
	return &config.Notifications{Services: a.services}
}

// notificationsLender is gitwb.AppLender: the GitHub App of the
// notifications' github service for a host, on the hosts that opt in.
type notificationsLender struct {
	// hosts are the git.forges hosts that opt in; they change with the
	// rest of the Git writer's settings (at a restart).
	hosts map[string]bool
	apps  *NotificationApps
}

var _ gitwb.AppLender = notificationsLender{}

// errNotificationsNotLoaded is a write before the notifications were put
// in force (or where there are none: `config validate`).
var errNotificationsNotLoaded = errors.New("the notifications' services are not loaded")

// GitHubApp implements gitwb.AppLender.
func (l notificationsLender) GitHubApp(host string) (gitwb.LentApp, bool, error) {
	key, ok := l.optedIn(host)
	if !ok {
		return gitwb.LentApp{}, false, nil
	}
	field := "git.forges[" + key + "].useNotificationsGitHubApp"
	n := l.apps.current()
	if n == nil {
		return gitwb.LentApp{}, true, fmt.Errorf("%s: %w", field, errNotificationsNotLoaded)
	}
	name, g, err := n.GitHubAppFor(key)
	if err != nil {
		return gitwb.LentApp{}, true, fmt.Errorf("%s: %w", field, err)
	}
	app, err := githubAppOf(g)
	if err != nil {
		return gitwb.LentApp{}, true, fmt.Errorf("%s: notifications service %s: %w", field, name, err)
	}
	return gitwb.LentApp{Source: "notifications service " + name, App: app,
		TLS: gitwb.TLS{InsecureSkipVerify: g.InsecureSkipVerify}}, true, nil
}

// optedIn returns the git.forges host that names host ("host" and
// "host:443" name the same server) when it opts in.
func (l notificationsLender) optedIn(host string) (string, bool) {
	if l.hosts[host] {
		return host, true
	}
	if h, port, found := strings.Cut(host, ":"); found && port == "443" && l.hosts[h] {
		return h, true
	}
	return "", false
}

// githubAppOf reads a github service's app settings as its sender does.
func githubAppOf(g *servicetypes.GitHubSettings) (forge.GitHubApp, error) {
	appID, err := servicetypes.GitHubID("appID", g.AppID)
	if err != nil {
		return forge.GitHubApp{}, err
	}
	inst, err := servicetypes.GitHubID("installationID", g.InstallationID)
	if err != nil {
		return forge.GitHubApp{}, err
	}
	api, err := g.APIBase()
	if err != nil {
		return forge.GitHubApp{}, err
	}
	return forge.GitHubApp{API: strings.TrimSuffix(api, "/"), AppID: appID, InstallationID: inst, PrivateKey: g.PrivateKey}, nil
}
