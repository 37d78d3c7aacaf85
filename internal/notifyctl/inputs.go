package notifyctl

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// Inputs are the files the notify commands read.
type Inputs struct {
	// ConfigPath is a crowsnest config whose notifications apply; empty
	// for the default catalog.
	ConfigPath string
	// ConfigMapPath is an argocd-notifications-cm manifest merged under
	// them, and SecretPath the argocd-notifications-secret manifest whose
	// keys its $key references name; empty for none.
	ConfigMapPath, SecretPath string
	// AppPath is the Application (YAML or JSON).
	AppPath string
	// EventType is a crowsnest event type (image-updated, ...) for
	// triggers and templates that read event; empty for none.
	EventType string
}

// Notifications returns the notifications of ConfigPath (the default
// catalog without one) with ConfigMapPath merged under them, and the
// SecretPath data that answers the ConfigMap's $key references.
func (in *Inputs) Notifications() (*config.Notifications, map[string][]byte, error) {
	n := &config.Notifications{Catalog: true}
	if in.ConfigPath != "" {
		c, err := config.Load(in.ConfigPath)
		if err != nil {
			return nil, nil, err
		}
		n = &c.Notifications
	}
	secret, err := in.secret()
	if err != nil {
		return nil, nil, err
	}
	if in.ConfigMapPath != "" {
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := ReadManifest(in.ConfigMapPath, &cm); err != nil {
			return nil, nil, err
		}
		parsed, err := config.ParseArgoCDConfigMap(cm.Data, secret)
		if err != nil {
			return nil, nil, err
		}
		n.Merge(parsed)
	}
	return n, secret, nil
}

// compiled returns the notifications compiled, the Secret's data, and
// template name among them.
func (in *Inputs) compiled(name string) (*triggers.Set, map[string][]byte, config.Template, error) {
	n, secret, err := in.Notifications()
	if err != nil {
		return nil, nil, config.Template{}, err
	}
	set, err := triggers.Compile(n)
	if err != nil {
		return nil, nil, config.Template{}, err
	}
	t, ok := set.Config.Templates[name]
	if !ok {
		return nil, nil, config.Template{}, fmt.Errorf("no template %q (known: %s)", name, strings.Join(sortedNames(set.Config.Templates), ", "))
	}
	return set, secret, t, nil
}

// secret reads SecretPath: a Secret manifest's data (base64, as kubectl
// get -o yaml prints it) and stringData.
func (in *Inputs) secret() (map[string][]byte, error) {
	if in.SecretPath == "" {
		if in.ConfigMapPath != "" {
			return map[string][]byte{}, nil
		}
		return nil, nil
	}
	if in.ConfigMapPath == "" {
		return nil, errors.New("--notifications-secret needs --notifications-cm, whose $key references it answers")
	}
	var sec struct {
		Kind       string            `json:"kind"`
		Data       map[string][]byte `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if err := ReadManifest(in.SecretPath, &sec); err != nil {
		// The decoder's message may quote a value: name the file only.
		return nil, fmt.Errorf("%s: not a Secret manifest with base64 data or stringData", in.SecretPath)
	}
	if sec.Kind != "Secret" {
		return nil, fmt.Errorf("%s: kind %q, want Secret", in.SecretPath, sec.Kind)
	}
	out := make(map[string][]byte, len(sec.Data)+len(sec.StringData))
	maps.Copy(out, sec.Data)
	for k, v := range sec.StringData {
		out[k] = []byte(v)
	}
	return out, nil
}

// ReadManifest reads a YAML or JSON file into out.
func ReadManifest(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readApp reads the Application at path as the templates see it.
func readApp(path string) (map[string]any, error) {
	var app map[string]any
	if err := ReadManifest(path, &app); err != nil {
		return nil, err
	}
	if md, _ := app["metadata"].(map[string]any); md == nil || md["name"] == nil {
		return nil, fmt.Errorf("%s: not an Application (no metadata.name)", path)
	}
	return app, nil
}

// event is the EventType event as triggers and templates read it; nil
// without one.
func (in *Inputs) event() map[string]any {
	if in.EventType == "" {
		return nil
	}
	return (&triggers.Event{Type: in.EventType, ID: "dry-run", Time: time.Now()}).Map()
}

// sortedNames are m's keys, sorted, for messages that list what is known.
func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
