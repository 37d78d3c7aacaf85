package servicetypes

import "errors"

// Mattermost is service type mattermost.
var Mattermost = &Type{
	Name:     "mattermost",
	Settings: func() Settings { return &MattermostSettings{} },
	Block:    func() any { return &MattermostBlock{} },
}

// MattermostSettings are the keys of `service.mattermost`.
type MattermostSettings struct {
	APIURL             string `yaml:"apiURL" json:"apiURL,omitempty"`
	Token              string `yaml:"token" json:"token,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// MattermostBlock is a template's `mattermost:` block.
type MattermostBlock struct {
	// Attachments is a JSON array of Slack-style message attachments.
	Attachments string `yaml:"attachments" json:"attachments,omitempty"`
}

// Check reports a missing apiURL or token.
func (s *MattermostSettings) Check() error {
	return errors.Join(RequireURL("apiURL", s.APIURL), Require("token", s.Token))
}
