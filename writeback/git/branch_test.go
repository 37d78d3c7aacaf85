package git

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// A templated target branch renders from the change, and output past the
// branch template's limit fails the write (branchtmpl tests the limits).
func TestSplitBranchTemplate(t *testing.T) {
	c := &Change{App: "web", Images: []Image{{Name: "ghcr.io/a/web", NewTag: "1.0.0"}}}
	long := "main:" + strings.Repeat("{{.SHA256}}", 20)
	if _, _, err := splitBranch(long, c); !errors.Is(err, branchtmpl.ErrOutsideLimits) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a 1280-byte branch rendered with error %v, want the length limit", err)
	}
	if base, target, err := splitBranch("main:updates-{{range .Images}}{{.NewTag}}{{end}}", c); err != nil || base != "main" || target != "updates-1.0.0" {
		t.Errorf("splitBranch = %q, %q, %v; want main, updates-1.0.0", base, target, err)
	}
}
