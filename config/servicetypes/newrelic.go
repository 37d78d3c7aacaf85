package servicetypes

// Newrelic is service type newrelic.
var Newrelic = &Type{
	Name:     "newrelic",
	Settings: func() Settings { return &NewrelicSettings{} },
	Block:    func() any { return &NewrelicBlock{} },
}

// NewrelicSettings are the keys of `service.newrelic`.
type NewrelicSettings struct {
	APIKey string `yaml:"apiKey" json:"apiKey,omitempty"`
	// APIURL is https://api.newrelic.com by default
	// (https://api.eu.newrelic.com in the EU).
	APIURL             string `yaml:"apiURL" json:"apiURL,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// NewrelicBlock is a template's `newrelic:` block: a deployment marker.
type NewrelicBlock struct {
	// Revision is the synced revision unless set.
	Revision string `yaml:"revision" json:"revision,omitempty"`
	// Changelog and User are the revision's commit message and author
	// unless set (repo.GetCommitMetadata).
	Changelog string `yaml:"changelog" json:"changelog,omitempty"`
	// Description is the message unless set.
	Description string `yaml:"description" json:"description,omitempty"`
	User        string `yaml:"user" json:"user,omitempty"`
}

// Check reports a missing apiKey, then an apiURL that is no http(s) URL.
func (s *NewrelicSettings) Check() error {
	if err := Require("apiKey", s.APIKey); err != nil {
		return err
	}
	return CheckURL("apiURL", s.APIURL)
}
