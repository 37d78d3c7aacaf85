package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// benchTags makes benchSize tags the way busy repositories look: mostly semver
// releases (some with "v", some prereleases), some CI builds, some junk.
func benchTags() []string {
	r := rand.New(rand.NewPCG(1, 2))
	tags := make([]string, benchSize)
	for i := range tags {
		major, minor, patch := r.IntN(5), r.IntN(50), r.IntN(1000)
		switch r.IntN(10) {
		case 0:
			tags[i] = fmt.Sprintf("%d.%d.%d-rc.%d", major, minor, patch, r.IntN(10))
		case 1:
			tags[i] = fmt.Sprintf("v%d.%d.%d", major, minor, patch)
		case 2:
			tags[i] = fmt.Sprintf("sha-%08x", r.Uint32())
		default:
			tags[i] = fmt.Sprintf("%d.%d.%d", major, minor, patch)
		}
	}
	return tags
}

// benchBuilds makes benchSize CI build tags "build-<n>-<sha>" in random order.
func benchBuilds() []string {
	r := rand.New(rand.NewPCG(3, 4))
	tags := make([]string, benchSize)
	for i, j := range r.Perm(benchSize) {
		tags[i] = fmt.Sprintf("build-%d-%08x", j, r.Uint32())
	}
	return tags
}

// benchSize is the repository size issue 3 asks selection to handle.
const benchSize = 100_000

func benchSelect(b *testing.B, spec Spec, tags []string, explain bool) {
	b.Helper()
	p := mustCompile(b, spec)
	sel := p.Select
	if explain {
		sel = p.Explain
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sel(b.Context(), tags, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectSemver selects from 100,000 tags with a semver range
// whose best candidates are out of range (2.x, 3.x and 4.x are newer).
func BenchmarkSelectSemver(b *testing.B) {
	benchSelect(b, Spec{Constraint: ">=1.2 <2"}, benchTags(), false)
}

// BenchmarkSelectSemverInRange selects with a range the newest release
// satisfies, the usual case ("^1.2" on a 1.x project).
func BenchmarkSelectSemverInRange(b *testing.B) {
	benchSelect(b, Spec{Constraint: ">=1.2"}, benchTags(), false)
}

// BenchmarkSelectSemverNoConstraint is the common "newest release" case.
func BenchmarkSelectSemverNoConstraint(b *testing.B) {
	benchSelect(b, Spec{}, benchTags(), false)
}

// BenchmarkSelectExtractNumeric selects from 100,000 CI build tags by the
// build number.
func BenchmarkSelectExtractNumeric(b *testing.B) {
	benchSelect(b, Spec{Extract: `^build-(?P<version>\d+)-`, ExtractOrder: "numeric"}, benchBuilds(), false)
}

// BenchmarkExplainSemver is the `crowsnest test` path: every candidate
// ranked and explained.
func BenchmarkExplainSemver(b *testing.B) {
	benchSelect(b, Spec{Constraint: ">=1.2 <2"}, benchTags(), true)
}

// BenchmarkParseTags parses 100,000 tags with parseVersion and with
// semver.NewVersion, the parser it stands in for: the reason semver.go
// keeps its own.
func BenchmarkParseTags(b *testing.B) {
	tags := benchTags()
	b.Run("parseVersion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, t := range tags {
				_, _ = parseVersion(t)
			}
		}
	})
	b.Run("semver.NewVersion", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, t := range tags {
				_, _ = semver.NewVersion(t)
			}
		}
	})
}
