package servicetypes

import "errors"

// RocketChat is service type rocketchat.
var RocketChat = &Type{
	Name:     "rocketchat",
	Settings: func() Settings { return &RocketChatSettings{} },
	Block:    func() any { return &RocketChatBlock{} },
}

// RocketChatSettings are the keys of `service.rocketchat`. crowsnest logs
// in with Email and Password, as Argo CD does.
type RocketChatSettings struct {
	ServerURL string `yaml:"serverUrl" json:"serverUrl,omitempty"`
	Email     string `yaml:"email" json:"email,omitempty"`
	Password  string `yaml:"password" json:"password,omitempty"`
	// Alias is the name shown instead of the user's.
	Alias string `yaml:"alias" json:"alias,omitempty"`
	// Icon is an emoji (":rocket:") shown as the avatar; another value is
	// ignored, as by Argo CD.
	Icon string `yaml:"icon" json:"icon,omitempty"`
	// Avatar is an http(s) image URL shown as the avatar; another value is
	// ignored, as by Argo CD.
	Avatar string `yaml:"avatar" json:"avatar,omitempty"`
}

// RocketChatBlock is a template's `rocketchat:` block.
type RocketChatBlock struct {
	// Attachments is a JSON array of Rocket.Chat message attachments.
	Attachments string `yaml:"attachments" json:"attachments,omitempty"`
}

// Check reports a missing serverUrl, email or password.
func (s *RocketChatSettings) Check() error {
	return errors.Join(RequireURL("serverUrl", s.ServerURL), Require("email", s.Email), Require("password", s.Password))
}
