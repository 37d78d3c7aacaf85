// Package strictyaml is the strict YAML reader under package config's
// readers (the config file, argocd-notifications-cm values,
// registries.conf): it decodes yaml.v3 nodes into tagged Go structs,
// `yaml:",inline"` embedded structs included, and reports every problem
// with its field path and line instead of stopping at the first. It knows
// no config type: config hands it hooks for the types that read
// themselves and for the keys a struct takes beyond its fields.
package strictyaml
