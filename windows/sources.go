package windows

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// FromConfig compiles the windows of crowsnest's config, named
// "syncWindows[i]". A config that passed validation always compiles.
func FromConfig(ws []config.SyncWindow) (Set, error) {
	set := make(Set, 0, len(ws))
	var errs []error
	for i := range ws {
		w, err := Compile(fmt.Sprintf("syncWindows[%d]", i), ws[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		set = append(set, w)
	}
	return set, errors.Join(errs...)
}

// projectWindow is one entry of AppProject spec.syncWindows, in Argo CD's
// JSON shape. Fields crowsnest does not use (syncOverrun) are ignored.
type projectWindow struct {
	Kind         string   `json:"kind,omitempty"`
	Schedule     string   `json:"schedule,omitempty"`
	Duration     string   `json:"duration,omitempty"`
	Applications []string `json:"applications,omitempty"`
	Namespaces   []string `json:"namespaces,omitempty"`
	Clusters     []string `json:"clusters,omitempty"`
	ManualSync   bool     `json:"manualSync,omitempty"`
	TimeZone     string   `json:"timeZone,omitempty"`
	AndOperator  bool     `json:"andOperator,omitempty"`
	Description  string   `json:"description,omitempty"`
}

type projectShape struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		SyncWindows []projectWindow `json:"syncWindows,omitempty"`
	} `json:"spec"`
}

// FromAppProject compiles the spec.syncWindows of an AppProject object (the
// unstructured content, e.g. watcher.Project.Object.Object), read unchanged.
// Each window only applies to Applications of that project, and gates
// write-backs (holdImageUpdates defaults to true; syncOnOpen is off).
//
// Windows that do not compile are left out and reported in the error, each
// named "AppProject ns/name spec.syncWindows[i]"; the returned Set holds the
// rest. Argo CD refuses syncs for a project with a broken window, so the
// engine should hold the project's write-backs while the error persists
// rather than act on a partial set.
func FromAppProject(obj map[string]any) (Set, error) {
	var p projectShape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &p); err != nil {
		return nil, fmt.Errorf("reading AppProject spec.syncWindows: %w", err)
	}
	if p.Metadata.Name == "" {
		return nil, errors.New("reading AppProject spec.syncWindows: metadata.name is empty")
	}
	set := make(Set, 0, len(p.Spec.SyncWindows))
	var errs []error
	for i := range p.Spec.SyncWindows {
		pw := &p.Spec.SyncWindows[i]
		name := fmt.Sprintf("AppProject %s/%s spec.syncWindows[%d]", p.Metadata.Namespace, p.Metadata.Name, i)
		sw := config.SyncWindow{
			Kind: pw.Kind, Schedule: pw.Schedule, TimeZone: pw.TimeZone,
			Applications: pw.Applications, Namespaces: pw.Namespaces, Clusters: pw.Clusters,
			AndOperator: pw.AndOperator, ManualSync: pw.ManualSync, Description: pw.Description,
		}
		// Argo CD reads the duration with time.ParseDuration (no "d" unit)
		// and the schedule without descriptors; what it cannot read blocks
		// the Applications the window matches, so it is refused here too.
		d, err := time.ParseDuration(pw.Duration)
		if err != nil {
			errs = append(errs, &Error{Window: name, Description: pw.Description, Field: "duration",
				Err: fmt.Errorf("invalid duration %q: Argo CD reads it with Go's time.ParseDuration (e.g. 90m, 36h; no d unit): %w", pw.Duration, err)})
			continue
		}
		if err := spec.CheckAppProjectSchedule(pw.Schedule); err != nil {
			errs = append(errs, &Error{Window: name, Description: pw.Description, Field: "schedule", Err: err})
			continue
		}
		sw.Duration = config.Duration{Duration: d}
		w, err := Compile(name, sw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.project = p.Metadata.Name
		set = append(set, w)
	}
	return set, errors.Join(errs...)
}
