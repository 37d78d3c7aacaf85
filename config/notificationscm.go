package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// argocd-notifications-cm service blocks, with their key names. Keys they
// do not list are recorded in Notifications.Ignored rather than failing
// the load: Argo CD ignores them too, and the ConfigMap is read unchanged.
type (
	cmSlack struct {
		Token              string `yaml:"token"`
		Username           string `yaml:"username"`
		Icon               string `yaml:"icon"`
		APIURL             string `yaml:"apiURL"`
		InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
		SigningSecret      string `yaml:"signingSecret"`
		DisableUnfurl      bool   `yaml:"disableUnfurl"`
	}
	cmWebhook struct {
		URL       string   `yaml:"url"`
		Headers   []Header `yaml:"headers"`
		BasicAuth *struct {
			Username string `yaml:"username"`
			Password string `yaml:"password"`
		} `yaml:"basicAuth"`
		InsecureSkipVerify bool     `yaml:"insecureSkipVerify"`
		RetryWaitMin       Duration `yaml:"retryWaitMin"`
		RetryWaitMax       Duration `yaml:"retryWaitMax"`
		RetryMax           int      `yaml:"retryMax"`
	}
	cmEmail struct {
		Host               string `yaml:"host"`
		Port               int    `yaml:"port"`
		From               string `yaml:"from"`
		Username           string `yaml:"username"`
		Password           string `yaml:"password"`
		HTML               bool   `yaml:"html"`
		InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	}
)

// cmWebhookMethod is argocd-notifications' webhook default, kept so a
// ConfigMap means what it meant under Argo CD.
const cmWebhookMethod = "GET"

// ParseArgoCDConfigMap reads the data of an argocd-notifications-cm,
// unchanged: trigger.<name>, template.<name>, service.<type>[.<name>],
// subscriptions, defaultTriggers, defaultTriggers.<service> and context.
// `$key` references in service blocks are replaced by the values of
// secret (the argocd-notifications-secret's data). Services and template
// blocks crowsnest has no sender for, and unknown keys, are listed in
// Ignored. The error is a *ValidationError whose paths name the data key
// ("trigger.on-x[1].when"), wrapped with "argocd-notifications-cm: "; with
// it, the Notifications returned hold what decoded.
func ParseArgoCDConfigMap(data map[string]string, secret map[string][]byte) (*Notifications, error) {
	n := &Notifications{}
	errs := &fieldErrors{lines: map[string]int{}}
	serviceKeys := map[string]string{} // service name -> data key
	for _, key := range sortedKeys(data) {
		val := data[key]
		kind, name, _ := strings.Cut(key, ".")
		switch {
		case kind == "trigger" && name != "":
			var conds []Condition
			decodeCMValue(val, &conds, key, n, errs)
			n.Triggers = setEntry(n.Triggers, name, conds)
		case kind == "template" && name != "":
			var t Template
			decodeCMValue(val, &t, key, n, errs)
			n.Templates = setEntry(n.Templates, name, t)
		case kind == "service" && name != "":
			typ, svcName, named := strings.Cut(name, ".")
			if !named {
				svcName = typ
			}
			if prev, dup := serviceKeys[svcName]; dup {
				errs.add(key, 0, "duplicate service name %q (also %s)", svcName, prev)
				continue
			}
			node, err := expandSecretNodes(val, secret)
			if err != nil {
				errs.add(key, 0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
				continue
			}
			svc := decodeCMService(typ, node, key, n, errs)
			serviceKeys[svcName] = key
			n.Services = setEntry(n.Services, svcName, svc)
		case key == "subscriptions":
			decodeCMValue(val, &n.Subscriptions, key, n, errs)
		case key == "defaultTriggers":
			decodeCMValue(val, &n.DefaultTriggers, key, n, errs)
		case kind == "defaultTriggers" && name != "":
			var list []string
			decodeCMValue(val, &list, key, n, errs)
			n.ServiceDefaultTriggers = setEntry(n.ServiceDefaultTriggers, name, list)
		case key == "context":
			decodeCMValue(val, &n.Context, key, n, errs)
		default:
			n.Ignored = append(n.Ignored, key+" (unknown key)")
		}
	}
	decodeErrs := len(errs.list)
	n.setDefaults()
	n.validateWith(notifyPaths{
		trigger:         func(name string) string { return "trigger." + name },
		template:        func(name string) string { return "template." + name },
		service:         func(name string) string { return serviceKeys[name] },
		defaultTriggers: func(svc string) string { return "defaultTriggers." + svc },
		subscriptions:   "subscriptions",
	}, errs)
	errs.dropAfterDecode(decodeErrs)
	for i := range errs.list {
		errs.list[i].Line = 0 // lines count inside one data value, not the ConfigMap
		redactSecrets(&errs.list[i], data, secret)
	}
	if err := errs.err(); err != nil {
		// n holds what decoded, for callers that report every problem.
		return n, fmt.Errorf("%s: %w", DefaultArgoCDNotificationsConfigMap, err)
	}
	return n, nil
}

func setEntry[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// decodeCMValue decodes one data value strictly, except that unknown keys
// are recorded in n.Ignored (Argo CD ignores them).
func decodeCMValue(val string, out any, path string, n *Notifications, errs *fieldErrors) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &doc); err != nil {
		errs.add(path, 0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	decodeCMNode(doc.Content[0], out, path, n, errs)
}

func decodeCMNode(node *yaml.Node, out any, path string, n *Notifications, errs *fieldErrors) {
	sub := &fieldErrors{lines: map[string]int{}}
	newDecoder(sub, true).Decode(node, reflect.ValueOf(out).Elem(), path)
	for _, e := range sub.list {
		if strings.HasPrefix(e.Msg, "unknown field") {
			n.Ignored = append(n.Ignored, e.Path+" (not used by crowsnest)")
			continue
		}
		if strings.HasSuffix(e.Msg, unsupportedType) {
			n.Unsupported = append(n.Unsupported, e.Path+" ("+e.Msg+")")
			continue
		}
		errs.list = append(errs.list, e)
	}
}

// redactSecrets replaces, in an error about a service block, the values
// its `$key` references read from the Secret by the references: a value
// that fails validation ("invalid header name ...") is still a secret.
func redactSecrets(e *FieldError, data map[string]string, secret map[string][]byte) {
	key := ""
	for k := range data {
		if strings.HasPrefix(k, "service.") && len(k) > len(key) &&
			(e.Path == k || strings.HasPrefix(e.Path, k+".") || strings.HasPrefix(e.Path, k+"[")) {
			key = k
		}
	}
	if key == "" {
		return
	}
	refs := secretTokenRE.FindAllString(data[key], -1)
	// Longest values first, so one that contains another is replaced whole.
	slices.SortFunc(refs, func(a, b string) int { return len(secret[b[1:]]) - len(secret[a[1:]]) })
	for _, ref := range refs {
		v := string(secret[ref[1:]])
		if v == "" {
			continue
		}
		quoted := strconv.Quote(v)
		e.Msg = strings.ReplaceAll(e.Msg, quoted[1:len(quoted)-1], ref)
		e.Msg = strings.ReplaceAll(e.Msg, v, ref)
	}
}

// expandSecretNodes parses a service block and replaces `$key` references
// in its string values.
func expandSecretNodes(val string, secret map[string][]byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, nil
	}
	var walk func(*yaml.Node)
	walk = func(x *yaml.Node) {
		if x.Kind == yaml.ScalarNode && x.Tag == "!!str" {
			x.Value = expandSecrets(x.Value, secret)
		}
		for _, c := range x.Content {
			walk(c)
		}
	}
	walk(doc.Content[0])
	return doc.Content[0], nil
}

func decodeCMService(typ string, node *yaml.Node, key string, n *Notifications, errs *fieldErrors) Service {
	switch typ {
	case ServiceSlack:
		var c cmSlack
		decodeCMNode(node, &c, key, n, errs)
		return Service{Slack: &SlackService{
			Token: secretOrZero(c.Token), Username: c.Username, Icon: c.Icon,
			APIURL: c.APIURL, InsecureSkipVerify: c.InsecureSkipVerify,
		}}
	case ServiceWebhook:
		var c cmWebhook
		decodeCMNode(node, &c, key, n, errs)
		w := &WebhookService{URL: c.URL, Method: cmWebhookMethod, Headers: c.Headers, InsecureSkipVerify: c.InsecureSkipVerify, SendMessage: true}
		if c.BasicAuth != nil {
			w.BasicAuth = &BasicAuth{Username: c.BasicAuth.Username, Password: secretOrZero(c.BasicAuth.Password)}
		}
		return Service{Webhook: w}
	case ServiceEmail:
		var c cmEmail
		decodeCMNode(node, &c, key, n, errs)
		return Service{Email: &EmailService{
			Host: c.Host, Port: c.Port, Username: c.Username, Password: secretOrZero(c.Password),
			From: c.From, InsecureSkipVerify: c.InsecureSkipVerify,
		}}
	}
	if k, ok := servicetypes.Lookup(typ); ok {
		st := k.Settings()
		decodeCMNode(node, st, key, n, errs)
		return Service{Ext: &ExtService{Type: typ, Settings: st}}
	}
	n.Unsupported = append(n.Unsupported, key+" ("+unsupportedType+")")
	return Service{Unsupported: typ}
}

func secretOrZero(v string) SecretRef {
	if v == "" {
		return SecretRef{}
	}
	return InlineSecret(v)
}

// Merge adds other's triggers, templates, services and context under n's
// (n wins on the same name), appends its subscriptions and takes its
// default triggers where n has none. crowsnest's config merges an
// argocd-notifications-cm this way, so the file can override an entry.
func (n *Notifications) Merge(other *Notifications) {
	n.Triggers = mergeMap(n.Triggers, other.Triggers)
	n.Templates = mergeMap(n.Templates, other.Templates)
	n.Services = mergeMap(n.Services, other.Services)
	n.ServiceDefaultTriggers = mergeMap(n.ServiceDefaultTriggers, other.ServiceDefaultTriggers)
	n.Context = mergeMap(n.Context, other.Context)
	n.Subscriptions = append(slices.Clone(n.Subscriptions), other.Subscriptions...)
	if len(n.DefaultTriggers) == 0 {
		n.DefaultTriggers = slices.Clone(other.DefaultTriggers)
	}
	n.Ignored = append(n.Ignored, other.Ignored...)
	n.Unsupported = append(n.Unsupported, other.Unsupported...)
}

// mergeMap returns a new map of src's entries under dst's.
func mergeMap[V any](dst, src map[string]V) map[string]V {
	if len(src) == 0 {
		return dst
	}
	out := make(map[string]V, len(dst)+len(src))
	maps.Copy(out, src)
	maps.Copy(out, dst)
	return out
}
