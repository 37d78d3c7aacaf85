package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// argocd-image-updater keys a rate limiter by each registries.conf entry
// (registry-scanner/pkg/registry/endpoints.go: RegistryEndpoint.Limiter,
// one per prefix), so two prefixes of one host may set different limits.
// crowsnest accepts them, in registries.conf and in its own list, and
// Match gives each image the entry (hence the limit) that serves it.
func TestTwoPrefixesOfOneHostMayHaveTheirOwnLimits(t *testing.T) {
	const conf = `registries:
- name: team a
  prefix: ghcr.io/team-a
  api_url: https://ghcr.io
  limit: 2
- name: team b
  prefix: ghcr.io/team-b
  api_url: https://ghcr.io
  limit: 50
- name: ghcr
  prefix: ghcr.io
  api_url: https://ghcr.io
  limit: 7
`
	list, err := ParseRegistriesConf([]byte(conf))
	if err != nil {
		t.Fatalf("ParseRegistriesConf: %v", err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "registries.conf"), conf)
	doc := "apiVersion: " + APIVersion + "\nkind: " + Kind + "\nregistries:\n  confFile: registries.conf\n  list:\n" +
		"    - {prefix: quay.io/a, rateLimit: 1, maxConcurrency: 1}\n    - {prefix: quay.io/b, rateLimit: 100, maxConcurrency: 20}\n"
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	resolved, err := c.Registries.Resolved(dir)
	if err != nil {
		t.Fatalf("Resolved: %v", err)
	}
	tests := []struct {
		image string
		want  float64
	}{
		{"ghcr.io/team-a/app:1", 2},
		{"ghcr.io/team-b/app", 50},
		{"ghcr.io/team-c/app", 7},
		{"quay.io/a/app", 1},
		{"quay.io/b/app", 100},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			e := resolved.Match(tt.image)
			if e == nil {
				t.Fatal("no entry")
			}
			if diff := cmp.Diff(tt.want, e.RateLimit); diff != "" {
				t.Errorf("rate limit (-want +got):\n%s", diff)
			}
		})
	}
	if got := list.Match("ghcr.io/team-a/x").RateLimit; got != 2 {
		t.Errorf("parsed conf: team-a limit = %v, want 2", got)
	}
}
