package servicetypes

import (
	"fmt"
	"slices"
	"sort"
)

// Type describes one service type for config: the structs its settings
// and template block decode into, and the check of its settings.
type Type struct {
	// Name is the type in `service.<type>` and in crowsnest's config
	// ("teams", "github", "pagerdutyv2"), also the template block's key
	// when Block is set.
	Name string
	// Settings returns a pointer to a new settings struct. Its yaml tags
	// are the keys of the service block (Argo CD's names); its json tags
	// the same. String fields may be `$key` references into the
	// notifications Secret.
	Settings func() Settings
	// Block returns a pointer to a new template block struct (yaml and
	// json tags as Settings), nil when the type reads only the message.
	// Every string in a block is a template.
	Block func() any
}

// Settings is a pointer to one of this package's settings structs.
type Settings interface {
	// Check reports what is wrong with the settings (required keys, URLs,
	// one auth method), each error naming its key and never a value: a
	// value may be a secret. A `$key` reference the notifications Secret
	// did not answer is checked when the service is built or sent.
	Check() error
}

// Validate checks settings decoded into t.Settings' struct.
func (t *Type) Validate(settings any) error {
	s, ok := settings.(Settings)
	if !ok {
		return fmt.Errorf("%s: settings of type %T, not this package's", t.Name, settings)
	}
	return s.Check()
}

// types are the types crowsnest sends to, by name; newTypes panics on a
// duplicate or incomplete Type (a programming error, found by any test).
var types = newTypes(
	Alertmanager, AWSSQS, GCPPubSub, GitHub, GoogleChat, Grafana, Mattermost,
	NATS, Newrelic, Opsgenie, PagerDuty, PagerDutyV2, Pushover, RocketChat,
	Teams, TeamsWorkflows, Telegram, Webex,
)

func newTypes(list ...*Type) map[string]*Type {
	m := make(map[string]*Type, len(list))
	for _, t := range list {
		if t.Name == "" || t.Settings == nil {
			panic("servicetypes: incomplete Type " + t.Name)
		}
		if _, dup := m[t.Name]; dup {
			panic("servicetypes: duplicate Type " + t.Name)
		}
		m[t.Name] = t
	}
	return m
}

// Lookup returns the Type called name.
func Lookup(name string) (*Type, bool) {
	t, ok := types[name]
	return t, ok
}

// Names lists the types crowsnest sends to, sorted.
func Names() []string {
	out := make([]string, 0, len(types))
	for n := range types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ArgoCDTypes are the service types Argo CD Notifications knows
// (notifications-engine's pkg/services). A type here that crowsnest does
// not send to is reported as unsupported, never dropped silently.
var ArgoCDTypes = []string{
	"alertmanager", "awssqs", "email", "gcppubsub", "github", "googlechat", "grafana",
	"mattermost", "nats", "newrelic", "opsgenie", "pagerduty", "pagerdutyv2", "pushover",
	"rocketchat", "slack", "teams", "teams-workflows", "telegram", "webex", "webhook",
}

// IsArgoCDType reports whether name is a service type of Argo CD
// Notifications.
func IsArgoCDType(name string) bool { return slices.Contains(ArgoCDTypes, name) }
