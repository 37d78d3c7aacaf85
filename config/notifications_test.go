package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const notificationsDoc = header + `notifications:
  catalog: true
  baseline: false
  context:
    argocdUrl: https://argocd.example.com
  triggers:
    on-x:
      - when: app.status.health.status == 'Degraded'
        send: [t]
  templates:
    t:
      message: "{{.app.metadata.name}} {{ .app.status.sync.revision | trunc 7 }}"
      webhook:
        hooks: {path: "/x/{{.app.metadata.name}}", body: "{}"}
  services:
    slack:
      slack: {token: $slack-token, username: crowsnest, channels: [deploys]}
    hooks:
      webhook:
        url: https://hooks.example.com/in
        headers: [{name: X-Token, value: $hook-token}]
        hmacSecret: env:HOOK_HMAC
    mail:
      email: {host: smtp.example.com, port: 465, username: bot, password: file:/etc/smtp/password, from: bot@example.com}
  subscriptions:
    - recipients: [slack:deploys, hooks]
      triggers: [on-x]
      selector: team=payments
  defaultTriggers: [on-x]
  serviceDefaultTriggers:
    mail: [on-x]
  argocdConfigMap: {name: argocd-notifications-cm, namespace: argocd}
`

func TestNotificationsSection(t *testing.T) {
	c, err := Parse([]byte(notificationsDoc))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Notifications
	if !n.Catalog || n.BaselineEnabled() || !n.Enabled() {
		t.Errorf("catalog %v, baseline %v, enabled %v; want true, false, true", n.Catalog, n.BaselineEnabled(), n.Enabled())
	}
	got := struct {
		Method, HMACHeader, TLS, Secret string
		Timeout                         string
		Port                            int
	}{
		n.Services["hooks"].Webhook.Method, n.Services["hooks"].Webhook.HMACHeader, n.Services["mail"].Email.TLS,
		n.ArgoCDConfigMap.Secret, n.Services["hooks"].Webhook.Timeout.String(), n.Services["mail"].Email.Port,
	}
	want := got
	want.Method, want.HMACHeader, want.TLS, want.Secret, want.Timeout, want.Port = "POST", DefaultHMACHeader, EmailTLSImplicit, DefaultArgoCDNotificationsSecret, "10s", 465
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := n.ResolveSecrets(map[string][]byte{"slack-token": []byte("xoxb-1"), "hook-token": []byte("s3cret")}); err != nil {
		t.Fatal(err)
	}
	if v, err := n.Services["slack"].Slack.Token.Value(); err != nil || v != "xoxb-1" {
		t.Errorf("slack token %q, %v", v, err)
	}
	if h := n.Services["hooks"].Webhook.Headers[0].Value; h != "s3cret" {
		t.Errorf("header value %q, want the expanded secret", h)
	}
	if s := fmt.Sprintf("%v %+v %#v", n.Services["slack"].Slack.Token, *n.Services["slack"].Slack, n.Services["slack"].Slack.Token); strings.Contains(s, "xoxb") {
		t.Errorf("formatting printed the secret: %s", s)
	}
	fresh := Notifications{Services: map[string]Service{"s": {Slack: &SlackService{Token: SecretRef{Key: "nope"}}}}}
	if err := fresh.ResolveSecrets(nil); err == nil || !strings.Contains(err.Error(), `services[s].slack.token: key "nope" not found`) {
		t.Errorf("ResolveSecrets error %v, want one naming the field", err)
	}
}

func TestNotificationsErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []FieldError
	}{
		{name: "missing when", doc: "triggers:\n    on-x:\n      - send: [t]\n      - {when: 'true'}\n",
			want: []FieldError{
				{Path: "notifications.triggers[on-x][0].when", Line: 6, Msg: "required"},
				{Path: "notifications.triggers[on-x][1].send", Line: 7, Msg: "required"},
			}},
		{name: "bad template", doc: "templates:\n    t: {message: '{{.app.metadata.name'}\n",
			want: []FieldError{{Path: "notifications.templates[t].message", Line: 5, Msg: "invalid template"}}},
		{name: "unknown template function", doc: "templates:\n    t: {email: {subject: '{{ env \"HOME\" }}'}}\n",
			want: []FieldError{{Path: "notifications.templates[t].email.subject", Line: 5, Msg: `function "env" not defined`}}},
		{name: "inline secret", doc: "services:\n    s: {slack: {token: xoxb-123}}\n",
			want: []FieldError{{Path: "notifications.services[s].slack.token", Line: 5, Msg: "a secret itself never goes in this file"}}},
		{name: "two service types", doc: "services:\n    s: {slack: {token: $t}, email: {host: h, from: a@b}}\n",
			want: []FieldError{{Path: "notifications.services[s]", Line: 5, Msg: "exactly one of slack, webhook or email, got 2"}}},
		{name: "webhook problems", doc: "services:\n    w: {webhook: {url: 'ftp://user:pw@x', method: BREW, bearer: $b, basicAuth: {username: u}}}\n",
			want: []FieldError{
				{Path: "notifications.services[w].webhook.url", Line: 5, Msg: `want an http:// or https:// URL, got "ftp://user:xxxxx@x"`},
				{Path: "notifications.services[w].webhook.method", Line: 5, Msg: `unsupported method "BREW"`},
				{Path: "notifications.services[w].webhook.bearer", Line: 5, Msg: "set basicAuth or bearer, not both"},
			}},
		{name: "rate limit", doc: "services:\n    w: {webhook: {url: 'http://x'}, rateLimit: {perSecond: -1, burst: 100000}}\n",
			want: []FieldError{
				{Path: "notifications.services[w].rateLimit.perSecond", Line: 5, Msg: "must be 0 (no pacing) or a positive number"},
				{Path: "notifications.services[w].rateLimit.burst", Line: 5, Msg: "must be between 0 (the rate, rounded up) and 10000, got 100000"},
			}},
		{name: "email tls", doc: "services:\n    m: {email: {host: smtp.example.com, tls: ssl, from: a@b.c}}\n",
			want: []FieldError{{Path: "notifications.services[m].email.tls", Line: 5, Msg: `unsupported value "ssl"`}}},
		{name: "subscription", doc: "subscriptions:\n    - {recipients: [], selector: 'a in (b'}\n",
			want: []FieldError{
				{Path: "notifications.subscriptions[0].recipients", Line: 5, Msg: "required"},
				{Path: "notifications.subscriptions[0].selector", Line: 5, Msg: "invalid label selector"},
			}},
		{name: "slack delivery policy", doc: "templates:\n    t: {slack: {deliveryPolicy: Replace}}\n",
			want: []FieldError{{Path: "notifications.templates[t].slack.deliveryPolicy", Line: 5, Msg: `unsupported value "Replace"`}}},
		{name: "unknown key", doc: "templates_: {}\n",
			want: []FieldError{{Path: "notifications.templates_", Line: 4, Msg: `did you mean "templates"?`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(header + "notifications:\n  " + tt.doc))
			if err == nil {
				t.Fatal("Parse succeeded, want errors")
			}
			got := gotFieldErrors(t, err, tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

// TestCheckTemplateFunctions: load accepts exactly the functions notify
// renders (notify's TestFuncNamesMatchFuncMap keeps the lists equal), and
// an unknown one fails the load naming it.
func TestCheckTemplateFunctions(t *testing.T) {
	tests := []struct {
		text    string
		wantErr string
	}{
		{text: "{{.app.spec.source.repoURL | repoURLToHTTPS}}/commit/{{.app.status.sync.revision | truncate 7}}"},
		{text: `{{repoFullName .app.spec.source.repoURL}} {{dateRFC3339 .app.metadata.creationTimestamp}} {{orEmpty .x}}`},
		{text: `{{if regexMatch "^v[0-9]+" .tag}}{{splitList "/" .repo | last}}{{end}} {{toYaml (dict "a" (until 3))}}`},
		{text: `{{ shuffle "abc" }}`, wantErr: `invalid template: line 1: function "shuffle" not defined`},
		{text: "ok\n{{ env \"HOME\" }}", wantErr: `invalid template: line 2: function "env" not defined`},
		{text: `{{ expandenv "$HOME" }}`, wantErr: `function "expandenv" not defined`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			err := CheckTemplate(tt.text)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckTemplate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	doc := header + "notifications:\n  templates:\n    t: {message: '{{.app.spec.source.repoURL | repoURLToHTTPS}}', webhook: {h: {body: '{{ readFile \"/etc/passwd\" }}'}}}\n"
	_, err := Parse([]byte(doc))
	want := []FieldError{{Path: "notifications.templates[t].webhook.h.body", Line: 5, Msg: `function "readFile" not defined`}}
	if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
	}
}

func TestSecretRef(t *testing.T) {
	t.Setenv("CROWSNEST_TEST_SECRET", "from-env")
	file := t.TempDir() + "/s"
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "env:CROWSNEST_TEST_SECRET", want: "from-env"},
		{in: "file:" + file, want: "from-file"},
		{in: "$key", wantErr: "not resolved"},
		{in: "env:1BAD", wantErr: "invalid variable name"},
		{in: "file:relative", wantErr: "absolute path"},
		{in: "hunter2", wantErr: "never goes in this file"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ref, err := ParseSecretRef(tt.in)
			var v string
			if err == nil {
				if ref.String() != tt.in {
					t.Errorf("String() = %q, want %q", ref.String(), tt.in)
				}
				v, err = ref.Value()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %v, want %q without the input", err, tt.wantErr)
				}
				return
			}
			if err != nil || v != tt.want {
				t.Errorf("Value() = %q, %v; want %q", v, err, tt.want)
			}
		})
	}
}

// readConfigMapData reads the data of a ConfigMap manifest.
func readConfigMapData(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

var cmSecret = map[string][]byte{
	"slack-token": []byte("xoxb-secret"), "github-token": []byte("ghp-secret"), "audit-password": []byte("pw-secret"),
	"email-username": []byte("bot@example.com"), "email-password": []byte("mail-secret"),
}

func TestArgoCDConfigMap(t *testing.T) {
	n, err := ParseArgoCDConfigMap(readConfigMapData(t, "testdata/argocd-notifications-cm.yaml"), cmSecret)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Triggers, Templates, Services []string
		Types                         map[string]string
		Context                       map[string]string
		Defaults                      []string
		SlackDefaults                 []string
		Subscriptions                 []Subscription
		GitHubHeader, EmailFrom       string
		EmailTLS, GitHubMethod        string
		Ignored, Unsupported          []string
	}
	got := summary{
		Triggers: sortedKeys(n.Triggers), Templates: sortedKeys(n.Templates), Services: sortedKeys(n.Services),
		Types: map[string]string{}, Context: n.Context, Defaults: n.DefaultTriggers, SlackDefaults: n.ServiceDefaultTriggers["slack"],
		Subscriptions: n.Subscriptions, GitHubHeader: n.Services["github"].Webhook.Headers[0].Value,
		EmailFrom: n.Services["gmail"].Email.From, EmailTLS: n.Services["gmail"].Email.TLS,
		GitHubMethod: n.Services["github"].Webhook.Method, Ignored: n.Ignored, Unsupported: n.Unsupported,
	}
	for name, s := range n.Services {
		got.Types[name] = s.Type()
	}
	want := summary{
		Triggers:      []string{"on-deployed", "on-sync-failed", "on-sync-status-unknown"},
		Templates:     []string{"app-deployed", "app-sync-failed", "app-sync-status-unknown", "github-commit-status"},
		Services:      []string{"audit", "carrierpigeon", "github", "gmail", "slack"},
		Types:         map[string]string{"audit": "webhook", "carrierpigeon": "carrierpigeon", "github": "webhook", "gmail": "email", "slack": "slack"},
		Context:       map[string]string{"argocdUrl": "https://argocd.example.com", "environment": "production"},
		Defaults:      []string{"on-sync-status-unknown"},
		SlackDefaults: []string{"on-deployed", "on-sync-failed"},
		Subscriptions: []Subscription{
			{Recipients: []string{"slack:deploys", "email:ops@example.com"}, Triggers: []string{"on-sync-status-unknown"}, Selector: "team=payments"},
			{Recipients: []string{"github"}},
		},
		GitHubHeader: "token ghp-secret", EmailFrom: "bot@example.com", EmailTLS: EmailTLSImplicit, GitHubMethod: "GET",
		// An unknown service type is reported; an unknown template block is
		// ignored, as Argo CD ignores it.
		Unsupported: []string{"service.carrierpigeon (service type not supported by crowsnest)"},
		Ignored:     []string{"template.app-deployed.carrierpigeon (not used by crowsnest)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConfigMap model (-want +got):\n%s", diff)
	}
	for _, f := range []struct {
		name string
		ref  SecretRef
		want string
	}{
		{"slack token", n.Services["slack"].Slack.Token, "xoxb-secret"},
		{"audit password", n.Services["audit"].Webhook.BasicAuth.Password, "pw-secret"},
		{"email password", n.Services["gmail"].Email.Password, "mail-secret"},
	} {
		if v, err := f.ref.Value(); err != nil || v != f.want {
			t.Errorf("%s = %q, %v; want %q", f.name, v, err, f.want)
		}
		if strings.Contains(f.ref.String(), "secret") {
			t.Errorf("%s prints its value: %s", f.name, f.ref)
		}
	}
}

func TestArgoCDConfigMapErrors(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want []FieldError
	}{
		{name: "condition without when", data: map[string]string{"trigger.on-x": "- send: [a]\n- when: 'true'\n  send: [a]\n  sned: [b]\n"},
			want: []FieldError{{Path: "trigger.on-x[0].when", Msg: "required"}}},
		{name: "trigger not a list", data: map[string]string{"trigger.on-x": "when: true"},
			want: []FieldError{{Path: "trigger.on-x", Msg: "expected a list, got a mapping"}}},
		{name: "broken YAML", data: map[string]string{"template.t": "message: [", "service.slack": "token: ["},
			want: []FieldError{{Path: "service.slack", Msg: "not valid YAML"}, {Path: "template.t", Msg: "not valid YAML"}}},
		{name: "broken template", data: map[string]string{"template.t": "message: '{{if}}'"},
			want: []FieldError{{Path: "template.t.message", Msg: "missing value for if"}}},
		{name: "duplicate service name", data: map[string]string{"service.slack": "token: x", "service.webhook.slack": "url: https://x"},
			want: []FieldError{{Path: "service.webhook.slack", Msg: `duplicate service name "slack" (also service.slack)`}}},
		{name: "service problems", data: map[string]string{"service.email.m": "host: smtp.example.com\nport: 99999\nfrom: nobody"},
			want: []FieldError{
				{Path: "service.email.m.port", Msg: "must be between 1 and 65535"},
				{Path: "service.email.m.from", Msg: "required: a sender address"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseArgoCDConfigMap(tt.data, nil)
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.HasPrefix(err.Error(), "argocd-notifications-cm: ") {
				t.Errorf("error %q does not name the ConfigMap", err)
			}
			got := gotFieldErrors(t, err, tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

func TestMergeKeepsOwnEntries(t *testing.T) {
	own := &Notifications{
		Triggers:  map[string][]Condition{"on-x": {{When: "own", Send: []string{"t"}}}},
		Templates: map[string]Template{"t": {Message: "own"}},
		Context:   map[string]string{"a": "own"},
	}
	cm := &Notifications{
		Triggers:        map[string][]Condition{"on-x": {{When: "cm"}}, "on-y": {{When: "cm"}}},
		Templates:       map[string]Template{"t": {Message: "cm"}},
		Context:         map[string]string{"a": "cm", "b": "cm"},
		DefaultTriggers: []string{"on-y"},
		Subscriptions:   []Subscription{{Recipients: []string{"slack:x"}}},
	}
	own.Merge(cm)
	got := []string{own.Triggers["on-x"][0].When, own.Triggers["on-y"][0].When, own.Templates["t"].Message, own.Context["a"], own.Context["b"], own.DefaultTriggers[0]}
	if diff := cmp.Diff([]string{"own", "cm", "own", "own", "cm", "on-y"}, got); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if len(own.Subscriptions) != 1 {
		t.Errorf("subscriptions %v, want the ConfigMap's appended", own.Subscriptions)
	}
}

func FuzzArgoCDConfigMap(f *testing.F) {
	data, err := os.ReadFile("testdata/argocd-notifications-cm.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		f.Fatal(err)
	}
	for k, v := range cm.Data {
		f.Add(k, v)
	}
	f.Add("service.webhook.", "url: $a$b")
	f.Add("trigger.x", "[{when: a, send: [b]}, 1, null]")
	f.Fuzz(func(t *testing.T, key, value string) {
		n, err := ParseArgoCDConfigMap(map[string]string{key: value}, map[string][]byte{"a": []byte("$b"), "b": []byte("x")})
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Errors) == 0 {
				t.Fatalf("error %v is not a non-empty *ValidationError", err)
			}
			return
		}
		// Whatever loads passes crowsnest's own validation of the model.
		errs := &fieldErrors{lines: map[string]int{}}
		n.validateWith(crowsnestNotifyPaths("notifications"), errs)
		if err := errs.err(); err != nil {
			t.Fatalf("loaded a model that does not validate: %v", err)
		}
	})
}

// The example config documents notifications in a commented block;
// uncommented, it must load.
func TestExampleNotificationsLoad(t *testing.T) {
	data, err := os.ReadFile("../examples/config/crowsnest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	block := []string{"notifications:"}
	on := false
	for _, line := range strings.Split(string(data), "\n") {
		if line == "  # triggers:" {
			on = true
		}
		if on {
			if !strings.HasPrefix(line, "  # ") {
				break
			}
			block = append(block, "  "+strings.TrimPrefix(line, "  # "))
		}
	}
	c, err := Parse([]byte(header + strings.Join(block, "\n")))
	if err != nil {
		t.Fatalf("example notifications:\n%s\n%v", strings.Join(block, "\n"), err)
	}
	n := c.Notifications
	got := []string{sortedKeys(n.Triggers)[0], sortedKeys(n.Templates)[0], strings.Join(sortedKeys(n.Services), ","), n.Subscriptions[0].Selector}
	if diff := cmp.Diff([]string{"on-long-sync", "long-sync", "deploy-hook,mail,slack", "team=payments"}, got); diff != "" {
		t.Errorf("example notifications (-want +got):\n%s", diff)
	}
}
