package svc

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
)

// Kind describes one service type: its name, what config reads of it,
// and how to send to it. Every sender is built from its Kind (package
// services lists them all), Slack, webhooks and email included.
type Kind struct {
	// Name is the type in `service.<type>` and in crowsnest's config
	// ("slack", "teams", "pagerdutyv2"), the key of config.Service's
	// Settings.
	Name string
	// Type is what config/servicetypes knows of the type: the structs
	// its settings and template block decode into, and Validate. It is
	// nil for slack, webhook and email, whose settings are config's own
	// structs (config.SlackService, ...), read and checked by config
	// with crowsnest's names and secret references.
	Type *servicetypes.Type
	// New builds the sender of the service called name from its
	// settings: a pointer to Type's settings struct, or to config's
	// struct of the type when Type is nil.
	New func(name string, settings any, o Options) (notify.Service, error)
	// BlockDefaults, when set, returns a copy of a template's block (of
	// Block's type) with what Argo CD derives from the template itself
	// before rendering, e.g. Alertmanager's alertname label, the
	// template's name.
	BlockDefaults func(template string, block any) any
	// DefaultRecipient is true when subscriptions may name the service
	// without a recipient (GitHub, Grafana, Alertmanager: the recipient
	// is in the settings or in the Application).
	DefaultRecipient bool
	// Repository, when set, returns the repository a rendered
	// notification makes the service act on, as a URL an AppProject's
	// sourceRepos can name, or "" when the notification reaches none
	// (its sender skips or refuses it before any request). The notifier
	// refuses a message whose repository the Application may not use:
	// the service acts there with the operator's credentials, and the
	// repository comes from what the Application's author writes.
	Repository func(settings any, n notify.Notification) string
}

// Options are what every sender shares.
type Options struct {
	// Transport, when set, replaces the sender's own HTTP transport
	// (`notify template render --service` records requests with it).
	Transport http.RoundTripper
	// Mailer, when set, takes the email sender's messages in place of
	// its SMTP session (`notify template render` records them with it).
	Mailer Mailer
	// RootCAs, when set, replaces the system's roots for the TLS of a
	// sender that dials itself (email's SMTP) or uses its own transport.
	RootCAs *x509.CertPool
	// Threads keeps the messages that start Slack threads, so replies
	// and updates find them after a restart; nil keeps none.
	Threads notify.ThreadStore
	// Timeout bounds one send; DefaultTimeout when zero.
	Timeout time.Duration
	// Now is the clock (JWTs, timestamps); time.Now when nil.
	Now func() time.Time
}

// DefaultTimeout bounds one send of a service without its own timeout:
// the outbox's attempt timeout bounds it too.
const DefaultTimeout = 15 * time.Second

// DecodeBlock reads the rendered block of n for typ into out (a pointer to
// the Kind's Block struct). It reports false when n has no such block.
func DecodeBlock(n notify.Notification, typ string, out any) (bool, error) {
	raw, ok := n.Blocks[typ]
	if !ok || len(raw) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, notify.Permanent(fmt.Errorf("%s block: %w", typ, err))
	}
	return true, nil
}
