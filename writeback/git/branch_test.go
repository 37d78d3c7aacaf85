package git

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

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

// branchtmpl.CheckName agrees with git itself (git check-ref-format
// --branch) on the names Applications write and the ones that would fail
// a push: what it accepts, Git accepts, and it refuses what Git refuses,
// but for "@", which Git takes as a branch and also reads as HEAD.
func TestCheckNameAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	names := []string{
		"main", "release/1.x", "image-updater-0a1b2c", "feature/üñí", "v1.2.3", "a.b", "a-lock",
		"a..b", "1.*", "has space", "a~1", "a^1", "a:b", "a?", "a[1]", `a\b`, "-rf", "/main", "main/",
		"a//b", "main.", ".hidden", "x/.hidden", "main.lock", "x.lock/y", "a@{1}", "tab\tx", "del\x7f",
	}
	for _, name := range names {
		gitOK := exec.Command("git", "check-ref-format", "--branch", name).Run() == nil
		err := branchtmpl.CheckName(name)
		if gitOK != (err == nil) {
			t.Errorf("%q: git accepts it: %v; CheckName: %v", name, gitOK, err)
		}
	}
	// Stricter than git where go-git, which pushes, is (the fuzz target
	// below found "@/0").
	for _, name := range []string{"@", "@/0", "a/@", "a/@/b"} {
		if branchtmpl.CheckName(name) == nil {
			t.Errorf("CheckName accepts %q", name)
		}
	}
}

// Whatever CheckName accepts, go-git accepts as a branch to push.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"main", "a..b", "release/1.x", "x.lock", "@", "a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if branchtmpl.CheckName(name) != nil || name == branchtmpl.DefaultBranch {
			return
		}
		if err := plumbing.NewBranchReferenceName(name).Validate(); err != nil {
			t.Errorf("CheckName accepts %q, go-git refuses it: %v", name, err)
		}
	})
}
