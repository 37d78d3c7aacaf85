package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The allow-list and docs/conformance.md name the same differences: each
// entry here has its "**ID**" bullet there, and the docs list no other.
func TestAllowListIsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^- \*\*([a-z0-9-]+)\*\*`).FindAllSubmatch(b, -1) {
		documented = append(documented, string(m[1]))
	}
	var listed []string
	for _, d := range slices.Concat(windowDifferences, notificationDifferences) {
		if d.ID == "" || d.Upstream == "" || d.Crowsnest == "" {
			t.Errorf("allow-list entry %+v: ID, Upstream and Crowsnest are all required", d)
		}
		listed = append(listed, d.ID)
	}
	slices.Sort(documented)
	slices.Sort(listed)
	if !slices.Equal(documented, listed) {
		t.Errorf("docs/conformance.md lists %v, the allow-list %v", documented, listed)
	}
}
