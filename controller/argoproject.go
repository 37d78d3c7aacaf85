package controller

import "github.com/crowsnest-dev/crowsnest/watcher"

// ArgoProject looks an Application's AppProject up in the engine's
// AppProjects as Argo CD does, for tenancy.Rules.Project: by name ("" is
// default) in Argo CD's namespace. inAppNamespace also takes one in the
// Application's own namespace, for local mode, whose files need not say
// where Argo CD runs.
func ArgoProject(e *Engine, argoNamespace string, inAppNamespace bool) func(*watcher.App) *watcher.Project {
	return func(a *watcher.App) *watcher.Project { return argoProject(e, argoNamespace, inAppNamespace, a) }
}

func argoProject(e *Engine, argoNamespace string, inAppNamespace bool, a *watcher.App) *watcher.Project {
	name := a.Project
	if name == "" {
		name = "default"
	}
	if p := e.Project(argoNamespace + "/" + name); p != nil {
		return p
	}
	if inAppNamespace {
		return e.Project(a.Namespace + "/" + name)
	}
	return nil
}
