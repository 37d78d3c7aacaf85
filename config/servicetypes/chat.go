package servicetypes

import "errors"

// The chat and push services whose template reads no block of their own.
var (
	// Pushover is service type pushover.
	Pushover = &Type{Name: "pushover", Settings: func() Settings { return &PushoverSettings{} }}
	// Telegram is service type telegram.
	Telegram = &Type{Name: "telegram", Settings: func() Settings { return &TelegramSettings{} }}
	// Webex is service type webex.
	Webex = &Type{Name: "webex", Settings: func() Settings { return &WebexSettings{} }}
)

// PushoverSettings are the keys of `service.pushover`: the application's
// API token.
type PushoverSettings struct {
	Token string `yaml:"token" json:"token,omitempty"`
}

// Check reports a missing token.
func (s *PushoverSettings) Check() error { return Require("token", s.Token) }

// TelegramSettings are the keys of `service.telegram`.
type TelegramSettings struct {
	// Token is the bot's token from @BotFather ("123456:ABC-...").
	Token string `yaml:"token" json:"token,omitempty"`
}

// Check reports a missing token.
func (s *TelegramSettings) Check() error { return Require("token", s.Token) }

// WebexSettings are the keys of `service.webex`.
type WebexSettings struct {
	// Token is a bot's access token.
	Token string `yaml:"token" json:"token,omitempty"`
	// APIURL is the Webex API; Webex's public API when empty.
	APIURL             string `yaml:"apiURL" json:"apiURL,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// Check reports a missing token and an apiURL that is no http(s) URL.
func (s *WebexSettings) Check() error {
	return errors.Join(Require("token", s.Token), CheckURL("apiURL", s.APIURL))
}
