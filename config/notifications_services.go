package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Service is one notification destination service; exactly one of its
// blocks is set, and that block is its type.
type Service struct {
	Slack   *SlackService   `yaml:"slack"`
	Webhook *WebhookService `yaml:"webhook"`
	Email   *EmailService   `yaml:"email"`
	// Ext is a service of another type (teams, github, opsgenie, ...:
	// package servicetypes), read from the key of its type.
	Ext *ExtService `yaml:"-"`
	// Unsupported is the type of an argocd-notifications-cm service that
	// crowsnest has no sender for: its deliveries fail visibly (dead
	// letter, log, metric) instead of going nowhere.
	Unsupported string `yaml:"-"`
	// RateLimit paces the messages sent to the service; nil keeps the
	// type's default (DefaultServiceRateLimit).
	RateLimit *ServiceRateLimit `yaml:"rateLimit"`
}

// ServiceRateLimit paces the outbox's sends to one service.
type ServiceRateLimit struct {
	// PerSecond is the sustained rate; 0 sends without pacing (at most
	// the outbox's sends in flight at once).
	PerSecond float64 `yaml:"perSecond"`
	// Burst is how many go out at once before the pace applies; zero is
	// PerSecond rounded up (at least 1).
	Burst int `yaml:"burst"`
}

// DefaultServiceRateLimit is the pace of a service type without a
// rateLimit. Slack allows about one message per second per channel with
// short bursts, and answers more with 429 (which the outbox waits out):
// five per second with a burst of ten keeps a deployment wave near that
// across a few channels. SMTP relays throttle senders, so email gets the
// same. A webhook is the user's own receiver, which answers 429 if it must:
// it is not paced, so a wave of a thousand Applications is announced as
// fast as it happens (the outbox still sends at most 32 at once).
func DefaultServiceRateLimit(typ string) ServiceRateLimit {
	if typ == ServiceWebhook {
		return ServiceRateLimit{}
	}
	return ServiceRateLimit{PerSecond: 5, Burst: 10}
}

// maxServiceBurst bounds a configured burst: a larger one is no pace.
const maxServiceBurst = 10000

// Service types.
const (
	ServiceSlack   = "slack"
	ServiceWebhook = "webhook"
	ServiceEmail   = "email"
)

// Type returns the service's type, or "" when no block is set.
func (s *Service) Type() string {
	switch {
	case s.Slack != nil:
		return ServiceSlack
	case s.Webhook != nil:
		return ServiceWebhook
	case s.Email != nil:
		return ServiceEmail
	case s.Ext != nil:
		return s.Ext.Type
	case s.Unsupported != "":
		return s.Unsupported
	}
	return ""
}

// Settings returns the settings of the service's type block: a
// *SlackService, *WebhookService or *EmailService, or the Ext service's
// settings struct (package servicetypes); nil for an unsupported type or
// no block. A sender's svc.Kind of the type Type returns is built from it.
func (s *Service) Settings() any {
	switch {
	case s.Slack != nil:
		return s.Slack
	case s.Webhook != nil:
		return s.Webhook
	case s.Email != nil:
		return s.Email
	case s.Ext != nil:
		return s.Ext.Settings
	}
	return nil
}

// SlackService posts with a bot token through Slack's Web API.
type SlackService struct {
	Token    SecretRef `yaml:"token"`
	Username string    `yaml:"username"`
	// Icon is an emoji (":crow:") or an image URL.
	Icon string `yaml:"icon"`
	// Channels receive messages of subscriptions that name no channel.
	Channels []string `yaml:"channels"`
	// APIURL replaces https://slack.com/api/ (tests, proxies).
	APIURL             string `yaml:"apiURL"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
	// Timeout bounds one API call (DefaultSlackTimeout when zero).
	Timeout Duration `yaml:"timeout"`
}

// WebhookService sends HTTP requests; templates give path and body.
type WebhookService struct {
	URL string `yaml:"url"`
	// Method defaults to POST (the argocd-notifications format keeps GET).
	Method  string   `yaml:"method"`
	Headers []Header `yaml:"headers"`
	// BasicAuth and Bearer authenticate; at most one.
	BasicAuth *BasicAuth `yaml:"basicAuth"`
	Bearer    SecretRef  `yaml:"bearer"`
	// HMACSecret signs the body with HMAC-SHA256 in HMACHeader.
	HMACSecret         SecretRef `yaml:"hmacSecret"`
	HMACHeader         string    `yaml:"hmacHeader"`
	InsecureSkipVerify bool      `yaml:"insecureSkipVerify"`
	Timeout            Duration  `yaml:"timeout"`
	// SendMessage sends the message as the body of a request with the
	// service's method when a template has no webhook block for this
	// service, as argocd-notifications does (its catalog's templates have
	// none); without it such a notification is skipped. Set for webhook
	// services read from an argocd-notifications-cm.
	SendMessage bool `yaml:"-"`
}

// Header is one HTTP header. `$key` references in Value are replaced by the
// Secret's values (ResolveSecrets), as in argocd-notifications.
type Header struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// BasicAuth is HTTP basic authentication.
type BasicAuth struct {
	Username string    `yaml:"username"`
	Password SecretRef `yaml:"password"`
}

// EmailService sends mail over SMTP.
type EmailService struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// TLS is starttls (default), tls (implicit, port 465) or none.
	TLS                string    `yaml:"tls"`
	Username           string    `yaml:"username"`
	Password           SecretRef `yaml:"password"`
	From               string    `yaml:"from"`
	InsecureSkipVerify bool      `yaml:"insecureSkipVerify"`
	Timeout            Duration  `yaml:"timeout"`
}

// Service defaults: POST is what every webhook receiver expects; ten
// seconds bounds a hanging destination well inside the outbox's retry
// cadence; 587 is the SMTP submission port, where STARTTLS is the norm;
// the signature header follows GitHub's X-Hub-Signature-256 convention.
const (
	DefaultWebhookMethod = "POST"
	DefaultNotifyTimeout = 10 * time.Second
	// DefaultSlackTimeout bounds one Slack API call: chat.postMessage can
	// take seconds when Slack is busy.
	DefaultSlackTimeout       = 15 * time.Second
	DefaultSMTPPort           = 587
	DefaultHMACHeader         = "X-Crowsnest-Signature-256"
	EmailTLSStartTLS          = "starttls"
	EmailTLSImplicit          = "tls"
	EmailTLSNone              = "none"
	implicitTLSPort           = 465
	maxNotifyTimeout          = 5 * time.Minute
	notifyServiceTypesWanted  = "exactly one of slack, webhook or email"
	secretRefWanted           = "want $<key of the notifications Secret>, env:<VAR> or file:<absolute path>"
	secretRefInlineNotAllowed = "a secret itself never goes in this file"
)

var emailTLSModes = []string{EmailTLSStartTLS, EmailTLSImplicit, EmailTLSNone}

func (s *Service) setDefaults() {
	if sl := s.Slack; sl != nil {
		sl.Timeout.orDefault(DefaultSlackTimeout)
	}
	if w := s.Webhook; w != nil {
		if w.Method == "" {
			w.Method = DefaultWebhookMethod
		}
		if w.HMACHeader == "" && !w.HMACSecret.IsZero() {
			w.HMACHeader = DefaultHMACHeader
		}
		w.Timeout.orDefault(DefaultNotifyTimeout)
	}
	if e := s.Email; e != nil {
		if e.Port == 0 {
			e.Port = DefaultSMTPPort
		}
		if e.TLS == "" {
			e.TLS = EmailTLSStartTLS
			if e.Port == implicitTLSPort {
				e.TLS = EmailTLSImplicit
			}
		}
		e.Timeout.orDefault(DefaultNotifyTimeout)
	}
}

// validate checks the service; blocks says the path names the service
// and its type block follows (crowsnest's format), not the block itself
// (the ConfigMap's service.<type>.<name>).
func (s *Service) validate(path string, blocks bool, errs *fieldErrors) {
	block := func(typ string) string {
		if blocks {
			return fieldpath.Join(path, typ)
		}
		return path
	}
	n := 0
	for _, set := range []bool{s.Slack != nil, s.Webhook != nil, s.Email != nil, s.Ext != nil, s.Unsupported != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs.invalid(path, "%s, got %d", notifyServiceTypesWanted, n)
		return
	}
	if rl := s.RateLimit; rl != nil {
		rl.validate(fieldpath.Join(path, "rateLimit"), errs)
	}
	switch {
	case s.Ext != nil:
		s.Ext.validate(block(s.Ext.Type), errs)
	case s.Slack != nil:
		s.Slack.validate(block(ServiceSlack), errs)
	case s.Webhook != nil:
		s.Webhook.validate(block(ServiceWebhook), errs)
	case s.Email != nil:
		s.Email.validate(block(ServiceEmail), errs)
	}
}

func (rl *ServiceRateLimit) validate(p string, errs *fieldErrors) {
	if rl.PerSecond < 0 || math.IsNaN(rl.PerSecond) || math.IsInf(rl.PerSecond, 0) {
		errs.invalid(fieldpath.Join(p, "perSecond"), "must be 0 (no pacing) or a positive number of messages per second, got %v", rl.PerSecond)
	}
	if rl.Burst < 0 || rl.Burst > maxServiceBurst {
		errs.invalid(fieldpath.Join(p, "burst"), "must be between 0 (the rate, rounded up) and %d, got %d", maxServiceBurst, rl.Burst)
	}
}

func (sl *SlackService) validate(p string, errs *fieldErrors) {
	if sl.Token.IsZero() {
		errs.invalid(fieldpath.Join(p, "token"), "required: a bot token reference; %s", secretRefWanted)
	}
	if err := checkServiceURL(sl.APIURL, true); err != nil {
		errs.invalid(fieldpath.Join(p, "apiURL"), "%v", err)
	}
	checkTimeout(fieldpath.Join(p, "timeout"), sl.Timeout, errs)
}

func (w *WebhookService) validate(p string, errs *fieldErrors) {
	if w.URL == "" {
		errs.invalid(fieldpath.Join(p, "url"), "required")
	} else if err := checkServiceURL(w.URL, false); err != nil {
		errs.invalid(fieldpath.Join(p, "url"), "%v", err)
	}
	if !slices.Contains(httpMethods, strings.ToUpper(w.Method)) {
		errs.invalid(fieldpath.Join(p, "method"), "unsupported method %q, want one of %s", w.Method, strings.Join(httpMethods, ", "))
	}
	for i, h := range w.Headers {
		if !headerNameRE.MatchString(h.Name) {
			errs.invalid(fieldpath.Join(fieldpath.Index(fieldpath.Join(p, "headers"), i), "name"), "invalid header name %q", h.Name)
		}
	}
	if w.BasicAuth != nil && !w.Bearer.IsZero() {
		errs.invalid(fieldpath.Join(p, "bearer"), "set basicAuth or bearer, not both")
	}
	if w.BasicAuth != nil && w.BasicAuth.Username == "" {
		errs.invalid(fieldpath.Join(p, "basicAuth.username"), "required")
	}
	if w.HMACHeader != "" && !headerNameRE.MatchString(w.HMACHeader) {
		errs.invalid(fieldpath.Join(p, "hmacHeader"), "invalid header name %q", w.HMACHeader)
	}
	checkTimeout(fieldpath.Join(p, "timeout"), w.Timeout, errs)
}

func (e *EmailService) validate(p string, errs *fieldErrors) {
	if e.Host == "" || !hostRE.MatchString(e.Host) {
		errs.invalid(fieldpath.Join(p, "host"), "required: an SMTP host name, got %q", e.Host)
	}
	if e.Port < 1 || e.Port > 65535 {
		errs.invalid(fieldpath.Join(p, "port"), "must be between 1 and 65535, got %d", e.Port)
	}
	if !slices.Contains(emailTLSModes, e.TLS) {
		errs.invalid(fieldpath.Join(p, "tls"), "unsupported value %q, want one of %s", e.TLS, strings.Join(emailTLSModes, ", "))
	}
	if e.From == "" || !strings.Contains(e.From, "@") {
		errs.invalid(fieldpath.Join(p, "from"), "required: a sender address, got %q", e.From)
	}
	if !e.Password.IsZero() && e.Username == "" {
		errs.invalid(fieldpath.Join(p, "username"), "required with a password")
	}
	checkTimeout(fieldpath.Join(p, "timeout"), e.Timeout, errs)
}

var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func checkTimeout(path string, d Duration, errs *fieldErrors) {
	if d.Duration <= 0 || d.Duration > maxNotifyTimeout {
		errs.invalid(path, "must be between 1ns and %s, got %s", maxNotifyTimeout, d)
	}
}

// checkServiceURL accepts an http(s) URL without credentials; errors print
// it redacted. Empty is fine when optional.
func checkServiceURL(s string, optional bool) error {
	if s == "" && optional {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("invalid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http:// or https:// URL, got %q", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("no host in %q", u.Redacted())
	}
	return nil
}

// SecretRef says where a secret is: a key of the notifications Secret
// ("$slack-token"), an environment variable ("env:SLACK_TOKEN") or a file
// ("file:/var/run/secrets/slack"). A value read from an
// argocd-notifications-cm (which may hold secrets inline) or resolved from
// the Secret is held but never printed: String and MarshalYAML show only
// the reference.
type SecretRef struct {
	Key  string
	Env  string
	File string

	value    string
	resolved bool
}

// ErrSecretUnresolved is returned by Value for a "$key" reference that
// ResolveSecrets has not filled.
var ErrSecretUnresolved = errors.New("secret reference not resolved")

// ParseSecretRef reads a secret reference. Errors never repeat the input:
// it may be a pasted secret.
func ParseSecretRef(s string) (SecretRef, error) {
	switch {
	case strings.HasPrefix(s, "$"):
		k := s[1:]
		if !secretKeyRE.MatchString(k) {
			return SecretRef{}, errors.New("invalid Secret key after $: letters, digits, '-', '_' or '.'")
		}
		return SecretRef{Key: k}, nil
	case strings.HasPrefix(s, "env:"):
		if !envNameRE.MatchString(s[4:]) {
			return SecretRef{}, errors.New("env: " + envNameWanted)
		}
		return SecretRef{Env: s[4:]}, nil
	case strings.HasPrefix(s, "file:"):
		if !filepath.IsAbs(s[5:]) {
			return SecretRef{}, fmt.Errorf("file: want an absolute path, got %q", s[5:])
		}
		return SecretRef{File: s[5:]}, nil
	}
	return SecretRef{}, fmt.Errorf("%s; %s", secretRefWanted, secretRefInlineNotAllowed)
}

var secretKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// InlineSecret holds a secret value read from a source that may hold one
// (an argocd-notifications-cm after `$key` substitution).
func InlineSecret(v string) SecretRef { return SecretRef{value: v, resolved: true} }

// IsZero reports whether no secret is configured.
func (r SecretRef) IsZero() bool { return r == SecretRef{} }

// String writes the reference, never the value.
func (r SecretRef) String() string {
	switch {
	case r.Key != "":
		return "$" + r.Key
	case r.Env != "":
		return "env:" + r.Env
	case r.File != "":
		return "file:" + r.File
	case r.resolved:
		return "<inline>"
	}
	return ""
}

// Equal compares references and held values; go-cmp uses it, so configs
// holding secrets can be diffed in tests.
func (r SecretRef) Equal(o SecretRef) bool { return r == o }

// GoString keeps %#v from printing the value.
func (r SecretRef) GoString() string { return "config.SecretRef(" + r.String() + ")" }

// MarshalYAML writes the reference, never the value.
func (r SecretRef) MarshalYAML() (any, error) { return r.String(), nil }

// Value returns the secret: the resolved value, or the environment
// variable or file read now (so a rotated file is picked up).
func (r SecretRef) Value() (string, error) {
	switch {
	case r.resolved:
		return r.value, nil
	case r.Env != "":
		v, ok := os.LookupEnv(r.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("environment variable %s is empty or not set", r.Env)
		}
		return v, nil
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			return "", fmt.Errorf("reading secret: %w", err)
		}
		if b = bytes.TrimRight(b, "\r\n"); len(b) == 0 {
			return "", fmt.Errorf("secret file %s is empty", r.File)
		}
		return string(b), nil
	case r.Key != "":
		return "", fmt.Errorf("$%s: %w", r.Key, ErrSecretUnresolved)
	}
	return "", nil
}

func (r *SecretRef) decodeNode(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("expected a secret reference string, got %s", describeRedacted(n))
	}
	ref, err := ParseSecretRef(n.Value)
	if err != nil {
		return err
	}
	*r = ref
	return nil
}

// resolve fills a "$key" reference from the Secret's data.
func (r *SecretRef) resolve(secret map[string][]byte) error {
	if r.Key == "" || r.resolved {
		return nil
	}
	v, ok := secret[r.Key]
	if !ok {
		return fmt.Errorf("key %q not found in the notifications Secret", r.Key)
	}
	r.value, r.resolved = string(v), true
	return nil
}

// secretTokenRE finds argocd-notifications' `$key` references in text.
var secretTokenRE = regexp.MustCompile(`\$[A-Za-z0-9_.-]+`)

// expandSecrets replaces each `$key` naming a key of secret by its value
// and leaves other `$` text alone, as argocd-notifications does.
func expandSecrets(s string, secret map[string][]byte) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return secretTokenRE.ReplaceAllStringFunc(s, func(tok string) string {
		if v, ok := secret[tok[1:]]; ok {
			return string(v)
		}
		return tok
	})
}

// ResolveSecrets fills every "$key" reference of the services from the
// notifications Secret's data and expands `$key` in header values. Call it
// after loading, with the Secret ArgoCDConfigMap names. Errors name the
// field, never a value.
func (n *Notifications) ResolveSecrets(secret map[string][]byte) error {
	var errs []error
	for _, name := range sortedKeys(n.Services) {
		s := n.Services[name]
		p := "services[" + name + "]"
		for _, f := range s.SecretFields() {
			if err := f.Ref.resolve(secret); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", p, f.Name, err))
			}
		}
		if w := s.Webhook; w != nil {
			for i := range w.Headers {
				w.Headers[i].Value = expandSecrets(w.Headers[i].Value, secret)
			}
		}
		if s.Ext != nil {
			s.Ext = s.Ext.Clone()
			s.Ext.resolveSecrets(secret)
		}
		n.Services[name] = s
	}
	return errors.Join(errs...)
}

// SecretField is one secret reference of a service's settings, by its
// path below the service ("slack.token", "webhook.basicAuth.password").
type SecretField struct {
	Name string
	Ref  *SecretRef
}

// SecretFields are the secret references of the service's settings
// (Slack, webhook and email; an Ext service's strings expand `$key`
// instead). ResolveSecrets fills them; `notify template render` stands in
// for those it cannot read.
func (s *Service) SecretFields() []SecretField {
	switch {
	case s.Slack != nil:
		return []SecretField{{"slack.token", &s.Slack.Token}}
	case s.Webhook != nil:
		out := []SecretField{{"webhook.bearer", &s.Webhook.Bearer}, {"webhook.hmacSecret", &s.Webhook.HMACSecret}}
		if s.Webhook.BasicAuth != nil {
			out = append(out, SecretField{"webhook.basicAuth.password", &s.Webhook.BasicAuth.Password})
		}
		return out
	case s.Email != nil:
		return []SecretField{{"email.password", &s.Email.Password}}
	}
	return nil
}
