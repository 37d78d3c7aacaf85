package config

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// SyncWindow is one allow or deny window in crowsnest's config. The fields
// are those of Argo CD's AppProject spec.syncWindows, so a window can be
// copied between the two, plus crowsnest's own selectors and actions.
// Package windows compiles it; validation here uses windows/spec so that
// `crowsnest config validate` catches every error the engine would.
type SyncWindow struct {
	// Kind is "allow" or "deny".
	Kind string `yaml:"kind"`
	// Schedule is a 5-field cron expression (or @daily, @weekly, ...) of
	// wall-clock start times in TimeZone.
	Schedule string `yaml:"schedule"`
	// Duration is how long the window stays open after each start, as
	// elapsed time ("1h", "7d").
	Duration Duration `yaml:"duration"`
	// TimeZone is an IANA zone name; empty means UTC, as in Argo CD.
	TimeZone string `yaml:"timeZone"`

	// Selectors. Applications, Namespaces (the destination namespace),
	// Clusters (destination server or name) and Projects are glob lists;
	// LabelSelector is a Kubernetes label selector on the Application. An
	// Application matches if any set selector matches, or all of them with
	// AndOperator. At least one must be set.
	Applications  []string `yaml:"applications"`
	Namespaces    []string `yaml:"namespaces"`
	Clusters      []string `yaml:"clusters"`
	Projects      []string `yaml:"projects"`
	LabelSelector string   `yaml:"labelSelector"`
	AndOperator   bool     `yaml:"andOperator"`

	// ManualSync lets manual syncs through a deny window, or outside an
	// allow window, as in Argo CD.
	ManualSync  bool   `yaml:"manualSync"`
	Description string `yaml:"description"`

	// HoldImageUpdates makes the window gate crowsnest's write-backs: an
	// update found while the decision is "denied" is held and written when
	// it turns "allowed". Default true.
	HoldImageUpdates *bool `yaml:"holdImageUpdates"`
	// SyncOnOpen asks Argo CD to sync matched Applications that are
	// OutOfSync or have held updates when the window opens (allow only).
	SyncOnOpen bool `yaml:"syncOnOpen"`
}

// Window kinds, spelled as in Argo CD.
const (
	WindowAllow = "allow"
	WindowDeny  = "deny"
)

// MaxWindowDescription is Argo CD's limit on a window's description.
const MaxWindowDescription = 255

// HoldsImageUpdates reports whether the window gates write-backs (default true).
func (w *SyncWindow) HoldsImageUpdates() bool {
	return w.HoldImageUpdates == nil || *w.HoldImageUpdates
}

// HasSelector reports whether any selector is set; a window without one
// matches no Application.
func (w *SyncWindow) HasSelector() bool {
	return len(w.Applications)+len(w.Namespaces)+len(w.Clusters)+len(w.Projects) > 0 || w.LabelSelector != ""
}

func validateWindows(path string, ws []SyncWindow, errs *fieldErrors) {
	for i := range ws {
		ws[i].validate(fieldpath.Index(path, i), errs)
	}
}

func (w *SyncWindow) validate(path string, errs *fieldErrors) {
	switch w.Kind {
	case WindowAllow, WindowDeny:
	case "":
		errs.invalid(fieldpath.Join(path, "kind"), "required (allow or deny)")
	default:
		errs.invalid(fieldpath.Join(path, "kind"), "unsupported value %q, want allow or deny", w.Kind)
	}
	if w.Schedule == "" {
		errs.invalid(fieldpath.Join(path, "schedule"), `required, e.g. "0 22 * * *"`)
	} else if _, err := spec.Parse(w.Schedule, time.UTC); err != nil {
		errs.invalid(fieldpath.Join(path, "schedule"), "%v", err)
	}
	switch {
	case w.Duration.Duration <= 0:
		errs.invalid(fieldpath.Join(path, "duration"), "must be positive (e.g. 1h or 7d), got %s", w.Duration)
	case w.Duration.Duration > spec.MaxDuration:
		errs.invalid(fieldpath.Join(path, "duration"), "must be at most %s, got %s", spec.MaxDuration, w.Duration)
	}
	if _, err := spec.LoadZone(w.TimeZone); err != nil {
		errs.invalid(fieldpath.Join(path, "timeZone"), "%v", err)
	}
	for _, list := range []struct {
		name     string
		patterns []string
	}{{"applications", w.Applications}, {"namespaces", w.Namespaces}, {"clusters", w.Clusters}, {"projects", w.Projects}} {
		for i, p := range list.patterns {
			if _, err := spec.CompileGlob(p); err != nil {
				errs.invalid(fieldpath.Index(fieldpath.Join(path, list.name), i), "%v", err)
			}
		}
	}
	if w.LabelSelector != "" {
		if _, err := labels.Parse(w.LabelSelector); err != nil {
			errs.invalid(fieldpath.Join(path, "labelSelector"), "invalid label selector %q: %v", w.LabelSelector, err)
		}
	}
	if !w.HasSelector() {
		errs.invalid(path, "no selector: set at least one of applications, namespaces, clusters, projects or labelSelector (a window without one matches nothing)")
	}
	if w.SyncOnOpen && w.Kind == WindowDeny {
		errs.invalid(fieldpath.Join(path, "syncOnOpen"), "only allow windows can start syncs")
	}
	if len(w.Description) > MaxWindowDescription {
		errs.invalid(fieldpath.Join(path, "description"), "longer than %d characters", MaxWindowDescription)
	}
}
