package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Notifications is the one model of deployment notifications, read from
// crowsnest's config (the notifications section) or from an
// argocd-notifications-cm (ParseArgoCDConfigMap), or both merged (Merge).
// Expressions are kept as text: package triggers compiles them, since
// config sits below it. Templates are parsed here, for syntax only.
type Notifications struct {
	// Catalog adds the default triggers and templates (Argo CD's catalog
	// and crowsnest's own events) under the configured ones.
	Catalog bool `yaml:"catalog"`
	// Triggers by name; each holds conditions, as in argocd-notifications.
	Triggers map[string][]Condition `yaml:"triggers"`
	// Templates by name.
	Templates map[string]Template `yaml:"templates"`
	// Services by name, the name subscriptions use ("slack", "github").
	Services map[string]Service `yaml:"services"`
	// Subscriptions apply to every Application their selector matches.
	Subscriptions []Subscription `yaml:"subscriptions"`
	// DefaultTriggers are used by subscriptions that name no trigger
	// (notifications.argoproj.io/subscribe.<service>).
	DefaultTriggers []string `yaml:"defaultTriggers"`
	// ServiceDefaultTriggers replace DefaultTriggers for one service
	// (argocd-notifications' defaultTriggers.<service>).
	ServiceDefaultTriggers map[string][]string `yaml:"serviceDefaultTriggers"`
	// Context is handed to triggers and templates as `context`
	// (argocdUrl, environment names...).
	Context map[string]string `yaml:"context"`
	// Baseline records conditions already true when an Application is
	// first seen instead of sending them, so a fresh install or a new
	// Application does not flood channels. Default true; false sends them.
	Baseline *bool `yaml:"baseline"`
	// ArgoCDConfigMap also reads an argocd-notifications-cm, unchanged.
	ArgoCDConfigMap ArgoCDConfigMapRef `yaml:"argocdConfigMap"`

	// Ignored lists what an argocd-notifications-cm holds that crowsnest
	// reads but does not act on and Argo CD ignores too (unknown keys), so
	// the caller can log it once.
	Ignored []string `yaml:"-"`
	// Unsupported lists what an argocd-notifications-cm configures that
	// crowsnest cannot send (a service type or template block it has no
	// sender for): notifications would go nowhere, so the daemon warns and
	// counts them, `config validate` fails on them, and deliveries to such
	// a service dead-letter with the reason.
	Unsupported []string `yaml:"-"`
}

// ArgoCDConfigMapRef locates an argocd-notifications-cm and the Secret its
// `$key` references (and those of this config) read.
type ArgoCDConfigMapRef struct {
	// Name of the ConfigMap; empty reads none.
	Name string `yaml:"name"`
	// Namespace of the ConfigMap and Secret; empty means crowsnest's own.
	Namespace string `yaml:"namespace"`
	// Secret is the Secret `$key` references name; Argo CD's by default.
	Secret string `yaml:"secret"`
}

// Argo CD's names for the notification objects.
const (
	DefaultArgoCDNotificationsConfigMap = "argocd-notifications-cm"
	DefaultArgoCDNotificationsSecret    = "argocd-notifications-secret"
)

// Condition is one condition of a trigger.
type Condition struct {
	// When is an expr-lang boolean expression over app, prev, event,
	// context and the helpers.
	When string `yaml:"when"`
	// OncePer is an expression whose value the condition fires once for;
	// empty means once each time When becomes true.
	OncePer string `yaml:"oncePer"`
	// Send names the templates to send.
	Send        []string `yaml:"send"`
	Description string   `yaml:"description"`
}

// Template is a notification's text, with a block per kind of service.
// Every string is a text/template.
type Template struct {
	// Title is a short form of the message (email subject fallback).
	Title   string         `yaml:"title"`
	Message string         `yaml:"message"`
	Slack   *SlackTemplate `yaml:"slack"`
	// Webhook holds the request per webhook service name; AnyWebhook's
	// entry serves every webhook service without its own.
	Webhook map[string]WebhookTemplate `yaml:"webhook"`
	Email   *EmailTemplate             `yaml:"email"`
	// Blocks are the blocks of the other service types (teams, github,
	// ...: package servicetypes), by type; each holds a pointer to the
	// type's block struct, whose strings are templates.
	Blocks map[string]any `yaml:"-"`
}

// AnyWebhook is the Template.Webhook key that applies to every webhook
// service (the catalog's templates use it, since they cannot know the
// services' names).
const AnyWebhook = "*"

// SlackTemplate holds Slack-specific parts of a message.
type SlackTemplate struct {
	// Attachments and Blocks are JSON, rendered as templates.
	Attachments string `yaml:"attachments"`
	Blocks      string `yaml:"blocks"`
	// GroupingKey threads messages with the same key.
	GroupingKey     string `yaml:"groupingKey"`
	NotifyBroadcast bool   `yaml:"notifyBroadcast"`
	// DeliveryPolicy is Post (default), PostAndUpdate or Update.
	DeliveryPolicy string `yaml:"deliveryPolicy"`
}

// SlackDeliveryPolicies are the values of deliveryPolicy, spelled as in
// argocd-notifications.
var SlackDeliveryPolicies = []string{"Post", "PostAndUpdate", "Update"}

// WebhookTemplate is the request sent to one webhook service.
type WebhookTemplate struct {
	// Method defaults to the service's method.
	Method string `yaml:"method"`
	// Path is appended to the service URL.
	Path string `yaml:"path"`
	Body string `yaml:"body"`
}

// EmailTemplate holds the email-specific parts of a message.
type EmailTemplate struct {
	Subject string `yaml:"subject"`
	// Body replaces Message for email; HTML when it starts with '<'.
	Body string `yaml:"body"`
}

// Subscription sends some triggers of the Applications a selector matches
// to recipients.
type Subscription struct {
	// Recipients are "<service>:<destination>" ("slack:deploys",
	// "email:ops@example.com"); a service alone means its default
	// destination.
	Recipients []string `yaml:"recipients"`
	// Triggers; empty means the default triggers.
	Triggers []string `yaml:"triggers"`
	// Selector is a label selector on the Application; empty matches all.
	Selector string `yaml:"selector"`
}

// BaselineEnabled reports whether conditions already true on first sight
// are recorded rather than sent (default true).
func (n *Notifications) BaselineEnabled() bool { return n.Baseline == nil || *n.Baseline }

// Enabled reports whether anything is configured to send.
func (n *Notifications) Enabled() bool {
	return n.Catalog || len(n.Triggers) > 0 || len(n.Services) > 0 || n.ArgoCDConfigMap.Name != ""
}

func (n *Notifications) setDefaults() {
	if n.Baseline == nil {
		on := true
		n.Baseline = &on
	}
	for name, s := range n.Services {
		s.setDefaults()
		n.Services[name] = s
	}
	if n.ArgoCDConfigMap.Name != "" && n.ArgoCDConfigMap.Secret == "" {
		n.ArgoCDConfigMap.Secret = DefaultArgoCDNotificationsSecret
	}
}

// names of triggers, templates and services: what argocd-notifications
// accepts in a ConfigMap key and an annotation key segment.
var (
	notifyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	// Template names never appear in annotation keys, so they may hold dots.
	templateNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

func (n *Notifications) validate(path string, errs *fieldErrors) {
	n.validateWith(crowsnestNotifyPaths(path), errs)
	n.ArgoCDConfigMap.validate(fieldpath.Join(path, "argocdConfigMap"), errs)
}

// notifyPaths spells field paths for one file format: crowsnest's
// "notifications.triggers[on-x]", the ConfigMap's "trigger.on-x".
type notifyPaths struct {
	trigger, template, service, defaultTriggers func(name string) string
	subscriptions                               string
	// serviceBlocks: the service path is followed by its type block.
	serviceBlocks bool
}

func crowsnestNotifyPaths(path string) notifyPaths {
	return notifyPaths{
		trigger:         func(name string) string { return fieldpath.Join(path, "triggers") + "[" + name + "]" },
		template:        func(name string) string { return fieldpath.Join(path, "templates") + "[" + name + "]" },
		service:         func(name string) string { return fieldpath.Join(path, "services") + "[" + name + "]" },
		defaultTriggers: func(svc string) string { return fieldpath.Join(path, "serviceDefaultTriggers") + "[" + svc + "]" },
		subscriptions:   fieldpath.Join(path, "subscriptions"),
		serviceBlocks:   true,
	}
}

func (n *Notifications) validateWith(np notifyPaths, errs *fieldErrors) {
	for _, name := range sortedKeys(n.Triggers) {
		p := np.trigger(name)
		if !notifyNameRE.MatchString(name) {
			errs.invalid(p, "invalid trigger name: letters, digits, '-' or '_'")
		}
		conds := n.Triggers[name]
		if len(conds) == 0 {
			errs.invalid(p, "no conditions")
		}
		for i, c := range conds {
			cp := fieldpath.Index(p, i)
			if strings.TrimSpace(c.When) == "" {
				errs.invalid(fieldpath.Join(cp, "when"), "required")
			}
			if len(c.Send) == 0 {
				errs.invalid(fieldpath.Join(cp, "send"), "required: the templates to send")
			}
		}
	}
	for _, name := range sortedKeys(n.Templates) {
		if !templateNameRE.MatchString(name) {
			errs.invalid(np.template(name), "invalid template name: letters, digits, '.', '-' or '_'")
		}
		t := n.Templates[name]
		t.validate(np.template(name), errs)
	}
	for _, name := range sortedKeys(n.Services) {
		if !notifyNameRE.MatchString(name) {
			errs.invalid(np.service(name), "invalid service name: letters, digits, '-' or '_'")
		}
		s := n.Services[name]
		s.validate(np.service(name), np.serviceBlocks, errs)
	}
	for i, s := range n.Subscriptions {
		p := fieldpath.Index(np.subscriptions, i)
		if len(s.Recipients) == 0 {
			errs.invalid(fieldpath.Join(p, "recipients"), "required: <service>:<destination> entries")
		}
		for j, r := range s.Recipients {
			if svc, _, _ := strings.Cut(r, ":"); !notifyNameRE.MatchString(svc) {
				errs.invalid(fieldpath.Index(fieldpath.Join(p, "recipients"), j), "want <service>:<destination>, got %q", r)
			}
		}
		for j, tr := range s.Triggers {
			if !notifyNameRE.MatchString(tr) {
				errs.invalid(fieldpath.Index(fieldpath.Join(p, "triggers"), j), "invalid trigger name %q", tr)
			}
		}
		if _, err := labels.Parse(s.Selector); err != nil {
			errs.invalid(fieldpath.Join(p, "selector"), "invalid label selector %q: %v", s.Selector, err)
		}
	}
	for _, svc := range sortedKeys(n.ServiceDefaultTriggers) {
		if !notifyNameRE.MatchString(svc) {
			errs.invalid(np.defaultTriggers(svc), "invalid service name: letters, digits, '-' or '_'")
		}
	}
}

func (r *ArgoCDConfigMapRef) validate(p string, errs *fieldErrors) {
	if r.Name != "" || r.Namespace != "" || r.Secret != "" {
		if msgs := validation.IsDNS1123Subdomain(r.Name); len(msgs) > 0 {
			errs.invalid(fieldpath.Join(p, "name"), "invalid ConfigMap name %q: %s", r.Name, strings.Join(msgs, "; "))
		}
		if r.Namespace != "" {
			if msgs := validation.IsDNS1123Label(r.Namespace); len(msgs) > 0 {
				errs.invalid(fieldpath.Join(p, "namespace"), "invalid namespace %q: %s", r.Namespace, strings.Join(msgs, "; "))
			}
		}
		if r.Secret != "" {
			if msgs := validation.IsDNS1123Subdomain(r.Secret); len(msgs) > 0 {
				errs.invalid(fieldpath.Join(p, "secret"), "invalid Secret name %q: %s", r.Secret, strings.Join(msgs, "; "))
			}
		}
	}
}

func (t *Template) validate(path string, errs *fieldErrors) {
	check := func(field, text string) {
		if err := CheckTemplate(text); err != nil {
			errs.invalid(fieldpath.Join(path, field), "%v", err)
		}
	}
	check("title", t.Title)
	check("message", t.Message)
	if s := t.Slack; s != nil {
		check("slack.attachments", s.Attachments)
		check("slack.blocks", s.Blocks)
		check("slack.groupingKey", s.GroupingKey)
		if s.DeliveryPolicy != "" && !slices.Contains(SlackDeliveryPolicies, s.DeliveryPolicy) {
			errs.invalid(fieldpath.Join(path, "slack.deliveryPolicy"), "unsupported value %q, want one of %s", s.DeliveryPolicy, strings.Join(SlackDeliveryPolicies, ", "))
		}
	}
	for _, name := range sortedKeys(t.Blocks) {
		eachString(reflect.ValueOf(t.Blocks[name]), name, func(p string, s *string) { check(p, *s) })
	}
	for _, name := range sortedKeys(t.Webhook) {
		w := t.Webhook[name]
		check("webhook."+name+".path", w.Path)
		check("webhook."+name+".body", w.Body)
		if w.Method != "" && !slices.Contains(httpMethods, strings.ToUpper(w.Method)) {
			errs.invalid(fieldpath.Join(path, "webhook."+name+".method"), "unsupported method %q", w.Method)
		}
	}
	if e := t.Email; e != nil {
		check("email.subject", e.Subject)
		check("email.body", e.Body)
	}
}

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// TemplateFuncNames is the one list of the functions notification
// templates may call besides text/template's builtins (print, printf and
// println are in it because notify/render replaces them with size-bounded
// versions). Config checks templates against these names at load; package
// notify/render implements exactly this set (its tests compare both ways), with
// sprig's names, argument order (the piped value comes last) and meaning,
// and hermetic: no environment, file or network access.
var TemplateFuncNames = []string{
	// strings
	"upper", "lower", "title", "trim", "trimAll", "trimPrefix", "trimSuffix", "trunc", "truncate",
	"abbrev", "substr", "nospace", "replace", "contains", "hasPrefix", "hasSuffix", "repeat",
	"cat", "quote", "squote", "indent", "nindent", "plural", "split", "splitList", "join",
	"toString", "toStrings", "print", "printf", "println",
	// regular expressions (Go RE2 syntax)
	"regexMatch", "regexFind", "regexFindAll", "regexReplaceAll", "regexSplit", "regexQuoteMeta",
	// defaults and flow
	"default", "empty", "coalesce", "ternary", "required", "fail", "orEmpty",
	// lists
	"list", "first", "last", "rest", "initial", "append", "prepend", "concat", "reverse",
	"compact", "without", "has", "uniq", "sortAlpha", "until", "untilStep", "seq",
	// dicts
	"dict", "get", "set", "unset", "hasKey", "keys", "values", "pluck", "pick", "omit", "dig",
	// numbers
	"add", "add1", "sub", "mul", "div", "mod", "max", "min", "atoi", "int", "int64", "float64",
	// encoding
	"toJson", "toPrettyJson", "toRawJson", "fromJson", "toYaml", "b64enc", "b64dec",
	"sha256sum", "urlquery",
	// time
	"now", "date", "dateInZone", "dateRFC3339", "toDate", "unixEpoch", "ago", "duration",
	"durationRound",
	// repository URLs
	"repoURLToHTTPS", "repoFullName",
}

// templateStubs maps every name in TemplateFuncNames to a stub, enough to
// parse; rendering is notify's.
var templateStubs = func() template.FuncMap {
	m := template.FuncMap{}
	for _, n := range TemplateFuncNames {
		m[n] = func(...any) any { return nil }
	}
	return m
}()

// CheckTemplate parses text as a notification template (syntax and
// function names only).
func CheckTemplate(text string) error {
	if text == "" {
		return nil
	}
	if _, err := template.New("t").Option("missingkey=zero").Funcs(templateStubs).Parse(text); err != nil {
		msg := templatePosRE.ReplaceAllString(strings.TrimPrefix(err.Error(), "template: "), "line $1: ")
		return fmt.Errorf("invalid template: %s", msg)
	}
	return nil
}

// templatePosRE finds text/template's "<name>:<line>:" position prefix.
var templatePosRE = regexp.MustCompile(`^t:(\d+): `)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
