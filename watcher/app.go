package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// App is crowsnest's own small view of an Argo CD Application: the fields the
// engine decides on, parsed once per observed change. Object keeps the
// trimmed raw object for what the view does not name (notification templates
// read arbitrary fields).
type App struct {
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Labels          map[string]string
	Annotations     map[string]string
	Deleting        bool

	Project     string
	Sources     []Source
	MultiSource bool
	Destination Destination

	// Images is status.summary.images: what Argo CD reports as running.
	Images []string
	// SourceType is status.sourceType, the tool Argo CD found rendering
	// spec.source (Helm, Kustomize, Directory, Plugin); SourceTypes is
	// status.sourceTypes, one per entry of spec.sources.
	SourceType     string
	SourceTypes    []string
	SyncStatus     string
	SyncRevision   string
	HealthStatus   string
	OperationPhase string
	// OperationPending is true while a sync was requested through the
	// Application's operation field and Argo CD has not picked it up yet.
	OperationPending bool

	Object *unstructured.Unstructured
	// raw is the Object as JSON when the App came without it decoded
	// (Kept.Lazy, a source's event), perhaps without its resourceVersion
	// and generation (storedApp), which Decoded puts back.
	raw        []byte
	generation int64
}

// Decoded returns the App's Object, or, when the App came without it
// (Kept.Lazy), the Object decoded from the JSON it came with: a new copy
// on each call, the caller's to change. Most reconciles read only the
// view; the ones that write or plan a patch ask for the Object.
func (a *App) Decoded() *unstructured.Unstructured {
	if a.Object != nil || a.raw == nil {
		return a.Object
	}
	u, err := decodeStored(a.raw, a.ResourceVersion, a.generation)
	if err != nil {
		return nil // never: the JSON is json.Marshal's, or checked when stored (decodeApp)
	}
	return u
}

// Key returns the Application's work-queue key, "namespace/name".
func (a *App) Key() string { return a.Namespace + "/" + a.Name }

// Source is one entry of spec.source or spec.sources.
type Source struct {
	RepoURL        string           `json:"repoURL,omitempty"`
	Path           string           `json:"path,omitempty"`
	TargetRevision string           `json:"targetRevision,omitempty"`
	Chart          string           `json:"chart,omitempty"`
	Ref            string           `json:"ref,omitempty"`
	Kustomize      *KustomizeSource `json:"kustomize,omitempty"`
	Helm           *HelmSource      `json:"helm,omitempty"`
}

// KustomizeSource holds the kustomize overrides crowsnest writes.
type KustomizeSource struct {
	Images []string `json:"images,omitempty"`
}

// HelmSource holds the Helm overrides crowsnest writes and reads.
type HelmSource struct {
	Parameters []HelmParameter `json:"parameters,omitempty"`
	ValueFiles []string        `json:"valueFiles,omitempty"`
}

// HelmParameter is one Helm --set override.
type HelmParameter struct {
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ForceString bool   `json:"forceString,omitempty"`
}

// Destination is where Argo CD deploys the Application.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// appShape mirrors the parts of the Application schema the view reads; the
// converter reports a field of the wrong type instead of guessing.
type appShape struct {
	Spec      appSpecShape   `json:"spec"`
	Operation map[string]any `json:"operation,omitempty"`
	Status    appStatusShape `json:"status"`
}

type appSpecShape struct {
	Project     string      `json:"project,omitempty"`
	Source      *Source     `json:"source,omitempty"`
	Sources     []Source    `json:"sources,omitempty"`
	Destination Destination `json:"destination"`
}

type appStatusShape struct {
	Sync struct {
		Status   string `json:"status,omitempty"`
		Revision string `json:"revision,omitempty"`
	} `json:"sync"`
	Health struct {
		Status string `json:"status,omitempty"`
	} `json:"health"`
	OperationState struct {
		Phase string `json:"phase,omitempty"`
	} `json:"operationState"`
	Summary struct {
		Images []string `json:"images,omitempty"`
	} `json:"summary"`
	SourceType  string   `json:"sourceType,omitempty"`
	SourceTypes []string `json:"sourceTypes,omitempty"`
}

// AppFromObject builds the view of an Application object. The object should
// already be trimmed (TrimApplication); the view keeps a reference to it.
func AppFromObject(u *unstructured.Unstructured) (*App, error) {
	var shape appShape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &shape); err != nil {
		return nil, fmt.Errorf("reading Application %s/%s: %w", u.GetNamespace(), u.GetName(), fieldError(u.Object, err))
	}
	a := viewOf(&shape.Spec, &shape.Status, len(shape.Operation) > 0)
	a.Namespace = u.GetNamespace()
	a.Name = u.GetName()
	a.UID = string(u.GetUID())
	a.ResourceVersion = u.GetResourceVersion()
	a.Labels = u.GetLabels()
	a.Annotations = u.GetAnnotations()
	a.Deleting = u.GetDeletionTimestamp() != nil
	a.Object = u
	a.generation = u.GetGeneration()
	return a, nil
}

// viewOf is the view of an Application's spec and status, without the
// metadata; opPending says its operation holds anything.
func viewOf(spec *appSpecShape, status *appStatusShape, opPending bool) *App {
	a := &App{
		Project:          spec.Project,
		Destination:      spec.Destination,
		Images:           status.Summary.Images,
		SourceType:       status.SourceType,
		SourceTypes:      status.SourceTypes,
		SyncStatus:       status.Sync.Status,
		SyncRevision:     status.Sync.Revision,
		HealthStatus:     status.Health.Status,
		OperationPhase:   status.OperationState.Phase,
		OperationPending: opPending,
	}
	switch {
	case len(spec.Sources) > 0:
		a.Sources = spec.Sources
		a.MultiSource = true
	case spec.Source != nil:
		a.Sources = []Source{*spec.Source}
	}
	return a
}

// fieldError names the field of the wrong type behind the converter's
// err, which does not ("cannot restore struct from: string"). Such
// objects come from files (the Argo CD CRD's schema keeps them out of a
// cluster), so the cost of decoding obj again through encoding/json,
// whose error has the field's path, is paid only then. err is returned
// when that finds nothing.
func fieldError(obj map[string]any, err error) error {
	data, jerr := json.Marshal(obj)
	if jerr != nil {
		return err
	}
	var shape appShape
	if named, ok := namedTypeError(json.Unmarshal(data, &shape)); ok {
		return named
	}
	return err
}

// namedTypeError says which field of what type encoding/json's type
// error err is about ("spec.source is a string, not an object"); false
// when err is no such error.
func namedTypeError(err error) (error, bool) { //nolint:revive // the error is the value
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && te.Type != nil {
		return fmt.Errorf("%s is a %s, not %s", te.Field, te.Value, kindName(te.Type)), true
	}
	return err, false
}

// kindName names what a field of type t holds, as YAML says it.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a bool"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	default:
		return "a number"
	}
}

// Project is crowsnest's view of an Argo CD AppProject. Sync windows and
// notification subscriptions are read from Object by the packages that own
// them.
type Project struct {
	Namespace       string
	Name            string
	ResourceVersion string
	Annotations     map[string]string
	Object          *unstructured.Unstructured
}

// Key returns the AppProject's key, "namespace/name".
func (p *Project) Key() string { return p.Namespace + "/" + p.Name }

// ProjectFromObject builds the view of an AppProject object.
func ProjectFromObject(u *unstructured.Unstructured) *Project {
	return &Project{
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		ResourceVersion: u.GetResourceVersion(),
		Annotations:     u.GetAnnotations(),
		Object:          u,
	}
}
