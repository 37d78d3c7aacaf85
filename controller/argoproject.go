package controller

import "github.com/crowsnest-dev/crowsnest/watcher"

// EngineView is the engine's Applications as the notifier (pipeline.Apps)
// and the tenancy rules (tenancy.Projects) see them: whether every source
// delivered its initial list, and each Application's AppProject as Argo
// CD goes by.
type EngineView struct {
	Engine *Engine
	// ArgoNamespace is Argo CD's namespace, where AppProjects live.
	ArgoNamespace string
	// InAppNamespace also takes an AppProject in the Application's own
	// namespace, for local mode, whose files need not say where Argo CD
	// runs.
	InAppNamespace bool
}

// Synced reports whether every source delivered its initial list.
func (v EngineView) Synced() bool {
	for _, s := range v.Engine.Sources {
		if !s.Synced() {
			return false
		}
	}
	return true
}

// Project looks a's AppProject up in the engine's AppProjects as Argo CD
// does: by name ("" is default) in Argo CD's namespace, never a
// same-named one in another namespace (outside local mode). Nil when
// unknown.
func (v EngineView) Project(a *watcher.App) *watcher.Project {
	name := a.Project
	if name == "" {
		name = "default"
	}
	if p := v.Engine.Project(v.ArgoNamespace + "/" + name); p != nil {
		return p
	}
	if v.InAppNamespace {
		return v.Engine.Project(a.Namespace + "/" + name)
	}
	return nil
}
