package triggers

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/config"
)

// Subscription annotations, read unchanged from Applications and
// AppProjects.
const (
	// SubscribePrefix starts notifications.argoproj.io/subscribe.<trigger>.<service>
	// and notifications.argoproj.io/subscribe.<service> (default triggers).
	SubscribePrefix = "notifications.argoproj.io/subscribe."
	// SubscriptionsAnnotation holds a YAML list of {trigger, destinations}.
	SubscriptionsAnnotation = "notifications.argoproj.io/subscriptions"
)

// Subscription asks for one trigger's notifications at one service. An
// empty Trigger means the service's default triggers; an empty Recipients
// list means the service's default destination.
type Subscription struct {
	Trigger    string
	Service    string
	Recipients []string
}

// Destination is where one notification goes.
type Destination struct {
	Service   string
	Recipient string
}

// annotationSubscriptions is the YAML of SubscriptionsAnnotation.
type annotationSubscriptions []struct {
	Trigger      stringList `yaml:"trigger"`
	Destinations []struct {
		Service    string     `yaml:"service"`
		Recipients stringList `yaml:"recipients"`
	} `yaml:"destinations"`
}

// stringList reads one string or a list of them.
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = stringList{n.Value}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

// ParseSubscriptions reads the subscription annotations of an Application
// or AppProject, in a stable order (annotation keys sorted). Other
// annotations are ignored. The error joins one error per malformed
// annotation, each naming its key.
func ParseSubscriptions(annotations map[string]string) ([]Subscription, error) {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, SubscribePrefix) || k == SubscriptionsAnnotation {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var subs []Subscription
	var errs []error
	for _, k := range keys {
		v := annotations[k]
		if k == SubscriptionsAnnotation {
			s, err := parseSubscriptionsYAML(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("annotation %s: %w", k, err))
			}
			subs = append(subs, s...)
			continue
		}
		parts := strings.Split(strings.TrimPrefix(k, SubscribePrefix), ".")
		var sub Subscription
		switch len(parts) {
		case 1:
			sub.Service = parts[0]
		case 2:
			sub.Trigger, sub.Service = parts[0], parts[1]
		default:
			errs = append(errs, fmt.Errorf("annotation %s: want %s<trigger>.<service> or %s<service>", k, SubscribePrefix, SubscribePrefix))
			continue
		}
		if err := checkNames(sub.Trigger, sub.Service); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", k, err))
			continue
		}
		sub.Recipients = parseRecipients(v)
		subs = append(subs, sub)
	}
	return subs, errors.Join(errs...)
}

func parseSubscriptionsYAML(v string) ([]Subscription, error) {
	var list annotationSubscriptions
	if err := yaml.Unmarshal([]byte(v), &list); err != nil {
		return nil, fmt.Errorf("not a YAML list of {trigger, destinations}: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var subs []Subscription
	for i, item := range list {
		triggers := []string(item.Trigger)
		if len(triggers) == 0 {
			triggers = []string{""}
		}
		if len(item.Destinations) == 0 {
			return nil, fmt.Errorf("[%d]: no destinations", i)
		}
		for _, tr := range triggers {
			for j, d := range item.Destinations {
				if d.Service == "" {
					return nil, fmt.Errorf("[%d].destinations[%d].service: required", i, j)
				}
				if err := checkNames(tr, d.Service); err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
				subs = append(subs, Subscription{Trigger: tr, Service: d.Service, Recipients: slices.Clone([]string(d.Recipients))})
			}
		}
	}
	return subs, nil
}

func checkNames(trigger, service string) error {
	if trigger != "" && !validName(trigger) {
		return fmt.Errorf("invalid trigger name %q", trigger)
	}
	if !validName(service) {
		return fmt.Errorf("invalid service name %q", service)
	}
	return nil
}

// validName accepts what config accepts as a trigger or service name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case (r == '-' || r == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// parseRecipients splits "r1;r2" (or "r1,r2"), dropping blanks.
func parseRecipients(v string) []string {
	var out []string
	for r := range strings.FieldsFuncSeq(v, func(c rune) bool { return c == ';' || c == ',' }) {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// Resolver finds who receives a fired trigger: the subscriptions of the
// Application's and its AppProject's annotations, and the global ones
// whose label selector matches the Application.
type Resolver struct {
	global                 []globalSubscription
	defaultTriggers        []string
	serviceDefaultTriggers map[string][]string
}

type globalSubscription struct {
	selector labels.Selector
	triggers []string
	dests    []Destination
}

// NewResolver compiles the global subscriptions of n.
func NewResolver(n *config.Notifications) (*Resolver, error) {
	r := &Resolver{defaultTriggers: n.DefaultTriggers, serviceDefaultTriggers: n.ServiceDefaultTriggers}
	for i, s := range n.Subscriptions {
		sel, err := labels.Parse(s.Selector)
		if err != nil {
			return nil, fmt.Errorf("subscriptions[%d].selector: %w", i, err)
		}
		g := globalSubscription{selector: sel, triggers: s.Triggers}
		for _, rcpt := range s.Recipients {
			svc, to, _ := strings.Cut(rcpt, ":")
			g.dests = append(g.dests, Destination{Service: svc, Recipient: to})
		}
		r.global = append(r.global, g)
	}
	return r, nil
}

// defaults returns the default triggers of a service.
func (r *Resolver) defaults(service string) []string {
	if t, ok := r.serviceDefaultTriggers[service]; ok {
		return t
	}
	return r.defaultTriggers
}

// DestinationsFor parses the Application's and its AppProject's
// subscription annotations and returns where trigger's notifications go.
// A malformed annotation is reported (naming its key) and skipped: the
// well-formed subscriptions still receive.
func (r *Resolver) DestinationsFor(trigger string, appLabels, appAnnotations, projectAnnotations map[string]string) ([]Destination, error) {
	appSubs, appErr := ParseSubscriptions(appAnnotations)
	projSubs, projErr := ParseSubscriptions(projectAnnotations)
	if projErr != nil {
		projErr = fmt.Errorf("AppProject: %w", projErr)
	}
	return r.Destinations(trigger, appLabels, appSubs, projSubs), errors.Join(appErr, projErr)
}

// Destinations returns where trigger's notifications for an Application
// go, sorted and without duplicates. subs are the Application's and its
// AppProject's subscriptions (ParseSubscriptions); appLabels select global
// subscriptions.
func (r *Resolver) Destinations(trigger string, appLabels map[string]string, subs ...[]Subscription) []Destination {
	var out []Destination
	add := func(svc string, recipients []string) {
		if len(recipients) == 0 {
			out = append(out, Destination{Service: svc})
		}
		for _, rc := range recipients {
			out = append(out, Destination{Service: svc, Recipient: rc})
		}
	}
	for _, list := range subs {
		for _, s := range list {
			if s.Trigger == trigger || (s.Trigger == "" && slices.Contains(r.defaults(s.Service), trigger)) {
				add(s.Service, s.Recipients)
			}
		}
	}
	set := labels.Set(appLabels)
	for _, g := range r.global {
		if !g.selector.Matches(set) {
			continue
		}
		for _, d := range g.dests {
			// notifications-engine (Config.GetGlobalDestinations) gives a
			// global subscription without triggers the defaultTriggers,
			// never a service's defaultTriggers.<service>.
			triggers := g.triggers
			if len(triggers) == 0 {
				triggers = r.defaultTriggers
			}
			if slices.Contains(triggers, trigger) {
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Recipient < out[j].Recipient
	})
	return slices.Compact(out)
}
