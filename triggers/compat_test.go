package triggers

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
)

// TestArgoCDConfigMapCompatibility loads an argocd-notifications-cm in the
// real format (config's fixture), with the catalog under it, and checks its
// triggers over the Application fixtures.
func TestArgoCDConfigMapCompatibility(t *testing.T) {
	raw, err := os.ReadFile("../config/testdata/argocd-notifications-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	secret := map[string][]byte{"slack-token": []byte("x"), "email-username": []byte("bot@example.com")}
	n, err := config.ParseArgoCDConfigMap(cm.Data, secret)
	if err != nil {
		t.Fatal(err)
	}
	n.Catalog = true
	s, err := Compile(n)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Config.Templates["app-deployed"].Slack.DeliveryPolicy; got != "Post" {
		t.Errorf("the ConfigMap's app-deployed template was not kept over the catalog's (deliveryPolicy %q)", got)
	}
	tests := []struct {
		fixture string
		want    []string
	}{
		{"running", []string{"on-sync-failed"}}, // running for a day: the second condition
		{"healthy", []string{"on-deployed"}},
		{"failed", []string{"on-sync-failed"}},
		{"unknown", []string{"on-sync-status-unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			env := NewEnv(loadApp(t, tt.fixture), nil, nil, s.Config.Context, fixedNow)
			got := []string{}
			for _, name := range []string{"on-deployed", "on-sync-failed", "on-sync-status-unknown"} {
				for _, r := range Evaluate(s.Triggers[name], env) {
					if r.Err != nil {
						t.Errorf("%s[%d]: %v", name, r.Condition, r.Err)
					}
					if r.Triggered {
						got = append(got, name)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("triggered (-want +got):\n%s", diff)
			}
		})
	}
	// The long-running-sync condition: Running for over 30 minutes.
	running := loadApp(t, "running")
	r := Evaluate(s.Triggers["on-sync-failed"], NewEnv(running, nil, nil, nil, fixedNow))
	if !r[1].Triggered || r[1].Err != nil {
		t.Errorf("on-sync-failed[1] on a sync running for a day: %+v", r[1])
	}
	r = Evaluate(s.Triggers["on-sync-failed"], NewEnv(loadApp(t, "created"), nil, nil, nil, fixedNow))
	if r[1].Triggered || r[1].Err != nil {
		t.Errorf("on-sync-failed[1] without an operation: %+v, want false without error", r[1])
	}
}
