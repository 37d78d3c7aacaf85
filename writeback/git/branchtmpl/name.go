package branchtmpl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidBranch says a write-back branch is not one Git could push
// to. The annotation reader refuses it when it reads the Application, and
// the Git writer refuses the one change that carries it, with the same
// checks (CheckName, CheckTarget), so a name that slipped past the reader
// (a template's output) still fails only its own Application.
var ErrInvalidBranch = errors.New("invalid branch name")

// DefaultBranch is the branch name that stands for the remote's default
// branch; it is not a branch Git would create.
const DefaultBranch = "HEAD"

// CheckName reports whether name can be a write-back branch: DefaultBranch,
// or a name `git check-ref-format --branch` accepts (no "..", "@{", "//",
// control characters, spaces or any of ~^:?*[\, no component that starts
// with "." or ends with ".lock", not starting with "-" or "/", not ending
// with "/" or "."), in UTF-8, at most 1 KiB long and not "@" (which Git
// accepts but also reads as HEAD). The error names the rule broken.
func CheckName(name string) error {
	if name == DefaultBranch {
		return nil
	}
	if why := nameProblem(name); why != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidBranch, shown(name), why)
	}
	return nil
}

// shownBytes is how much of a refused name an error quotes: enough to
// recognize it, not a kilobyte of it in every Event.
const shownBytes = 80

func shown(name string) string {
	if len(name) <= shownBytes {
		return name
	}
	return fmt.Sprintf("%s... (%d bytes)", name[:shownBytes], len(name))
}

// nameProblem says which rule name breaks, or "".
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxBranchBytes:
		return fmt.Sprintf("longer than %d bytes", maxBranchBytes)
	case !utf8.ValidString(name):
		return "not UTF-8"
	case name == "@":
		return `"@" alone is not a branch`
	case strings.HasPrefix(name, "-"):
		return `starts with "-"`
	case strings.HasPrefix(name, "/"), strings.HasSuffix(name, "/"):
		return `starts or ends with "/"`
	case strings.HasSuffix(name, "."):
		return `ends with "."`
	case strings.Contains(name, ".."):
		return `contains ".."`
	case strings.Contains(name, "@{"):
		return `contains "@{"`
	case strings.Contains(name, "//"):
		return "has an empty path component"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == ' ' || strings.ContainsRune(`~^:?*[\`, r) {
			return fmt.Sprintf("contains %q", r)
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "@" {
			// Git takes it ("@/0"); go-git, which pushes, refuses it.
			return `a component is "@" alone`
		}
		if strings.HasPrefix(part, ".") {
			return fmt.Sprintf("component %q starts with \".\"", part)
		}
		if strings.HasSuffix(part, ".lock") {
			return fmt.Sprintf("component %q ends with \".lock\"", part)
		}
	}
	return ""
}

// IsTemplate reports whether a target branch is a template (rendered
// per change at write time) rather than a name.
func IsTemplate(target string) bool { return strings.Contains(target, "{{") }

// CheckTarget checks the target of a "base:target" write-back branch as
// written: a template must Parse, anything else must pass CheckName. A
// template's output can only be checked once rendered; the writer does
// that with CheckName.
func CheckTarget(target string) error {
	if IsTemplate(target) {
		_, err := Parse(target)
		return err
	}
	return CheckName(target)
}
