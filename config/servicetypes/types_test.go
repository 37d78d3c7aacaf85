package servicetypes_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// TestTypes: every type is one of Argo CD's, and its Settings and Block
// are new pointers to structs each time (config decodes into them and
// keeps them per service and template).
func TestTypes(t *testing.T) {
	names := servicetypes.Names()
	if len(names) == 0 || !slices.IsSorted(names) {
		t.Fatalf("Names() = %v, want a sorted, non-empty list", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			typ, ok := servicetypes.Lookup(name)
			if !ok || typ.Name != name {
				t.Fatalf("Lookup(%q) = %+v, %v", name, typ, ok)
			}
			if !servicetypes.IsArgoCDType(name) {
				t.Errorf("%s is not in ArgoCDTypes", name)
			}
			a, b := typ.Settings(), typ.Settings()
			if v := reflect.ValueOf(a); v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || any(a) == any(b) {
				t.Errorf("Settings() = %T, want a new pointer to a struct each call", a)
			}
			if typ.Block == nil {
				return
			}
			if v := reflect.ValueOf(typ.Block()); v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct || typ.Block() == typ.Block() {
				t.Errorf("Block() = %T, want a new pointer to a struct each call", typ.Block())
			}
		})
	}
	if _, ok := servicetypes.Lookup("slack"); ok {
		t.Error(`Lookup("slack") found a type: config reads slack itself`)
	}
}

// TestValidate: each type's settings are checked when config reads them;
// errors name the key and never the value.
func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		typ      *servicetypes.Type
		settings any
		want     string // "" for no error
	}{
		{name: "grafana complete", typ: servicetypes.Grafana,
			settings: &servicetypes.GrafanaSettings{APIURL: "https://grafana.example.com/api", APIKey: "k"}},
		{name: "grafana missing key", typ: servicetypes.Grafana,
			settings: &servicetypes.GrafanaSettings{APIURL: "https://grafana.example.com/api"}, want: "apiKey: required"},
		{name: "teams recipient url", typ: servicetypes.Teams,
			settings: &servicetypes.TeamsSettings{RecipientURLs: map[string]string{"ops": "s3cret.example.com/x"}},
			want:     "recipientUrls[ops]: want an http or https URL with a host"},
		{name: "github secret references", typ: servicetypes.GitHub,
			settings: &servicetypes.GitHubSettings{AppID: "$app", InstallationID: "$inst", PrivateKey: "$key"}},
		{name: "github app id", typ: servicetypes.GitHub,
			settings: &servicetypes.GitHubSettings{AppID: "x1", InstallationID: "2", PrivateKey: "k"},
			want:     "appID: want a positive integer"},
		{name: "alertmanager target", typ: servicetypes.Alertmanager,
			settings: &servicetypes.AlertmanagerSettings{Targets: []string{"a/b"}}, want: "targets[0]: want host:port"},
		{name: "nats websockets", typ: servicetypes.NATS,
			settings: &servicetypes.NATSSettings{URL: "ws://nats:4222"},
			want:     "url: NATS over websockets (ws://, wss://) is not supported by crowsnest: use nats:// or tls://"},
		{name: "nats nkey", typ: servicetypes.NATS,
			settings: &servicetypes.NATSSettings{URL: "nats://nats:4222", NKey: "SUs3cret"},
			want:     "nkey: not a NATS user nkey seed (SU...)"},
		{name: "opsgenie host", typ: servicetypes.Opsgenie,
			settings: &servicetypes.OpsgenieSettings{APIURL: "api.eu.opsgenie.com", APIKeys: map[string]string{"ops": "k"}}},
		{name: "not a settings struct", typ: servicetypes.Grafana, settings: struct{}{},
			want: "grafana: settings of type struct {}, not this package's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.typ.Validate(tt.settings)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}
}
