package git

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func TestMergeProposal(t *testing.T) {
	u := func(key, image, from, to string) Update {
		return Update{App: key, Key: "argocd/" + key, Image: image, File: key + "/kustomization.yaml", From: from, To: to}
	}
	earlier := []Update{u("web", "web", "1.0", "1.1"), u("api", "api", "2.0", "2.1"), u("db", "db", "3.0", "3.1")}
	got := MergeProposal(earlier, []Update{
		u("web", "web", "1.1", "1.2"),     // again: keeps the base's 1.0
		u("api", "api", "2.1", "2.0"),     // back to the base's: gone
		u("cache", "redis", "7.0", "7.2"), // new
	})
	sortProposal(got)
	want := []Update{u("cache", "redis", "7.0", "7.2"), u("db", "db", "3.0", "3.1"), u("web", "web", "1.0", "1.2")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MergeProposal (-want +got):\n%s", diff)
	}
	// The same image in two Applications, or two files, are two values.
	two := MergeProposal([]Update{u("web", "nginx", "1", "2")}, []Update{u("api", "nginx", "1", "3")})
	if len(two) != 2 {
		t.Errorf("two Applications' nginx merged into %+v", two)
	}
}

func TestProposalStateRoundTrip(t *testing.T) {
	updates := []Update{{App: "web", Key: "argocd/web", Image: "ghcr.io/acme/web", Alias: "w", File: "k.yaml", From: "1.0.0", To: "1.1.0@sha256:" + strings.Repeat("a", 64),
		Revision: "0123456", Source: "https://github.com/acme/web"}}
	body := "a table\n\n" + proposalState(updates)
	if diff := cmp.Diff(updates, readProposalState(body)); diff != "" {
		t.Errorf("state read back (-want +got):\n%s", diff)
	}
	if st := proposalState(updates); strings.Count(st, "-->") != 1 || !strings.HasSuffix(st, stateSuffix) {
		t.Errorf("state %q does not end its comment exactly once", proposalState(updates))
	}
	// What a person or an older crowsnest left reads as nothing, never
	// as an error: the update then lists its own commit's changes.
	for _, body := range []string{
		"",
		"no state here",
		statePrefix + "not base64!" + stateSuffix,
		statePrefix + "aGVsbG8=" + stateSuffix, // base64, not gzip
		statePrefix + strings.TrimSuffix(strings.TrimPrefix(proposalState(updates), statePrefix), stateSuffix)[:20] + stateSuffix,
		statePrefix + "H4sIAAAAAAAA" + stateSuffix,
	} {
		if got := readProposalState(body); got != nil {
			t.Errorf("readProposalState(%q) = %+v, want nothing", body, got)
		}
	}
	// Entries without what identifies them are dropped.
	partial := proposalState([]Update{{App: "web", Image: "web", To: "1"}, updates[0]})
	if got := readProposalState(partial); len(got) != 1 || got[0].Key != "argocd/web" {
		t.Errorf("read %+v, want only the whole entry", got)
	}
}

// A body fits the forge's limit: the state goes first, then the table is
// cut at a line, never in the middle of a row.
func TestFitBody(t *testing.T) {
	var rows strings.Builder
	var updates []Update
	for i := range 200 {
		fmt.Fprintf(&rows, "| app-%03d | ghcr.io/acme/app-%03d | `1.0.0` | `1.1.0` | - |\n", i, i)
		updates = append(updates, Update{App: fmt.Sprintf("app-%03d", i), Key: fmt.Sprintf("argocd/app-%03d", i), Image: fmt.Sprintf("ghcr.io/acme/app-%03d", i), File: "k.yaml", From: "1.0.0", To: "1.1.0"})
	}
	body := strings.TrimSpace(rows.String())
	state := proposalState(updates)

	if got := fitBody(body, state, forge.DefaultBodyLimit); got != body+"\n\n"+state {
		t.Errorf("within GitHub's limit the body and state are whole; got %d characters", utf8.RuneCountInString(got))
	}
	if got := fitBody(body, state, len(body)+10); got != body {
		t.Errorf("a body that fits without its state: got %d characters, want the body alone (%d)", len(got), len(body))
	}
	azure := fitBody(body, state, 4000) // Azure DevOps' limit
	if n := utf8.RuneCountInString(azure); n > 4000 || !strings.HasSuffix(azure, bodyCut) || strings.Contains(azure, statePrefix) {
		t.Errorf("cut to 4000: %d characters, ends %q", n, azure[max(len(azure)-120, 0):])
	}
	cut := strings.TrimSuffix(azure, bodyCut)
	if !strings.HasSuffix(cut, "|") || !strings.HasPrefix(body, cut) {
		t.Errorf("cut in the middle of a row: ends %q", cut[max(len(cut)-60, 0):])
	}
}

func TestProposalTitleAndTemplates(t *testing.T) {
	if _, err := ParsePullRequestTemplate("pull request title", "{{.Nope}}"); err == nil || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("a field that does not exist: %v, want an error naming it", err)
	}
	if _, err := ParsePullRequestTemplate("pull request body", "{{range .Updates}}"); err == nil {
		t.Error("a template that does not parse: no error")
	}
	title, err := ParsePullRequestTemplate("pull request title", "{{range .Updates}}{{.Image}} to {{.To}}\n{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	var ups []Update
	for i := range 40 {
		ups = append(ups, Update{App: "web", Key: "argocd/web", Image: fmt.Sprintf("ghcr.io/acme/image-%02d", i), File: "k.yaml", From: "1", To: "2"})
	}
	s := &session{w: &Writer{PullRequestTitle: title}, b: &batch{base: "main", target: "crowsnest/main"}}
	got, _, err := s.proposalFor(ups, forge.DefaultBodyLimit)
	if err != nil {
		t.Fatal(err)
	}
	// One line, within the forges' 255.
	if strings.Contains(got, "\n") || utf8.RuneCountInString(got) != maxTitle || !strings.HasSuffix(got, "…") {
		t.Errorf("title %q (%d characters), want one line cut to %d", got, utf8.RuneCountInString(got), maxTitle)
	}
	empty, err := ParsePullRequestTemplate("pull request title", "{{if false}}x{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	s.w.PullRequestTitle = empty
	if _, _, err := s.proposalFor(ups, forge.DefaultBodyLimit); err == nil {
		t.Error("an empty title: no error")
	}
}

func TestRevisionLink(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct{ source, rev, want string }{
		{"https://github.com/acme/web", sha, "https://github.com/acme/web/commit/" + sha},
		{"https://github.com/acme/web.git", sha, "https://github.com/acme/web/commit/" + sha},
		{"https://gitlab.com/group/sub/web/", sha, "https://gitlab.com/group/sub/web/-/commit/" + sha},
		{"https://bitbucket.org/acme/web", sha, "https://bitbucket.org/acme/web/commits/" + sha},
		{"https://codeberg.org/acme/web", sha, "https://codeberg.org/acme/web/commit/" + sha},
		{"https://git.example.com/acme/web", sha, ""}, // a forge not known by host
		{"https://github.com/acme/web", "v1.2.3", ""}, // not a commit
		{"http://github.com/acme/web", sha, ""},
		{"javascript:alert(1)//github.com/acme", sha, ""},
		{"https://github.com/acme/web)[x](https://evil", sha, ""},
		{"https://github.com", sha, ""},
	} {
		if got := revisionLink(tc.source, tc.rev); got != tc.want {
			t.Errorf("revisionLink(%q, %q) = %q, want %q", tc.source, tc.rev, got, tc.want)
		}
	}
	if got := shortRevision(sha); got != sha[:12] {
		t.Errorf("shortRevision = %q", got)
	}
	if got := shortRevision("v1.2.3"); got != "v1.2.3" {
		t.Errorf("shortRevision(v1.2.3) = %q", got)
	}
}

func TestWellKnownRegistryLink(t *testing.T) {
	for _, tc := range []struct{ image, version, want string }{
		{"nginx", "1.27", "https://hub.docker.com/_/nginx/tags?name=1.27"},
		{"docker.io/library/nginx", "1.27@sha256:abc", "https://hub.docker.com/_/nginx/tags?name=1.27"},
		{"bitnami/redis", "7.2", "https://hub.docker.com/r/bitnami/redis/tags?name=7.2"},
		{"nginx", "@sha256:abc", "https://hub.docker.com/_/nginx/tags"},
		{"quay.io/prometheus/node-exporter", "v1.8.0", "https://quay.io/repository/prometheus/node-exporter?tab=tags&tag=v1.8.0"},
		{"ghcr.io/acme/web", "1.0", "https://ghcr.io/acme/web"},
		{"europe-docker.pkg.dev/p/r/app", "1", "https://europe-docker.pkg.dev/p/r/app"},
		{"eu.gcr.io/p/app", "1", "https://eu.gcr.io/p/app"},
		{"public.ecr.aws/nginx/nginx", "1", "https://gallery.ecr.aws/nginx/nginx"},
		{"mcr.microsoft.com/dotnet/aspnet", "8.0", "https://mcr.microsoft.com/en-us/artifact/mar/dotnet/aspnet/tags"},
		{"registry.example.com/team/app", "1", ""},
		{"NOT A NAME", "1", ""},
	} {
		if got := WellKnownRegistryLink(tc.image, tc.version); got != tc.want {
			t.Errorf("WellKnownRegistryLink(%q, %q) = %q, want %q", tc.image, tc.version, got, tc.want)
		}
	}
}
