package migrate

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Names of argocd-image-updater's objects that `crowsnest migrate` reads.
const (
	aiuConfigMap = "argocd-image-updater-config"
	// aiuRegistriesKey is the key of aiuConfigMap argocd-image-updater
	// mounts as its registries.conf.
	aiuRegistriesKey = "registries.conf"
	kindImageUpdater = "ImageUpdater"
)

// imageUpdatersResource is argocd-image-updater 1.x's custom resource.
var imageUpdatersResource = schema.GroupVersionResource{Group: "argocd-image-updater.argoproj.io", Version: "v1alpha1", Resource: "imageupdaters"}

// Inputs is what `crowsnest migrate` reads of an installation of
// argocd-image-updater and Argo CD Notifications. Secret values are kept
// in memory for the readers (`$key` references) and never printed.
type Inputs struct {
	// source says where the objects came from, for the report.
	source        string
	argoNamespace string
	apps          []*watcher.App
	projects      []*watcher.Project
	// configMaps and secrets by "namespace/name".
	ConfigMaps    map[string]map[string]string
	Secrets       map[string]map[string][]byte
	imageUpdaters []*unstructured.Unstructured
}

// NewInputs starts an empty read of an installation whose Argo CD lives in
// argoNamespace; source names where the objects come from, for the report.
func NewInputs(source, argoNamespace string) *Inputs {
	return &Inputs{source: source, argoNamespace: argoNamespace,
		ConfigMaps: map[string]map[string]string{}, Secrets: map[string]map[string][]byte{}}
}

// configMap returns the data of the ConfigMap name in Argo CD's namespace.
func (in *Inputs) configMap(name string) (map[string]string, bool) {
	d, ok := in.ConfigMaps[in.argoNamespace+"/"+name]
	return d, ok
}

// ReadDir reads a folder of manifests: Applications and AppProjects
// through the file source `run --apps-dir` uses, ConfigMaps, Secrets and
// ImageUpdaters from the same files.
func ReadDir(ctx context.Context, dir, argoNamespace string) (*Inputs, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	objs, err := setup.ReadAppsDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	in := NewInputs("folder "+dir, argoNamespace)
	in.apps, in.projects = objs.Apps, objs.Projects
	slices.SortFunc(in.projects, func(a, b *watcher.Project) int { return strings.Compare(a.Key(), b.Key()) })
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := in.AddManifests(data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(in.imageUpdaters, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return in, nil
}

// AddManifests keeps the ConfigMaps, Secrets and ImageUpdaters of a YAML
// or JSON stream (List items included); other kinds are left to the file
// source or ignored.
func (in *Inputs) AddManifests(data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := in.addObject(obj); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
	}
}

func (in *Inputs) addObject(obj map[string]any) error {
	if obj == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: obj}
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(u.GetKind(), "List") {
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				if err := in.addObject(m); err != nil {
					return err
				}
			}
		}
		return nil
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = in.argoNamespace
	}
	key := ns + "/" + u.GetName()
	switch {
	case u.GetAPIVersion() == "v1" && u.GetKind() == "ConfigMap":
		data, _, err := unstructured.NestedStringMap(obj, "data")
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s: %w", key, err)
		}
		in.ConfigMaps[key] = data
	case u.GetAPIVersion() == "v1" && u.GetKind() == "Secret":
		data, err := secretData(obj)
		if err != nil {
			return fmt.Errorf("reading Secret %s: %w", key, err)
		}
		in.Secrets[key] = data
	case u.GetKind() == kindImageUpdater && strings.HasPrefix(u.GetAPIVersion(), imageUpdatersResource.Group+"/"):
		u.SetNamespace(ns)
		in.imageUpdaters = append(in.imageUpdaters, u)
	}
	return nil
}

// secretData reads a Secret manifest's data (base64) and stringData.
func secretData(obj map[string]any) (map[string][]byte, error) {
	out := map[string][]byte{}
	data, _, err := unstructured.NestedStringMap(obj, "data")
	if err != nil {
		return nil, err
	}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("data.%s: not base64", k) // never the value
		}
		out[k] = b
	}
	str, _, err := unstructured.NestedStringMap(obj, "stringData")
	if err != nil {
		return nil, err
	}
	for k, v := range str {
		out[k] = []byte(v)
	}
	return out, nil
}

// ReadCluster reads the same objects from a cluster, with get and
// list only: Applications (in appsNamespace, "" for every namespace) and
// ImageUpdaters (the same; none when their CRD is not installed) through
// the typed views the daemon uses, and in Argo CD's namespace the
// AppProjects, argocd-image-updater's and Argo CD Notifications'
// ConfigMaps and the notifications Secret. rc is the client config
// (setup.RestConfig).
func ReadCluster(ctx context.Context, rc *rest.Config, argoNamespace, appsNamespace string) (*Inputs, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	cs, err := kubecore.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	in := NewInputs("cluster "+rc.Host, argoNamespace)
	apps, err := dyn.Resource(watcher.ApplicationsResource).Namespace(appsNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	for i := range apps.Items {
		a, err := watcher.AppFromObject(&apps.Items[i])
		if err != nil {
			return nil, err
		}
		in.apps = append(in.apps, a)
	}
	slices.SortFunc(in.apps, func(a, b *watcher.App) int { return strings.Compare(a.Key(), b.Key()) })
	// Argo CD reads AppProjects in its own namespace only.
	projects, err := dyn.Resource(watcher.AppProjectsResource).Namespace(argoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing AppProjects: %w", err)
	}
	for i := range projects.Items {
		in.projects = append(in.projects, watcher.ProjectFromObject(&projects.Items[i]))
	}
	slices.SortFunc(in.projects, func(a, b *watcher.Project) int { return strings.Compare(a.Key(), b.Key()) })
	for _, name := range []string{aiuConfigMap, config.DefaultArgoCDNotificationsConfigMap} {
		cm, err := cs.ConfigMaps(argoNamespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", argoNamespace, name, err)
		default:
			in.ConfigMaps[argoNamespace+"/"+name] = cm.Data
		}
	}
	s, err := cs.Secrets(argoNamespace).Get(ctx, config.DefaultArgoCDNotificationsSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", argoNamespace, config.DefaultArgoCDNotificationsSecret, err)
	default:
		in.Secrets[argoNamespace+"/"+s.Name] = s.Data
	}
	list, err := dyn.Resource(imageUpdatersResource).Namespace(appsNamespace).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// The CRD is not installed: argocd-image-updater 0.x.
	case err != nil:
		return nil, fmt.Errorf("listing ImageUpdaters: %w", err)
	default:
		for i := range list.Items {
			in.imageUpdaters = append(in.imageUpdaters, &list.Items[i])
		}
	}
	return in, nil
}
