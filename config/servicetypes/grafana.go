package servicetypes

import "errors"

// Grafana is service type grafana.
var Grafana = &Type{
	Name:     "grafana",
	Settings: func() Settings { return &GrafanaSettings{} },
}

// GrafanaSettings are the keys of `service.grafana`.
type GrafanaSettings struct {
	// APIURL is Grafana's API root, e.g. https://grafana.example.com/api.
	APIURL             string `yaml:"apiUrl" json:"apiUrl,omitempty"`
	APIKey             string `yaml:"apiKey" json:"apiKey,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// Check reports a missing apiUrl or apiKey.
func (s *GrafanaSettings) Check() error {
	return errors.Join(RequireURL("apiUrl", s.APIURL), Require("apiKey", s.APIKey))
}
