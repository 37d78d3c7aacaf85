package main

// README.md is the way in: short, naming every command, and linking to the
// docs/ pages that hold the reference. Every relative link in README.md and
// docs/*.md must lead to a file that exists, and to a heading that exists
// when it names one, so a reader never lands nowhere.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxBytes is the README's budget: what crowsnest is, the two
// commands, install, the command table and the map of the docs.
const readmeMaxBytes = 12 * 1024

func TestREADMEIsShort(t *testing.T) {
	if n := len(doc(t, "README.md")); n > readmeMaxBytes {
		t.Errorf("README.md is %d bytes, over its budget of %d: move the detail into a docs/ page and link to it", n, readmeMaxBytes)
	}
}

// TestREADMENamesEveryCommand: each command under the root has a row in
// the README's command table, so the way to its flags (docs/commands.md)
// starts there.
func TestREADMENamesEveryCommand(t *testing.T) {
	table := section(t, "README.md", doc(t, "README.md"), "## Commands")
	n := 0
	for _, c := range newRootCommand().Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		n++
		if !strings.Contains(table, "`crowsnest "+c.Name()) {
			t.Errorf("command `crowsnest %s` is not in README.md's command table (section \"## Commands\"): add a row and document its flags in %s", c.Name(), commandsDoc)
		}
	}
	if n < 5 {
		t.Fatalf("found only %d commands; the command tree was not read", n)
	}
}

var (
	fenceRE    = regexp.MustCompile("(?ms)^```.*?\n```[^\n]*$")
	codeSpanRE = regexp.MustCompile("`[^`\n]*`")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// withoutCode blanks fenced blocks and inline code, where "](x)" is text.
func withoutCode(text string) string {
	text = fenceRE.ReplaceAllString(text, "")
	return codeSpanRE.ReplaceAllStringFunc(text, func(s string) string {
		return strings.Repeat(" ", len(s))
	})
}

// anchors returns the heading anchors of a markdown text as GitHub makes
// them: lower case, punctuation dropped (letters, digits, '-', '_' and
// spaces stay), spaces turned into '-', repeats numbered -1, -2, ...
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out[a+"-"+strconv.Itoa(k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(moduleRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(moduleRoot, "README.md"))
	if len(pages) < 10 {
		t.Fatalf("found only %d pages: %v", len(pages), pages)
	}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(moduleRoot, page)
		for _, m := range linkRE.FindAllStringSubmatch(withoutCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			text, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(text))[anchor] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", rel, target, filepath.Base(dest), anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d links; the pages were not read", checked)
	}
}

func TestAnchors(t *testing.T) {
	got := anchors("# Title\n## `crowsnest run` flags\n```\n# not a heading\n```\n### Git results are the remote's\n## Title\n### Rate limits (429, `Retry-After`)\n")
	for _, want := range []string{"title", "crowsnest-run-flags", "git-results-are-the-remotes", "title-1", "rate-limits-429-retry-after"} {
		if !got[want] {
			t.Errorf("anchors: no %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("anchors: a line in a code block became a heading: %v", got)
	}
}
