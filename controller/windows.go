package controller

import (
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
)

// WindowRef is what sync window selectors look at in an Application.
func WindowRef(a *watcher.App) windows.AppRef {
	return windows.AppRef{
		Name:          a.Name,
		Namespace:     a.Namespace,
		Project:       a.Project,
		DestNamespace: a.Destination.Namespace,
		DestServer:    a.Destination.Server,
		DestName:      a.Destination.Name,
		Labels:        a.Labels,
	}
}
