package windows

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// AppRef is what window selectors look at in an Application. The engine
// fills it from its view of the Application (watcher.App).
type AppRef struct {
	// Name is metadata.name; matched by applications.
	Name string
	// Namespace is metadata.namespace, where the Application object lives.
	// No selector reads it: namespaces match the destination, as in Argo CD.
	Namespace string
	// Project is spec.project; matched by projects and by AppProject scope.
	Project string
	// DestNamespace is spec.destination.namespace; matched by namespaces.
	DestNamespace string
	// DestServer and DestName are spec.destination.server and .name;
	// clusters matches either (an empty one never matches).
	DestServer string
	DestName   string
	// Labels are metadata.labels; matched by labelSelector.
	Labels map[string]string
}

// Matches reports whether the window applies to app. Each selector that is
// set (applications, namespaces, clusters, projects, labelSelector) is a
// test; without andOperator any passing test matches, with it all must pass
// (Argo CD's rule). A window with no selector matches nothing, and a window
// read from an AppProject only matches that project's Applications.
func (w *Window) Matches(app AppRef) bool {
	if w.project != "" && app.Project != w.project {
		return false
	}
	tests, passed := 0, 0
	test := func(ok bool) {
		tests++
		if ok {
			passed++
		}
	}
	if len(w.apps) > 0 {
		test(anyMatch(w.apps, app.Name))
	}
	if len(w.nss) > 0 {
		test(anyMatch(w.nss, app.DestNamespace))
	}
	if len(w.clusters) > 0 {
		test((app.DestServer != "" && anyMatch(w.clusters, app.DestServer)) ||
			(app.DestName != "" && anyMatch(w.clusters, app.DestName)))
	}
	if len(w.projects) > 0 {
		test(anyMatch(w.projects, app.Project))
	}
	if w.labels != nil {
		test(w.labels.Matches(labels.Set(app.Labels)))
	}
	if w.spec.AndOperator {
		return tests > 0 && passed == tests
	}
	return passed > 0
}

func anyMatch(globs []*spec.Glob, s string) bool {
	for _, g := range globs {
		if g.Match(s) {
			return true
		}
	}
	return false
}
