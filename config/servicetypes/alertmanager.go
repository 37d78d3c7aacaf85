package servicetypes

import (
	"errors"
	"fmt"
	"net/url"
)

// Alertmanager is service type alertmanager.
var Alertmanager = &Type{
	Name:     "alertmanager",
	Settings: func() Settings { return &AlertmanagerSettings{} },
	Block:    func() any { return &AlertmanagerBlock{} },
}

// AlertmanagerSettings are the keys of `service.alertmanager`.
type AlertmanagerSettings struct {
	// Targets are Alertmanagers' host:port; every one is sent the alert.
	Targets []string `yaml:"targets" json:"targets,omitempty"`
	// Scheme is http (the default) or https.
	Scheme string `yaml:"scheme" json:"scheme,omitempty"`
	// APIPath is /api/v2/alerts by default.
	APIPath     string                 `yaml:"apiPath" json:"apiPath,omitempty"`
	BasicAuth   *AlertmanagerBasicAuth `yaml:"basicAuth" json:"basicAuth,omitempty"`
	BearerToken string                 `yaml:"bearerToken" json:"bearerToken,omitempty"`
	// Timeout bounds a send, in seconds (3 by default, as in Argo CD).
	Timeout            int  `yaml:"timeout" json:"timeout,omitempty"`
	InsecureSkipVerify bool `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// AlertmanagerBasicAuth is basicAuth; it wins over bearerToken.
type AlertmanagerBasicAuth struct {
	Username string `yaml:"username" json:"username,omitempty"`
	Password string `yaml:"password" json:"password,omitempty"`
}

// AlertmanagerBlock is a template's `alertmanager:` block.
type AlertmanagerBlock struct {
	// Labels are the alert's labels (at least one); alertname is the
	// template's name unless set.
	Labels      map[string]string `yaml:"labels" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations" json:"annotations,omitempty"`
	// GeneratorURL is the Application's repoURL unless set; git@ URLs
	// are turned into https ones.
	GeneratorURL string `yaml:"generatorURL" json:"generatorURL,omitempty"`
}

// Argo CD's defaults.
const (
	alertmanagerTarget  = "127.0.0.1:9093"
	alertmanagerScheme  = "http"
	alertmanagerAPIPath = "/api/v2/alerts"
)

// Check reports a scheme or a target the alert URLs cannot be made of.
func (s *AlertmanagerSettings) Check() error {
	_, err := s.URLs()
	return err
}

// URLs are the targets' alert URLs, with Argo CD's defaults.
func (s *AlertmanagerSettings) URLs() ([]string, error) {
	targets, scheme, path := s.Targets, s.Scheme, s.APIPath
	if len(targets) == 0 {
		targets = []string{alertmanagerTarget}
	}
	if scheme == "" {
		scheme = alertmanagerScheme
	}
	if path == "" {
		path = alertmanagerAPIPath
	}
	if scheme != "http" && scheme != "https" {
		return nil, errors.New("scheme: want http or https")
	}
	var errs []error
	urls := make([]string, 0, len(targets))
	for i, t := range targets {
		u := scheme + "://" + t + path
		if p, err := url.Parse(u); err != nil || p.Host != t {
			errs = append(errs, fmt.Errorf("targets[%d]: want host:port", i))
			continue
		}
		urls = append(urls, u)
	}
	return urls, errors.Join(errs...)
}
