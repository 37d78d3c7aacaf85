package demo

import (
	"context"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/daemon"
)

// Report is what the demo shows at the end; `demo -o json` prints it as
// is.
type Report struct {
	Registry string  `json:"registry"`
	Git      string  `json:"git"`
	Folder   string  `json:"folder,omitempty"`
	Seconds  float64 `json:"seconds"`
	// Found lists each update crowsnest decided, as its Event says.
	Found         []daemon.Event `json:"found"`
	Commits       []Commit       `json:"commits"`
	Patched       []Patch        `json:"patched"`
	Held          []daemon.Event `json:"held"`
	Notifications []Notification `json:"notifications"`
	// Warnings are Warning Events; a clean demo has none.
	Warnings []daemon.Event `json:"warnings"`
}

// Commit is a commit crowsnest made to the demo's repository, with its
// diff.
type Commit struct {
	SHA     string `json:"sha"`
	Message string `json:"message"`
	Diff    string `json:"diff"`
}

// Patch is an Application a Kubernetes-mode write-back patched (in
// memory: the demo runs in local mode).
type Patch struct {
	App string `json:"app"`
	// Source is the Application's spec.source after the patch, as YAML.
	Source string `json:"source"`
}

// Notification is a body the webhook receiver got.
type Notification struct {
	Body string `json:"body"`
}

// reportEvent files one Event: found, held, a warning, and for a patch
// the Application's source after it.
func (d *scenario) reportEvent(ctx context.Context, rep *Report, ev daemon.Event) {
	switch ev.Reason {
	case controller.EventImagesUpdated:
		rep.Found = append(rep.Found, ev)
	case controller.EventImageUpdateHeld:
		if !slices.ContainsFunc(rep.Held, func(h daemon.Event) bool { return h == ev }) {
			rep.Found = append(rep.Found, ev)
			rep.Held = append(rep.Held, ev)
		}
	}
	if ev.Type == "Warning" {
		rep.Warnings = append(rep.Warnings, ev)
	}
	if ev.Reason == controller.EventImagesUpdated && strings.Contains(ev.Message, "patched the Application") {
		ns, app, _ := strings.Cut(ev.App, "/")
		if u, ok := d.daemon.LocalApplication(ctx, ns, app); ok && !slices.ContainsFunc(rep.Patched, func(p Patch) bool { return p.App == ev.App }) {
			src, _ := unstructuredField(u.Object, "spec", "source")
			y, _ := yaml.Marshal(src)
			rep.Patched = append(rep.Patched, Patch{App: ev.App, Source: string(y)})
		}
	}
}

func unstructuredField(obj map[string]any, fields ...string) (any, bool) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[f]; !ok {
			return nil, false
		}
	}
	return cur, true
}
