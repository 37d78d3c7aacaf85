package servicetypes

// Teams is service type teams (Office 365 connectors).
var Teams = &Type{
	Name:     "teams",
	Settings: func() Settings { return &TeamsSettings{} },
	Block:    func() any { return &TeamsBlock{} },
}

// TeamsWorkflows is service type teams-workflows (Power Automate); its
// settings are those of teams.
var TeamsWorkflows = &Type{
	Name:     "teams-workflows",
	Settings: func() Settings { return &TeamsSettings{} },
	Block:    func() any { return &TeamsWorkflowsBlock{} },
}

// TeamsSettings are the keys of `service.teams` and of
// `service.teams-workflows`: one incoming webhook (or Workflows webhook)
// URL per recipient name (`subscribe.on-deployed.teams: channelName`).
type TeamsSettings struct {
	RecipientURLs      map[string]string `yaml:"recipientUrls" json:"recipientUrls,omitempty"`
	InsecureSkipVerify bool              `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// TeamsBlock is a template's `teams:` block. Facts, Sections and
// PotentialAction are JSON arrays; Template, when set, is the whole
// request body and the other fields are not read.
type TeamsBlock struct {
	Template        string `yaml:"template" json:"template,omitempty"`
	Title           string `yaml:"title" json:"title,omitempty"`
	Summary         string `yaml:"summary" json:"summary,omitempty"`
	Text            string `yaml:"text" json:"text,omitempty"`
	ThemeColor      string `yaml:"themeColor" json:"themeColor,omitempty"`
	Facts           string `yaml:"facts" json:"facts,omitempty"`
	Sections        string `yaml:"sections" json:"sections,omitempty"`
	PotentialAction string `yaml:"potentialAction" json:"potentialAction,omitempty"`
}

// TeamsWorkflowsBlock is a template's `teams-workflows:` block.
// AdaptiveCard, when set, is the card sent as is; otherwise a card is
// built from Title, Text (the message when empty), ThemeColor (the
// title's color), Facts, Sections' facts and PotentialAction's OpenUri
// actions. Template and Summary are read and, as by Argo CD, not used. It
// has the keys of a `teams:` block and adaptiveCard.
type TeamsWorkflowsBlock struct {
	TeamsBlock   `yaml:",inline"`
	AdaptiveCard string `yaml:"adaptiveCard" json:"adaptiveCard,omitempty"`
}

// Check reports a webhook that is no http(s) URL.
func (s *TeamsSettings) Check() error { return CheckRecipientURLs("recipientUrls", s.RecipientURLs) }
