package servicetypes

import (
	"errors"
	"net/url"
	"strings"
)

// Opsgenie is service type opsgenie.
var Opsgenie = &Type{
	Name:     "opsgenie",
	Settings: func() Settings { return &OpsgenieSettings{} },
	Block:    func() any { return &OpsgenieBlock{} },
}

// OpsgenieSettings are the keys of `service.opsgenie`.
type OpsgenieSettings struct {
	// APIURL is the API's host, api.opsgenie.com (the default) or
	// api.eu.opsgenie.com, as Argo CD takes it; a URL with a scheme is
	// taken as is.
	APIURL string `yaml:"apiUrl" json:"apiUrl,omitempty"`
	// APIKeys maps a recipient (the team named in subscriptions) to the
	// key of that team's API integration.
	APIKeys            map[string]string `yaml:"apiKeys" json:"apiKeys,omitempty"`
	InsecureSkipVerify bool              `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// OpsgenieBlock is a template's `opsgenie:` block: the fields of the
// alert Argo CD creates, and crowsnest's Action.
type OpsgenieBlock struct {
	Description string              `yaml:"description" json:"description,omitempty"`
	Priority    string              `yaml:"priority" json:"priority,omitempty"`
	Alias       string              `yaml:"alias" json:"alias,omitempty"`
	Note        string              `yaml:"note" json:"note,omitempty"`
	Actions     []string            `yaml:"actions" json:"actions,omitempty"`
	Tags        []string            `yaml:"tags" json:"tags,omitempty"`
	Details     map[string]string   `yaml:"details" json:"details,omitempty"`
	Entity      string              `yaml:"entity" json:"entity,omitempty"`
	VisibleTo   []OpsgenieResponder `yaml:"visibleTo" json:"visibleTo,omitempty"`
	User        string              `yaml:"user" json:"user,omitempty"`
	// Action is crowsnest's: "close" or "acknowledge" closes or
	// acknowledges the open alert whose alias is Alias instead of
	// creating one (Argo CD only creates).
	Action string `yaml:"action" json:"action,omitempty"`
}

// OpsgenieResponder is a team or user an alert is visible to.
type OpsgenieResponder struct {
	Type     string `yaml:"type" json:"type,omitempty"`
	Name     string `yaml:"name" json:"name,omitempty"`
	ID       string `yaml:"id" json:"id,omitempty"`
	Username string `yaml:"username" json:"username,omitempty"`
}

// opsgenieDefaultHost is the Opsgenie SDK's default API host.
const opsgenieDefaultHost = "api.opsgenie.com"

// Check reports an unusable apiUrl and missing apiKeys.
func (s *OpsgenieSettings) Check() error {
	var errs []error
	if _, err := s.BaseURL(); err != nil {
		errs = append(errs, err)
	}
	if len(s.APIKeys) == 0 {
		errs = append(errs, errors.New("apiKeys: required (a key per recipient team)"))
	}
	return errors.Join(errs...)
}

// BaseURL is the API's scheme and host. A bare host is called over
// https, or over http when its name lacks "api", as the Opsgenie SDK Argo
// CD uses does; a URL with a scheme is used as is.
func (s *OpsgenieSettings) BaseURL() (string, error) {
	apiURL := s.APIURL
	if apiURL == "" {
		apiURL = opsgenieDefaultHost
	}
	if strings.Contains(apiURL, "://") {
		if err := CheckURL("apiUrl", apiURL); err != nil {
			return "", err
		}
		return strings.TrimSuffix(apiURL, "/"), nil
	}
	scheme := "https"
	if !strings.Contains(apiURL, "api") {
		scheme = "http"
	}
	u, err := url.Parse(scheme + "://" + apiURL)
	if err != nil || u.Host != apiURL {
		return "", errors.New("apiUrl: want a host such as api.opsgenie.com or an http(s) URL")
	}
	return scheme + "://" + apiURL, nil
}
