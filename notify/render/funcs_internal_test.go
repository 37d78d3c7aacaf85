package render

import (
	"regexp"
	"strings"
	"testing"
)

// replacement reads a replacement as regexp's ExpandString does, for
// every kind of reference it reads.
func TestReplacementExpandsAsRegexp(t *testing.T) {
	r := regexp.MustCompile(`(?P<word>[a-z]+)-(\d+)?(?P<word2>x)?`)
	s := "abc-12 de- fgh-x"
	repls := []string{
		"", "plain", "$0", "$1$2", "${1}x", "$word and ${word}", "$$1", "$", "a$", "$ x", "${", "${1",
		"${}", "$01", "$9", "$100000000", "$word2", "$nope", "${word}${2}$0$$", "héllo $wörd ${1}é",
	}
	for _, repl := range repls {
		parts := replacement(r, repl)
		for _, m := range r.FindAllStringSubmatchIndex(s, -1) {
			var got strings.Builder
			for _, p := range parts {
				got.WriteString(p.text(s, m))
			}
			if want := r.ExpandString(nil, repl, s, m); got.String() != string(want) {
				t.Errorf("replacement(%q) at %v expands to %q, want %q", repl, m, got.String(), want)
			}
		}
	}
}

// FuzzRegexReplaceAll: regexReplaceAll gives what sprig's (regexp's
// ReplaceAllString) gives, wherever it is within its limits.
func FuzzRegexReplaceAll(f *testing.F) {
	f.Add(`a(x*)b`, "-ab-axxb-", "${1}W")
	f.Add(`(?P<w>\w+)|(\d)`, "ab 12 c", "<$w|$2|$$|${w}x|$0>")
	f.Add(``, "héllo", "-")
	f.Add(`(a)|(b)`, "abba", "$2$1$3$")
	f.Fuzz(func(t *testing.T, re, s, repl string) {
		r, err := regexp.Compile(re)
		if err != nil || len(s) > 1000 || len(repl) > 100 {
			return
		}
		got, err := regexReplaceAll(re, s, repl)
		if err != nil {
			if !strings.Contains(err.Error(), "regexReplaceAll: more than") {
				t.Fatalf("regexReplaceAll(%q, %q, %q): %v", re, s, repl, err)
			}
			return
		}
		if want := r.ReplaceAllString(s, repl); got != want {
			t.Fatalf("regexReplaceAll(%q, %q, %q) = %q, regexp gives %q", re, s, repl, got, want)
		}
	})
}

// FuzzTitle: title is sprig's title (strings.Title) wherever the text has
// no apostrophe after a letter, digit or underscore, the one place it
// differs on purpose ("Don't").
func FuzzTitle(f *testing.F) {
	for _, s := range []string{"hello wide  world-x", "a—b c«d 'twas", "x.y é_ü k\u00a0l", "ǆemal ﬁne ß", "1st 2nd_3rd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := []rune(s)
		for i := 1; i < len(r); i++ {
			if r[i] == '\'' && !startsWord(r[i-1]) {
				return
			}
		}
		if got, want := title(s), strings.Title(s); got != want { //nolint:staticcheck // sprig's title is strings.Title
			t.Fatalf("title(%q) = %q, sprig's gives %q", s, got, want)
		}
	})
}
