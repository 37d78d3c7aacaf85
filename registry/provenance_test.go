package registry

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

const (
	goodRev = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
	goodSrc = "https://github.com/team-a/app"
)

// A revision is checked for its characters only (':' and '/' are
// allowed, so URLs and paths pass); a source must be an http(s) URL.
func TestValidProvenance(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		revision  bool
		sourceURL bool
	}{
		{name: "commit", value: goodRev, revision: true},
		{name: "tag", value: "v1.2.3+build.4", revision: true},
		{name: "ref", value: "refs/tags/v1.2.3", revision: true},
		{name: "empty", value: ""},
		{name: "newline", value: "abc\n# heading"},
		{name: "markdown", value: "[click](https://evil.example)"},
		{name: "space", value: "abc def"},
		{name: "html", value: "<img src=x>"},
		{name: "long revision", value: strings.Repeat("a", maxRevisionLen+1)},
		{name: "longest revision", value: strings.Repeat("a", maxRevisionLen), revision: true},
		{name: "https", value: goodSrc, sourceURL: true, revision: true},
		{name: "http with port and path", value: "http://git.example:8080/team/app.git", sourceURL: true, revision: true},
		{name: "javascript", value: "javascript:alert(1)"},
		{name: "javascript upper", value: "JavaScript://%0aalert(1)"},
		{name: "data", value: "data:text/html,<b>x</b>"},
		{name: "ssh", value: "ssh://git@github.com/team-a/app"},
		{name: "scp-like", value: "git@github.com:team-a/app.git"},
		{name: "relative", value: "/team-a/app", revision: true},
		{name: "no host", value: "https:///team-a/app", revision: true},
		{name: "userinfo", value: "https://user:token@github.com/team-a/app"},
		{name: "user only", value: "https://token@github.com/team-a/app"},
		{name: "url with newline", value: "https://github.com/a\n[x](https://evil.example)"},
		{name: "url with space", value: "https://github.com/a b"},
		{name: "url with backtick", value: "https://github.com/a`b"},
		{name: "long url", value: "https://github.com/" + strings.Repeat("a", maxSourceLen)},
		{name: "bad port", value: "https://github.com:x/a", revision: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validRevision(tt.value); got != tt.revision {
				t.Errorf("validRevision(%q) = %v, want %v", tt.value, got, tt.revision)
			}
			if got := validSource(tt.value); got != tt.sourceURL {
				t.Errorf("validSource(%q) = %v, want %v", tt.value, got, tt.sourceURL)
			}
		})
	}
}

// FuzzProvenance checks that whatever an image states, what is kept is
// short and holds no whitespace, control character or markup bracket.
func FuzzProvenance(f *testing.F) {
	for _, s := range []string{goodRev, goodSrc, "javascript:alert(1)", "https://u:p@x/y", "a\nb", "https://x/<y>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p provenance
		p.fill(map[string]string{keyRevision: s, keySource: s})
		for _, v := range []string{p.revision, p.source} {
			if len(v) > maxSourceLen || strings.ContainsAny(v, " \t\r\n<>`\"\\") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Errorf("kept %q", v)
			}
		}
		if p.source != "" && !strings.HasPrefix(strings.ToLower(p.source), "http") {
			t.Errorf("kept source %q", p.source)
		}
	})
}

// The source revision and repository come from the manifest's (or the
// index's) annotations, then its config labels or, for an index, the
// wanted children's; invalid values are dropped. Reading them costs no
// request Metadata did not make before.
func TestMetadataProvenance(t *testing.T) {
	src := map[string]string{keyRevision: goodRev, keySource: goodSrc}
	other := map[string]string{keyRevision: "v9", keySource: "https://example.com/other"}
	hostile := map[string]string{keyRevision: "abc\n\n## [click me](https://evil.example)", keySource: "javascript:alert(document.cookie)"}
	index := func(created map[string]time.Time) v1.ImageIndex { return testreg.Index(t, created) }
	tests := []struct {
		name string
		img  remote.Taggable
		want []policy.Platform
		// HEADs, manifest GETs and blob GETs of the first look.
		head, manifests, blobs int
		rev, src               string
	}{
		{name: "config labels", img: testreg.Labeled(t, testreg.Image(t, t0, ""), src), head: 1, manifests: 1, blobs: 1, rev: goodRev, src: goodSrc},
		{name: "manifest annotations", img: mutate.Annotations(testreg.Image(t, t0, ""), src).(v1.Image),
			head: 1, manifests: 1, blobs: 1, rev: goodRev, src: goodSrc},
		{name: "annotations before labels", img: mutate.Annotations(testreg.Labeled(t, testreg.Image(t, t0, ""), other), src).(v1.Image),
			head: 1, manifests: 1, blobs: 1, rev: goodRev, src: goodSrc},
		{name: "index annotations", img: mutate.Annotations(index(map[string]time.Time{"linux/amd64": t0, "linux/arm64": t0}), src).(v1.ImageIndex),
			want: []policy.Platform{{OS: "linux", Architecture: "arm64"}}, head: 1, manifests: 2, blobs: 1, rev: goodRev, src: goodSrc},
		{name: "index child labels", img: mutate.AppendManifests(index(map[string]time.Time{"linux/amd64": t0}),
			mutate.IndexAddendum{Add: testreg.Labeled(t, testreg.Image(t, t0, ""), src), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}}),
			head: 1, manifests: 3, blobs: 2, rev: goodRev, src: goodSrc},
		{name: "unwanted child says nothing", img: mutate.AppendManifests(index(map[string]time.Time{"linux/amd64": t0}),
			mutate.IndexAddendum{Add: testreg.Labeled(t, testreg.Image(t, t0, ""), src), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}}),
			want: []policy.Platform{{OS: "linux", Architecture: "amd64"}}, head: 1, manifests: 2, blobs: 1},
		{name: "hostile annotations dropped", img: mutate.Annotations(testreg.Image(t, t0, ""), hostile).(v1.Image), head: 1, manifests: 1, blobs: 1},
		{name: "hostile annotations, labels kept", img: mutate.Annotations(testreg.Labeled(t, testreg.Image(t, t0, ""), src), hostile).(v1.Image),
			head: 1, manifests: 1, blobs: 1, rev: goodRev, src: goodSrc},
		{name: "nothing stated", img: testreg.Image(t, t0, ""), head: 1, manifests: 1, blobs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := testreg.StartOCI(t, testreg.OCIOptions{})
			reg.Push(t, "app:1", tt.img)
			c := &Client{Hosts: fastHosts}
			repo := repoOf(t, reg, "app")
			md, err := c.Metadata(t.Context(), repo, "1", tt.want)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{md.Revision, md.Source}
			if diff := cmp.Diff([]string{tt.rev, tt.src}, got); diff != "" {
				t.Errorf("revision and source (-want +got):\n%s", diff)
			}
			counts := []int{reg.Count("head", ""), reg.Count("manifest", ""), reg.Count("blob", "")}
			if diff := cmp.Diff([]int{tt.head, tt.manifests, tt.blobs}, counts); diff != "" {
				t.Errorf("HEADs, manifest and blob GETs (-want +got):\n%s", diff)
			}
			before := len(reg.Requests())
			again, err := c.Metadata(t.Context(), repo, "1", tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(reg.Requests()) - before; n != 0 {
				t.Errorf("a second look made %d requests, want 0", n)
			}
			if diff := cmp.Diff(md, again); diff != "" {
				t.Errorf("cached metadata differs (-first +second):\n%s", diff)
			}
		})
	}
}
