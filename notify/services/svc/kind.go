package svc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
)

// Kind describes one service type: its Type (the settings and template
// block config reads, and their check) and how to send to it.
type Kind struct {
	// Type is what config knows of the service type: its name, the
	// structs of its settings and template block, and Validate.
	*servicetypes.Type
	// New builds the sender of the service called name.
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
