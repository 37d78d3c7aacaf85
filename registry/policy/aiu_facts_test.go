package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// aiuDocs and aiuScanner are where argocd-image-updater (AIU) writes the
// facts below down, as paths in its repository
// (github.com/argoproj-labs/argocd-image-updater).
const (
	aiuStrategiesDoc = "docs/basics/update-strategies.md"
	aiuImagesDoc     = "docs/configuration/images.md"
	aiuVersionGo     = "registry-scanner/pkg/image/version.go"
	aiuOptionsGo     = "registry-scanner/pkg/image/options.go"
	aiuTagGo         = "registry-scanner/pkg/tag/tag.go"
	aiuSemverGo      = "registry-scanner/pkg/tag/semver.go"
	aiuClientGo      = "registry-scanner/pkg/registry/client.go"
	aiuRegistryGo    = "registry-scanner/pkg/registry/registry.go"
)

// TestAIUSelectionFacts runs AIU's documented (and coded) selection
// behaviour against crowsnest's policy: update strategies, constraints,
// prereleases, tag filters and platforms. Each row names the AIU file it
// pins. wantTag "" means AIU updates to nothing (crowsnest: an error,
// the image is not updated).
func TestAIUSelectionFacts(t *testing.T) {
	md := func(created time.Time, ps ...Platform) Metadata {
		return Metadata{Digest: "sha256:" + created.Format("20060102"), Created: created, Platforms: ps}
	}
	tests := []struct {
		name    string
		source  string
		spec    Spec
		tags    []string
		meta    map[string]Metadata
		wantTag string
		wantRef string // for digest: tag@digest
	}{
		// Strategies.
		{name: "semver is the default strategy", source: aiuStrategiesDoc,
			tags: []string{"1.0.0", "1.10.0", "1.2.0"}, wantTag: "1.10.0"},
		{name: "strategy names are case-insensitive", source: aiuOptionsGo + " (ParseUpdateStrategy lower-cases)",
			spec: Spec{Strategy: "SemVer"}, tags: []string{"1.0.0", "2.0.0"}, wantTag: "2.0.0"},
		{name: "semver: a constraint 1.2.x keeps the 1.2 patch branch", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "1.2.x"}, tags: []string{"1.2.5", "1.2.12", "1.3.0"}, wantTag: "1.2.12"},
		{name: "semver: a constraint 1.x keeps major 1", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "1.x"}, tags: []string{"1.2.12", "1.15.2", "2.0.0"}, wantTag: "1.15.2"},
		{name: "semver: constraint v1.x matches tag 1.0", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "v1.x"}, tags: []string{"1.0", "2.0"}, wantTag: "1.0"},
		{name: "semver: constraint 1.x matches tag v1.0", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "1.x"}, tags: []string{"v1.0", "v2.0"}, wantTag: "v1.0"},
		{name: "semver: tags that are not semver are left out", source: aiuStrategiesDoc,
			tags: []string{"latest", "master", "1.0.0", "f33bacd"}, wantTag: "1.0.0"},
		{name: "semver: no constraint picks the highest release, no prerelease", source: aiuVersionGo + " (empty constraint is \"*\")",
			tags: []string{"1.0.0", "2.0.0-rc1"}, wantTag: "1.0.0"},
		{name: "semver: -0 suffix admits prereleases", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "2.x-0"}, tags: []string{"1.9.0", "v2.0-rc1"}, wantTag: "v2.0-rc1"},
		{name: "semver: a prerelease is not picked without -0", source: aiuStrategiesDoc,
			spec: Spec{Constraint: "2.x"}, tags: []string{"1.9.0", "2.0.0-rc1"}},
		{name: "semver: equal versions break ties by the greater original string", source: aiuSemverGo,
			tags: []string{"1.2.3", "v1.2.3"}, wantTag: "v1.2.3"},
		{name: "semver: nothing in the constraint, no update", source: aiuVersionGo,
			spec: Spec{Constraint: "3.x"}, tags: []string{"1.0.0", "2.0.0"}},
		{name: "newest-build picks the most recent build", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "newest-build"}, tags: []string{"a5fb3d3", "f7bb2e3", "0000001"},
			meta: map[string]Metadata{"a5fb3d3": md(t2, amd64), "f7bb2e3": md(t3, amd64), "0000001": md(t1, amd64)}, wantTag: "f7bb2e3"},
		{name: "latest is newest-build's old name", source: aiuOptionsGo,
			spec: Spec{Strategy: "latest"}, tags: []string{"x", "y"},
			meta: map[string]Metadata{"x": md(t2, amd64), "y": md(t1, amd64)}, wantTag: "x"},
		{name: "newest-build: tags of one build tie, the lexically greatest wins", source: aiuStrategiesDoc + ", " + aiuTagGo + " (SortByDate)",
			spec: Spec{Strategy: "newest-build"}, tags: []string{"f33bacd", "dev", "latest"},
			meta: map[string]Metadata{"f33bacd": md(t1, amd64), "dev": md(t1, amd64), "latest": md(t1, amd64)}, wantTag: "latest"},
		{name: "newest-build with allow-tags regexp", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "newest-build", AllowTags: "regexp:^[0-9a-f]{7}$"}, tags: []string{"a5fb3d3", "latest", "master"},
			meta: map[string]Metadata{"a5fb3d3": md(t1, amd64), "latest": md(t3, amd64), "master": md(t3, amd64)}, wantTag: "a5fb3d3"},
		{name: "newest-build with ignore-tags", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "newest-build", IgnoreTags: []string{"latest", "master"}}, tags: []string{"a5fb3d3", "latest", "master"},
			meta: map[string]Metadata{"a5fb3d3": md(t1, amd64), "latest": md(t3, amd64), "master": md(t3, amd64)}, wantTag: "a5fb3d3"},
		{name: "alphabetical picks the lexically last tag", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "alphabetical"}, tags: []string{"2024-01-02", "2024-12-01", "2023-12-31"}, wantTag: "2024-12-01"},
		{name: "name is alphabetical's old name", source: aiuOptionsGo,
			spec: Spec{Strategy: "name"}, tags: []string{"b", "c", "a"}, wantTag: "c"},
		{name: "alphabetical with a calver allow-tags", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "alphabetical", AllowTags: `regexp:^[0-9]{4}-[0-9]{2}-[0-9]{2}$`}, tags: []string{"2024-01-02", "zzz", "2024-12-01"}, wantTag: "2024-12-01"},
		{name: "digest tracks the constraint's tag, pinned by digest", source: aiuStrategiesDoc,
			spec: Spec{Strategy: "digest", Constraint: "latest"}, tags: []string{"latest", "1.0.0"},
			meta: map[string]Metadata{"latest": md(t2, amd64), "1.0.0": md(t3, amd64)}, wantTag: "latest", wantRef: "latest@sha256:20240102"},
		{name: "digest: the tracked tag is missing, no update", source: aiuRegistryGo,
			spec: Spec{Strategy: "digest", Constraint: "prod"}, tags: []string{"latest"},
			meta: map[string]Metadata{"latest": md(t2, amd64)}},
		// allow-tags and ignore-tags.
		{name: "allow-tags any matches every tag", source: aiuImagesDoc,
			spec: Spec{AllowTags: "any"}, tags: []string{"1.0.0", "2.0.0"}, wantTag: "2.0.0"},
		{name: "allow-tags ANY: match function names are case-insensitive", source: aiuOptionsGo + " (ParseMatch lower-cases)",
			spec: Spec{AllowTags: "ANY"}, tags: []string{"1.0.0", "2.0.0"}, wantTag: "2.0.0"},
		{name: "allow-tags REGEXP: is regexp:", source: aiuOptionsGo + " (ParseMatch lower-cases)",
			spec: Spec{AllowTags: "REGEXP:^1\\."}, tags: []string{"1.0.0", "2.0.0"}, wantTag: "1.0.0"},
		{name: "allow-tags regexp is unanchored", source: aiuOptionsGo + " (regexp.MatchString)",
			spec: Spec{Strategy: "alphabetical", AllowTags: "regexp:-alpine"}, tags: []string{"1.0.0-alpine", "2.0.0"}, wantTag: "1.0.0-alpine"},
		{name: "allow-tags with an invalid regexp matches nothing", source: aiuImagesDoc,
			spec: Spec{AllowTags: "regexp:("}, tags: []string{"1.0.0"}},
		{name: "allow-tags with an unknown function matches nothing", source: aiuImagesDoc,
			spec: Spec{AllowTags: "glob:1.*"}, tags: []string{"1.0.0"}},
		{name: "ignore-tags * disables updates", source: aiuImagesDoc,
			spec: Spec{IgnoreTags: []string{"*"}}, tags: []string{"1.0.0"}},
		{name: "ignore-tags are globs (filepath.Match)", source: aiuImagesDoc + ", " + aiuVersionGo + " (IsTagIgnored)",
			spec: Spec{IgnoreTags: []string{"2.*", "1.?.1"}}, tags: []string{"1.0.0", "1.0.1", "1.1.1", "2.0.0"}, wantTag: "1.0.0"},
		{name: "ignore-tags globs match the whole tag", source: aiuVersionGo + " (filepath.Match)",
			spec: Spec{IgnoreTags: []string{"1.0"}}, tags: []string{"1.0.0", "1.0"}, wantTag: "1.0.0"},
		// Platforms.
		{name: "platforms: a tag built for any listed platform qualifies", source: aiuImagesDoc + ", " + aiuClientGo,
			spec: Spec{Strategy: "newest-build", Platforms: []string{"linux/arm64", "linux/amd64"}}, tags: []string{"arm", "amd", "s390"},
			meta: map[string]Metadata{"arm": md(t1, arm64v8), "amd": md(t2, amd64), "s390": md(t3, Platform{OS: "linux", Architecture: "s390x"})}, wantTag: "amd"},
		{name: "platforms: a tag built for none of them is skipped", source: aiuClientGo + " (\"at least one reference that matches\")",
			spec: Spec{Strategy: "newest-build", Platforms: []string{"linux/arm64"}}, tags: []string{"new", "old"},
			meta: map[string]Metadata{"new": md(t3, amd64), "old": md(t1, arm64)}, wantTag: "old"},
		{name: "platforms: an index's created time counts the wanted platforms only", source: aiuClientGo + " (TagInfoFromReferences)",
			spec: Spec{Strategy: "newest-build", Platforms: []string{"linux/amd64"}}, tags: []string{"a", "b"},
			meta:    map[string]Metadata{"a": index("sha256:a", map[Platform]time.Time{amd64: t1, arm64: t3}), "b": index("sha256:b", map[Platform]time.Time{amd64: t2})},
			wantTag: "b"},
		{name: "platforms: digest of a multi-arch tag qualifies when one child matches", source: aiuImagesDoc,
			spec: Spec{Strategy: "digest", Constraint: "stable", Platforms: []string{"linux/arm/v6", "linux/amd64"}}, tags: []string{"stable"},
			meta: map[string]Metadata{"stable": index("sha256:idx", map[Platform]time.Time{armv6: t1})}, wantTag: "stable", wantRef: "stable@sha256:idx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeRegistry{md: tt.meta}
			p, err := Compile("example.com/app", tt.spec)
			if err != nil {
				if tt.wantTag != "" {
					t.Fatalf("AIU (%s) picks %q; crowsnest refuses the policy: %v", tt.source, tt.wantTag, err)
				}
				return // refused with an error: no update, as in AIU
			}
			res, err := p.Select(t.Context(), tt.tags, fake.lookup)
			if tt.wantTag == "" {
				if err == nil {
					t.Fatalf("AIU (%s) updates to nothing; crowsnest picks %q", tt.source, res.Tag)
				}
				return
			}
			if err != nil {
				t.Fatalf("AIU (%s) picks %q; crowsnest: %v", tt.source, tt.wantTag, err)
			}
			if diff := cmp.Diff(tt.wantTag, res.Tag); diff != "" {
				t.Errorf("tag (-AIU %s +crowsnest):\n%s", tt.source, diff)
			}
			if tt.wantRef != "" {
				if diff := cmp.Diff(tt.wantRef, res.Ref()); diff != "" {
					t.Errorf("ref (-AIU %s +crowsnest):\n%s", tt.source, diff)
				}
			}
		})
	}
}
