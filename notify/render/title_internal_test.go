package render

import (
	"strings"
	"testing"
)

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
