package config

import "testing"

// TestParseCheckedKeepsTheConfig: a config with schema problems is still
// returned, with its problems, the line of every field read, and which
// paths a schema problem already covers.
func TestParseCheckedKeepsTheConfig(t *testing.T) {
	c := ParseChecked([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
controller:
  workers: four
notifications:
  triggers:
    on-x:
      - when: app.status ==
        send: [t]
registries:
  webhook:
    sources:
      - type: generic
        secretEnv: "not an env name"
`))
	if c.Config == nil {
		t.Fatal("no config")
	}
	if got := c.Config.Notifications.Triggers["on-x"][0].When; got != "app.status ==" {
		t.Errorf("trigger when = %q, want the file's (later checks compile it)", got)
	}
	if len(c.Problems) != 2 {
		t.Errorf("problems = %v, want workers and secretEnv", c.Problems)
	}
	lines := map[string]int{
		"controller.workers":                      4,
		"notifications.triggers[on-x][0].when":    8,
		"notifications.triggers[on-x][0].send":    9,
		"notifications.triggers[on-x][0].oncePer": 8, // not in the file: its condition's line
		"registries.webhook.sources[0]":           13,
		"nowhere":                                 0,
	}
	for p, want := range lines {
		if got := c.Line(p); got != want {
			t.Errorf("Line(%q) = %d, want %d", p, got, want)
		}
	}
	covers := map[string]bool{
		"controller.workers":                   true,
		"controller.workers.x":                 true,
		"registries.webhook.sources[0]":        true, // its secretEnv is refused
		"registries.webhook":                   true,
		"notifications.triggers[on-x][0].when": false,
		"controller.retry":                     false,
		"":                                     false,
	}
	for p, want := range covers {
		if got := c.Covers(p); got != want {
			t.Errorf("Covers(%q) = %t, want %t", p, got, want)
		}
	}
	if bad := ParseChecked([]byte("- a list")); bad.Config != nil || len(bad.Problems) != 1 {
		t.Errorf("a list: config %v, problems %v; want no config and one problem", bad.Config, bad.Problems)
	}
}
