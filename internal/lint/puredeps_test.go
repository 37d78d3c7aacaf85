package lint_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPurePackagesLinkNoSender fails when a decision package, or config
// under them, links a notification sender: depguard sees direct imports
// only, and one import of notify below config linked the outbox, slack-go
// and client-go into every pure package (issue 40).
func TestPurePackagesLinkNoSender(t *testing.T) {
	root := moduleRoot(t)
	module := modulePath(t, root)
	pure := []string{"./config", "./windows", "./triggers", "./controller/imageupdate", "./controller/gitplan", "./registry/policy"}
	banned := []string{module + "/notify", "github.com/slack-go/"}
	for _, pkg := range pure {
		cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for dep := range strings.Lines(string(out)) {
			dep = strings.TrimSpace(dep)
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s links %s: find the import with `go list -deps -f '{{.ImportPath}} {{.Imports}}' %s`", pkg, dep, pkg)
				}
			}
		}
	}
}

// TestDaemonLinksNoSigningCode fails when the daemon links sigstore's
// modules or the test signer: they sign test images (internal/testsign)
// and must stay test-only dependencies; the daemon verifies with the
// standard library (registry/verify).
func TestDaemonLinksNoSigningCode(t *testing.T) {
	root := moduleRoot(t)
	module := modulePath(t, root)
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "./cmd/crowsnest")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/crowsnest: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		dep = strings.TrimSpace(dep)
		if strings.HasPrefix(dep, "github.com/sigstore/") || dep == module+"/internal/testsign" {
			t.Errorf("./cmd/crowsnest links %s", dep)
		}
	}
}
