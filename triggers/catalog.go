package triggers

import (
	_ "embed"
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config"
)

//go:embed catalog.yaml
var catalogYAML []byte

// Catalog returns the default triggers and templates, read from the
// embedded catalog.yaml through the argocd-notifications-cm reader. Each
// call returns a fresh copy, safe to modify.
func Catalog() (*config.Notifications, error) {
	var data map[string]string
	if err := yaml.Unmarshal(catalogYAML, &data); err != nil {
		return nil, fmt.Errorf("triggers: embedded catalog: %w", err)
	}
	n, err := config.ParseArgoCDConfigMap(data, nil)
	if err != nil {
		return nil, fmt.Errorf("triggers: embedded catalog: %w", err)
	}
	return n, nil
}

// CatalogTriggers names the catalog's triggers, sorted.
func CatalogTriggers() []string {
	n, err := Catalog()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(n.Triggers))
	for k := range n.Triggers {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
