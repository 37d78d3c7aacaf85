package testgit

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func cloneCLI(t *testing.T, url string) error {
	t.Helper()
	cmd := exec.Command("git", "clone", "--quiet", url, filepath.Join(t.TempDir(), "c"))
	cmd.Env = Env(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("clone: %s", out)
	}
	return err
}

func TestSeedReadLog(t *testing.T) {
	s := Start(t, Options{})
	s.CreateRepo(t, "apps")
	first := s.Seed(t, "apps", "main", map[string]string{"a/values.yaml": "image:\n  tag: v1\n", "README": "hi\n"}, "first")
	second := s.Seed(t, "apps", "main", map[string]string{"a/values.yaml": "image:\n  tag: v2\n"}, "second\n\nwith body")
	got, ok := s.ReadFile(t, "apps", "main", "a/values.yaml")
	if !ok || got != "image:\n  tag: v2\n" {
		t.Fatalf("ReadFile = %q, %v", got, ok)
	}
	if got, ok := s.ReadFile(t, "apps", "main", "README"); !ok || got != "hi\n" {
		t.Fatalf("README survives a later seed: %q, %v", got, ok)
	}
	if _, ok := s.ReadFile(t, "apps", "main", "missing"); ok {
		t.Fatal("missing file reported present")
	}
	want := []Commit{
		{SHA: second, Author: "Seeder <seeder@example.com>", Subject: "second", Body: "with body"},
		{SHA: first, Author: "Seeder <seeder@example.com>", Subject: "first"},
	}
	if diff := cmp.Diff(want, s.Log(t, "apps", "main")); diff != "" {
		t.Fatalf("Log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/values.yaml"}, s.ChangedFiles(t, "apps", second)); diff != "" {
		t.Fatalf("ChangedFiles (-want +got):\n%s", diff)
	}
	s.SeedFrom(t, "apps", "feature", "main", map[string]string{"x": "y\n"}, "on feature")
	if diff := cmp.Diff([]string{"feature", "main"}, s.Branches(t, "apps")); diff != "" {
		t.Fatalf("Branches (-want +got):\n%s", diff)
	}
	if n := len(s.Log(t, "apps", "feature")); n != 3 {
		t.Fatalf("feature has %d commits, want 3 (based on main)", n)
	}
}

func TestCloneAndPushOverHTTPWithAuth(t *testing.T) {
	s := Start(t, Options{Username: "bot", Password: "s3cret"})
	s.CreateRepo(t, "apps")
	s.Seed(t, "apps", "main", map[string]string{"f": "1\n"}, "seed")

	if err := cloneCLI(t, s.RepoURL("apps")); err == nil {
		t.Fatal("clone without credentials succeeded")
	}
	if err := s.PushFiles(t, "apps", "main", map[string]string{"f": "2\n"}, "from client"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ReadFile(t, "apps", "main", "f"); got != "2\n" {
		t.Fatalf("after push f = %q", got)
	}
	if s.Count(KindReceivePack) != 1 || s.Count(KindUploadPack) == 0 || s.Count(KindInfoRefs) < 2 {
		t.Fatalf("counts: info/refs %d upload %d receive %d", s.Count(KindInfoRefs), s.Count(KindUploadPack), s.Count(KindReceivePack))
	}
	s.ResetCounts()
	if s.Count(KindInfoRefs) != 0 {
		t.Fatal("ResetCounts kept counts")
	}

	s.SetAuthFailure(true)
	if err := s.PushFiles(t, "apps", "main", map[string]string{"f": "3\n"}, "refused"); err == nil {
		t.Fatal("push succeeded during auth failure")
	}
}

func TestTokenAuthAcceptsAnyUser(t *testing.T) {
	s := Start(t, Options{Password: "tok"})
	url := s.CreateRepo(t, "r")
	s.Seed(t, "r", "main", map[string]string{"f": "1\n"}, "seed")
	if err := cloneCLI(t, strings.Replace(url, "http://", "http://anyone:tok@", 1)); err != nil {
		t.Fatal(err)
	}
	if err := cloneCLI(t, strings.Replace(url, "http://", "http://anyone:wrong@", 1)); err == nil {
		t.Fatal("wrong token accepted")
	}
}

func TestFaults(t *testing.T) {
	s := Start(t, Options{})
	s.CreateRepo(t, "r")
	s.Seed(t, "r", "main", map[string]string{"f": "1\n"}, "seed")

	s.RejectPushes(1)
	if err := s.PushFiles(t, "r", "main", map[string]string{"f": "2\n"}, "rejected"); err == nil {
		t.Fatal("rejected push succeeded")
	}
	if err := s.PushFiles(t, "r", "main", map[string]string{"f": "2\n"}, "accepted"); err != nil {
		t.Fatalf("second push: %v", err)
	}

	// A push racing a commit made in BeforePush loses, as against a
	// concurrent pusher.
	s.BeforePush(func() { s.Seed(t, "r", "main", map[string]string{"g": "x\n"}, "racer") })
	if err := s.PushFiles(t, "r", "main", map[string]string{"f": "3\n"}, "loser"); err == nil {
		t.Fatal("push over a moved ref succeeded")
	}
	if got := s.Log(t, "r", "main")[0].Subject; got != "racer" {
		t.Fatalf("head = %q, want racer", got)
	}

	// A push whose answer is lost landed all the same.
	s.DropPushAcks(1)
	if err := s.PushFiles(t, "r", "main", map[string]string{"f": "4\n"}, "unacknowledged"); err == nil {
		t.Fatal("push whose answer was dropped reported success")
	}
	if got := s.Log(t, "r", "main")[0].Subject; got != "unacknowledged" {
		t.Fatalf("head = %q, want the unacknowledged push", got)
	}

	for _, mode := range []int{Down503, DownDrop} {
		s.SetDown(time.Minute, mode)
		resp, err := http.Get(s.RepoURL("r") + "/info/refs?service=git-upload-pack")
		if mode == Down503 {
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", resp.StatusCode)
			}
		} else if err == nil {
			_ = resp.Body.Close()
			t.Fatal("dropped connection gave a response")
		}
		s.SetDown(0, mode)
	}
	if err := cloneCLI(t, s.RepoURL("r")); err != nil {
		t.Fatalf("clone after outage: %v", err)
	}
}
