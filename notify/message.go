package notify

import "encoding/json"

// DeliveryPolicy says what a Slack message with a grouping key does when
// the group already has a message: post a reply, or update the first one.
type DeliveryPolicy string

// Delivery policies, named as in argocd-notifications.
const (
	// PolicyPost posts every message (replies in the group's thread).
	PolicyPost DeliveryPolicy = "Post"
	// PolicyPostAndUpdate posts the group's first message and updates it after.
	PolicyPostAndUpdate DeliveryPolicy = "PostAndUpdate"
	// PolicyUpdate only updates the group's message; it posts nothing new.
	PolicyUpdate DeliveryPolicy = "Update"
)

// Template is a message template as configured: every string is a
// text/template. The same shape holds a rendered Notification.
type Template struct {
	Name    string                     `json:"name,omitempty"`
	Message string                     `json:"message,omitempty"`
	Slack   *SlackTemplate             `json:"slack,omitempty"`
	Webhook map[string]WebhookTemplate `json:"webhook,omitempty"`
	Email   *EmailTemplate             `json:"email,omitempty"`
	// Blocks are the template blocks of the other service types, by type
	// ("teams", "github"): each a struct (servicetypes.Type.Block's)
	// or a JSON object whose strings are all templates.
	Blocks map[string]any `json:"blocks,omitempty"`
}

// SlackTemplate is the Slack part of a template: Blocks and Attachments
// are JSON arrays in Slack's format.
type SlackTemplate struct {
	Attachments     string         `json:"attachments,omitempty"`
	Blocks          string         `json:"blocks,omitempty"`
	GroupingKey     string         `json:"groupingKey,omitempty"`
	NotifyBroadcast bool           `json:"notifyBroadcast,omitempty"`
	DeliveryPolicy  DeliveryPolicy `json:"deliveryPolicy,omitempty"`
}

// WebhookTemplate is the request sent to the webhook service of the same
// name as its key in Template.Webhook.
type WebhookTemplate struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Body   string `json:"body,omitempty"`
}

// EmailTemplate is the email part of a template; the body is the message.
type EmailTemplate struct {
	Subject string `json:"subject,omitempty"`
}

// Notification is a rendered template: what the outbox stores and the
// services send.
type Notification struct {
	Message string                     `json:"message,omitempty"`
	Slack   *SlackTemplate             `json:"slack,omitempty"`
	Webhook map[string]WebhookTemplate `json:"webhook,omitempty"`
	Email   *EmailTemplate             `json:"email,omitempty"`
	// Blocks are the rendered blocks of Template.Blocks, as JSON objects
	// (package services decodes them into its types).
	Blocks map[string]json.RawMessage `json:"blocks,omitempty"`
}
