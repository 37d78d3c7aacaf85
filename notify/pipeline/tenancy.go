package pipeline

import (
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// checkRepository applies Repos to the repository a rendered message
// makes service act on (svc.Kind.Repository), and returns that
// repository with the refusal. A service that reaches no repository, or
// a message that reaches none, passes.
//
// The repository comes from what the Application's author writes (GitHub's
// repoURLPath renders spec.source.repoURL by default), while the service
// acts there with the operator's credentials: without this check a team
// could have statuses or comments posted to another team's repository.
// The Application's own spec.source(s) grant nothing: crowsnest reads
// Applications whatever Argo CD thinks of them, so a repository is
// allowed only when its AppProject's sourceRepos (or
// tenancy.gitRepositories) permit it, as for the repo helpers (Repo.Policy).
func (n *Notifier) checkRepository(c *compiled, app *watcher.App, service string, msg notify.Notification) (string, error) {
	if n.Repos == nil {
		return "", nil
	}
	sc, ok := c.set.Config.Services[service]
	if !ok || sc.Ext == nil {
		return "", nil
	}
	k, ok := services.Lookup(sc.Ext.Type)
	if !ok || k.Repository == nil {
		return "", nil
	}
	repo := k.Repository(sc.Ext.Settings, msg)
	if repo == "" {
		return "", nil
	}
	return repo, n.Repos.CheckRepository(app, repo)
}
