package git

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// argoRevisionMetadata is what Argo CD's repo server reads for a commit,
// with the same git commands it runs (util/git's RevisionMetadata).
func argoRevisionMetadata(t *testing.T, s *testgit.Server, repo, sha string) CommitMetadata {
	t.Helper()
	out := s.Git(t, repo, "show", "-s", "--format=%an <%ae>%n%at%n%B", sha)
	seg := strings.SplitN(out, "\n", 3)
	if len(seg) != 3 {
		t.Fatalf("git show: %q", out)
	}
	ts, err := strconv.ParseInt(seg[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return CommitMetadata{
		Author: seg[0], Date: time.Unix(ts, 0).UTC(), Message: strings.TrimSpace(seg[2]),
		Tags: strings.Fields(s.Git(t, repo, "tag", "--points-at", sha)),
	}
}

func TestCommitMetadataLikeArgoCD(t *testing.T) {
	s := testgit.Start(t, testgit.Options{Password: "s3cret"})
	url := s.CreateRepo(t, "apps")
	first := s.Seed(t, "apps", "main", map[string]string{"a.txt": "a\n"}, "first")
	sha := s.Seed(t, "apps", "main", map[string]string{"a.txt": "b\n"}, "Deploy guestbook v2\n\nWith a body line.\nSigned-off-by: Dev <dev@example.com>")
	s.Git(t, "apps", "tag", "v2.0.0", sha)
	s.Git(t, "apps", "tag", "-a", "-m", "release", "release-2", sha)
	s.Git(t, "apps", "tag", "v1.0.0", first)

	w := newWriter(t, StaticCredentials{Password: "s3cret"})
	ctx := context.Background()
	got, err := w.CommitMetadata(ctx, url, sha)
	if err != nil {
		t.Fatal(err)
	}
	want := argoRevisionMetadata(t, s, "apps", sha)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metadata differs from Argo CD's git commands (-argo +crowsnest):\n%s", diff)
	}
	if got.Author != testgit.SeedAuthor+" <"+testgit.SeedEmail+">" || !strings.HasPrefix(got.Message, "Deploy guestbook v2") {
		t.Errorf("author %q message %q", got.Author, got.Message)
	}
	if len(got.Tags) != 2 {
		t.Errorf("tags = %v, want release-2 and v2.0.0", got.Tags)
	}

	// A tag made later is seen: tags are fetched on each read.
	s.Git(t, "apps", "tag", "late", first)
	got, err = w.CommitMetadata(ctx, url, first[:12])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(argoRevisionMetadata(t, s, "apps", first), got); diff != "" {
		t.Errorf("abbreviated SHA (-argo +crowsnest):\n%s", diff)
	}

	if _, err := w.CommitMetadata(ctx, url, strings.Repeat("ab", 20)); !errors.Is(err, ErrRevisionNotFound) {
		t.Errorf("unknown commit: err = %v, want ErrRevisionNotFound", err)
	}
	if _, err := w.CommitMetadata(ctx, url, "main"); err == nil {
		t.Error("a branch name was read as a commit SHA; Argo CD wants a SHA")
	}
}

func TestCommitMetadataWrongCredentials(t *testing.T) {
	s := testgit.Start(t, testgit.Options{Password: "s3cret"})
	url := s.CreateRepo(t, "apps")
	sha := s.Seed(t, "apps", "main", map[string]string{"a.txt": "a\n"}, "first")
	w := newWriter(t, StaticCredentials{Password: "wrong-token"})
	_, err := w.CommitMetadata(context.Background(), url, sha)
	if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("err = %v, want ErrAuth without the token", err)
	}
}

func TestReadDirAtRevision(t *testing.T) {
	s := testgit.Start(t, testgit.Options{})
	url := s.CreateRepo(t, "apps")
	sha := s.Seed(t, "apps", "main", map[string]string{
		"chart/Chart.yaml": "name: web\n", "chart/values.yaml": "image:\n  tag: v1\n",
		"chart/templates/d.yaml": "kind: Deployment\n", "big.yaml": strings.Repeat("x", 100),
	}, "chart")
	s.Seed(t, "apps", "main", map[string]string{"chart/values.yaml": "image:\n  tag: v2\n"}, "later")
	w := newWriter(t, nil)
	ctx := context.Background()

	// An extra path cannot climb out of the repository: ../../big.yaml is /big.yaml.
	d, err := w.ReadDir(ctx, url, sha, "chart", func(n string) bool { return n == "values.yaml" }, ReadLimits{File: 1 << 10}, "../../big.yaml", "no/such.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Dir{SHA: sha, Found: true, Names: []string{"Chart.yaml", "values.yaml"}, Files: map[string][]byte{
		"values.yaml": []byte("image:\n  tag: v1\n"), "/big.yaml": []byte(strings.Repeat("x", 100)),
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("at %s (-want +got):\n%s", sha, diff)
	}
	d, err = w.ReadDir(ctx, url, "HEAD", "/chart/", func(n string) bool { return n == "values.yaml" }, ReadLimits{File: 1 << 10})
	if err != nil || string(d.Files["values.yaml"]) != "image:\n  tag: v2\n" {
		t.Errorf("HEAD: %+v, %v", d, err)
	}
	if d, err := w.ReadDir(ctx, url, "main", "nope", nil, ReadLimits{File: 1 << 10}); err != nil || d.Found {
		t.Errorf("missing dir: %+v, %v", d, err)
	}
	if _, err := w.ReadDir(ctx, url, "main", "", func(string) bool { return true }, ReadLimits{File: 10}); err == nil {
		t.Error("a file over the limit was read")
	}
	// values.yaml (17 bytes) and /big.yaml (100) come to over 110 together.
	_, err = w.ReadDir(ctx, url, sha, "chart", func(n string) bool { return n == "values.yaml" }, ReadLimits{File: 1 << 10, Total: 110}, "big.yaml")
	if want := "chart/values.yaml: the files read come to over the 110-byte limit together"; err == nil || err.Error() != want {
		t.Errorf("over the total: err = %v, want %q", err, want)
	}
}
