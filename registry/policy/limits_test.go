package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Patterns, ignore-tags and platforms come from annotations any team
// writes: past the limits a spec is refused, naming the field and the
// limit and not quoting the oversized text; at the limits it compiles.
func TestCompileLimits(t *testing.T) {
	long := strings.Repeat("a", MaxPatternBytes+1)
	atLimit := strings.Repeat("a", MaxPatternBytes)
	many := func(n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	over := fmt.Sprintf("%d bytes, over the %d-byte limit", MaxPatternBytes+1, MaxPatternBytes)
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"at the limits", Spec{AllowTags: "regexp:" + atLimit, IgnoreTags: append(many(MaxIgnoreTags-1, func(i int) string { return fmt.Sprintf("x%d*", i) }), atLimit),
			Extract: "(?P<version>" + strings.Repeat("b", MaxPatternBytes-13) + ")", Constraint: ">=1.0",
			Strategy: "semver", ExtractOrder: "semver"}, nil},
		{"platforms at the limit", Spec{Strategy: "newest-build", Platforms: many(MaxPlatforms, func(i int) string { return fmt.Sprintf("linux/arch%d", i) })}, nil},
		{"allow-tags regexp", Spec{AllowTags: "regexp:" + long}, []string{"allow-tags: " + over}},
		{"allow-tags without prefix", Spec{AllowTags: long}, []string{"allow-tags: " + over}},
		{"ignore-tags regexp and glob", Spec{IgnoreTags: []string{"ok", "regexp:" + long, long + "*"}}, []string{
			"ignore-tags[1]: " + over,
			fmt.Sprintf("ignore-tags[2]: %d bytes, over the %d-byte limit", MaxPatternBytes+2, MaxPatternBytes),
		}},
		{"ignore-tags entries", Spec{IgnoreTags: many(MaxIgnoreTags+1, func(int) string { return "regexp:(" })},
			[]string{fmt.Sprintf("ignore-tags: %d entries, more than the %d allowed", MaxIgnoreTags+1, MaxIgnoreTags)}},
		{"extract", Spec{Extract: "(?P<version>" + long + ")"}, []string{
			fmt.Sprintf("extract: %d bytes, over the %d-byte limit", MaxPatternBytes+14, MaxPatternBytes)}},
		{"constraint", Spec{Constraint: ">=1.0" + long}, []string{
			fmt.Sprintf("constraint: %d bytes, over the %d-byte limit", MaxPatternBytes+6, MaxPatternBytes)}},
		{"platforms", Spec{Strategy: "newest-build", Platforms: many(MaxPlatforms+1, func(int) string { return "x" })},
			[]string{fmt.Sprintf("platforms: %d entries, more than the %d allowed", MaxPlatforms+1, MaxPlatforms)}},
		{"a long platform", Spec{Strategy: "newest-build", Platforms: []string{"linux/" + long}},
			[]string{fmt.Sprintf("platforms[0]: %d bytes: want os/arch[/variant]", len(long)+6)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("nginx", tc.spec)
			if diff := cmp.Diff(tc.want, problems(t, err)); diff != "" {
				t.Errorf("Compile problems (-want +got):\n%s", diff)
			}
		})
	}
}
