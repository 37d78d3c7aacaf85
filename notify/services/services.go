// Package services holds crowsnest's senders for the notification
// services Argo CD Notifications supports beyond Slack, webhooks and email
// (those live in package notify): Microsoft Teams, GitHub, Opsgenie,
// PagerDuty and the rest. Each is configured with the keys of its
// `service.<type>` block in argocd-notifications-cm, reads its own block of
// a template (`teams:`, `github:`, ...), and sends through notify's outbox
// like the others: one shared HTTP client per configured service, a
// context on every request, 429 answered with the outbox's Retry-After
// wait, 4xx dead-lettered at once, and no secret in any error.
//
// A type registers a Kind (Register, from an init function); config reads
// settings and template blocks through the Kind's Go types, notify renders
// the block's strings as templates, and New builds the sender.
package services

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// Kind describes one service type.
type Kind struct {
	// Type is the name in `service.<type>` and in crowsnest's config
	// ("teams", "github", "pagerdutyv2"), also the template block's key
	// when Block is set.
	Type string
	// Settings returns a pointer to a new settings struct. Its yaml tags
	// are the keys of the service block (Argo CD's names); its json tags
	// the same. String fields may be `$key` references into the
	// notifications Secret.
	Settings func() any
	// Block returns a pointer to a new template block struct (yaml and
	// json tags as Settings), nil when the type reads only the message.
	// Every string in a block is a template.
	Block func() any
	// Validate checks settings decoded into Settings' type (required
	// keys, URLs, one auth method). Errors name the key.
	Validate func(settings any) error
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

var (
	mu    sync.RWMutex
	kinds = map[string]*Kind{}
)

// Register adds a Kind. It panics on a duplicate or incomplete Kind: the
// set is fixed at build time.
func Register(k *Kind) {
	mu.Lock()
	defer mu.Unlock()
	if k.Type == "" || k.Settings == nil || k.New == nil {
		panic("services: incomplete Kind " + k.Type)
	}
	if _, dup := kinds[k.Type]; dup {
		panic("services: duplicate Kind " + k.Type)
	}
	kinds[k.Type] = k
}

// Lookup returns the Kind of typ.
func Lookup(typ string) (*Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[typ]
	return k, ok
}

// Types lists the registered types, sorted.
func Types() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(kinds))
	for t := range kinds {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// HasBlock reports whether typ reads a template block of its own name.
func HasBlock(typ string) bool {
	k, ok := Lookup(typ)
	return ok && k.Block != nil
}

// ArgoCDTypes are the service types Argo CD Notifications knows
// (notifications-engine's pkg/services). A type here without a Kind is
// reported as unsupported, never dropped silently.
var ArgoCDTypes = []string{
	"alertmanager", "awssqs", "email", "gcppubsub", "github", "googlechat", "grafana",
	"mattermost", "nats", "newrelic", "opsgenie", "pagerduty", "pagerdutyv2", "pushover",
	"rocketchat", "slack", "teams", "teams-workflows", "telegram", "webex", "webhook",
}

// IsArgoCDType reports whether typ is a service type of Argo CD
// Notifications.
func IsArgoCDType(typ string) bool { return slices.Contains(ArgoCDTypes, typ) }

// DecodeBlock reads the rendered block of n for typ into out (a pointer to
// the Kind's Block type). It reports false when n has no such block.
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

// TemplateBlocks returns the blocks of template (called name) that a
// service of type typ sends: its own block, with the Kind's defaults
// applied; nil when the template has none.
func TemplateBlocks(name string, blocks map[string]any, typ string) map[string]any {
	b, ok := blocks[typ]
	if !ok {
		return nil
	}
	if k, found := Lookup(typ); found && k.BlockDefaults != nil {
		b = k.BlockDefaults(name, b)
	}
	return map[string]any{typ: b}
}
