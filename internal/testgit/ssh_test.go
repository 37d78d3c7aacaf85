package testgit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sshCLI runs the git CLI with OpenSSH as its transport, using key and
// knownHosts only (no agent, no user config), strict host key checking.
func sshCLI(t *testing.T, key, knownHosts string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skipf("OpenSSH client not installed: %v", err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id")
	khFile := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(khFile, []byte(knownHosts), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(Env(dir), "GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityAgent=none"+
		" -o StrictHostKeyChecking=yes -o UserKnownHostsFile="+khFile+" -o GlobalKnownHostsFile=/dev/null -i "+keyFile)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// OpenSSH and git's own client against the server: clone and push with
// the authorized key; a wrong key and an unknown host key are refused
// before any git program runs.
func TestSSHServerWithOpenSSH(t *testing.T) {
	s := Start(t, Options{})
	s.CreateRepo(t, "apps")
	s.Seed(t, "apps", "main", map[string]string{"f": "1\n"}, "seed")
	key, pub := NewSSHKey(t)
	x := s.StartSSH(t, pub)

	clone := filepath.Join(t.TempDir(), "c")
	if out, err := sshCLI(t, key, x.KnownHosts(), "clone", "--quiet", x.RepoURL("apps"), clone); err != nil {
		t.Fatalf("clone: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(clone, "f"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"commit", "--quiet", "-am", "over ssh"}, {"push", "--quiet", "origin", "HEAD:refs/heads/main"}} {
		if out, err := sshCLI(t, key, x.KnownHosts(), append([]string{"-C", clone}, args...)...); err != nil {
			t.Fatalf("git %s: %v: %s", args[0], err, out)
		}
	}
	if got, _ := s.ReadFile(t, "apps", "main", "f"); got != "2\n" {
		t.Fatalf("after push f = %q, want 2", got)
	}
	if x.Count(KindUploadPack) != 1 || x.Count(KindReceivePack) != 1 {
		t.Fatalf("upload-pack %d, receive-pack %d; want 1 and 1", x.Count(KindUploadPack), x.Count(KindReceivePack))
	}

	other, _ := NewSSHKey(t)
	if out, err := sshCLI(t, other, x.KnownHosts(), "clone", "--quiet", x.RepoURL("apps"), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Fatal("clone with an unauthorized key succeeded")
	} else if !strings.Contains(out, "Permission denied") {
		t.Errorf("wrong key: %s", out)
	}
	if x.Refused() == 0 {
		t.Error("server counted no refused key")
	}
	if out, err := sshCLI(t, key, "", "clone", "--quiet", x.RepoURL("apps"), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Fatal("clone with an unknown host key succeeded")
	} else if !strings.Contains(out, "Host key verification failed") {
		t.Errorf("unknown host: %s", out)
	}
	if out, err := sshCLI(t, key, x.KnownHosts(), "clone", "--quiet", strings.Replace(x.RepoURL("apps"), "/apps.git", "/../../etc.git", 1), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Fatal("clone outside the root succeeded")
	} else if !strings.Contains(out, "does not appear to be a git repository") {
		t.Errorf("outside root: %s", out)
	}
	if x.Count(KindUploadPack) != 1 {
		t.Fatalf("refused clones ran upload-pack: %d", x.Count(KindUploadPack))
	}
}

func TestShellUnquote(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: `'/apps.git'`, want: "/apps.git"},
		{in: `'/it'\''s.git'`, want: "/it's.git"},
		{in: `'/a'\!'b'`, want: "/a!b"},
		{in: `/apps.git`, wantErr: true},
		{in: `'/apps.git`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := shellUnquote(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("shellUnquote(%s) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
