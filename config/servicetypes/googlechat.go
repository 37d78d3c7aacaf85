package servicetypes

// GoogleChat is service type googlechat.
var GoogleChat = &Type{
	Name:     "googlechat",
	Settings: func() Settings { return &GoogleChatSettings{} },
	Block:    func() any { return &GoogleChatBlock{} },
}

// GoogleChatSettings are the keys of `service.googlechat`: one space
// webhook URL per recipient name.
type GoogleChatSettings struct {
	Webhooks           map[string]string `yaml:"webhooks" json:"webhooks,omitempty"`
	InsecureSkipVerify bool              `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// GoogleChatBlock is a template's `googlechat:` block. Cards (legacy) and
// CardsV2 are YAML or JSON lists of cards; when either is set the message
// is not sent as text. ThreadKey replies in (or starts) that thread.
type GoogleChatBlock struct {
	Cards     string `yaml:"cards" json:"cards,omitempty"`
	CardsV2   string `yaml:"cardsV2" json:"cardsV2,omitempty"`
	ThreadKey string `yaml:"threadKey" json:"threadKey,omitempty"`
}

// Check reports a webhook that is no http(s) URL.
func (s *GoogleChatSettings) Check() error { return CheckRecipientURLs("webhooks", s.Webhooks) }
