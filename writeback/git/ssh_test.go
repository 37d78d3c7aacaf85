package git

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// sshSeeded is the golden "apps" repository served over HTTP and SSH, the
// SSH server letting in the key it returns.
func sshSeeded(t *testing.T) (*testgit.Server, *testgit.SSHServer, string) {
	t.Helper()
	s, _ := seeded(t, testgit.Options{})
	key, pub := testgit.NewSSHKey(t)
	x := s.StartSSH(t, pub)
	return s, x, key
}

// keyBody is a line from the middle of a PEM key: a piece of the key
// material that must never be shown.
func keyBody(key string) string {
	lines := strings.Split(strings.TrimSpace(key), "\n")
	return lines[len(lines)/2]
}

// A clone, commit and push over SSH with the right key and known_hosts,
// then a second batch that fetches over the same transport. Debug logs
// and results never carry the key.
func TestSSHCloneCommitPush(t *testing.T) {
	s, x, key := sshSeeded(t)
	var logs bytes.Buffer
	w := newWriter(t, StaticCredentials{SSHPrivateKey: key, SSHKnownHosts: x.KnownHosts()})
	w.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	url := x.RepoURL("apps")

	res := mustApply(t, w, kustomizeWeb(url, "1.2.0", "v3", "7.2"))
	if res.CommitSHA == "" || res.CommitSHA != s.Head(t, "apps", "main") || res.RepoURL != url {
		t.Fatalf("result %+v, head %s", res, s.Head(t, "apps", "main"))
	}
	got, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml")
	if diff := cmp.Diff(golden(t, "kustomization-update", "expected", "kustomization.yaml"), got); diff != "" {
		t.Errorf("kustomization.yaml (-want +got):\n%s", diff)
	}
	if author := s.Log(t, "apps", "main")[0].Author; author != "Crow Bot <bot@example.com>" {
		t.Errorf("author %q", author)
	}

	s.Seed(t, "apps", "main", map[string]string{"other.txt": "x\n"}, "someone else")
	res = mustApply(t, w, kustomizeWeb(url, "1.3.0"))
	if res.CommitSHA != s.Head(t, "apps", "main") {
		t.Fatalf("second push: result %+v, head %s", res, s.Head(t, "apps", "main"))
	}
	if opCount(w, opClone, resultSuccess) != 1 || opCount(w, opFetch, resultSuccess) != 1 || opCount(w, opPush, resultSuccess) != 2 {
		t.Errorf("clone %d fetch %d push %d; want 1, 1, 2",
			opCount(w, opClone, resultSuccess), opCount(w, opFetch, resultSuccess), opCount(w, opPush, resultSuccess))
	}
	if n := x.Count(testgit.KindReceivePack); n != 2 {
		t.Errorf("%d receive-packs over SSH, want 2", n)
	}
	if n := s.Count(testgit.KindReceivePack) + s.Count(testgit.KindUploadPack); n != 0 {
		t.Errorf("%d requests went over HTTP", n)
	}
	if !strings.Contains(logs.String(), "git write-back pushed") {
		t.Fatalf("no push logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), keyBody(key)) {
		t.Fatal("the private key reached the log")
	}
}

// Host keys are checked, never trusted on first use: an unknown host, a
// different key for the host and a revoked key each fail the first
// attempt with an error naming the host, before anything is pushed.
func TestSSHHostKeyRefused(t *testing.T) {
	s, x, key := sshSeeded(t)
	host := knownhosts.Normalize(x.Addr)
	_, otherKey := testgit.NewSSHKey(t)
	otherHost := knownhosts.Line([]string{"git.example.com"}, x.HostKey) + "\n"
	mismatch := knownhosts.Line([]string{x.Addr}, otherKey) + "\n"
	tests := []struct {
		name       string
		knownHosts string
		want       []string
	}{
		{"empty known_hosts", "", []string{"host " + host + " is not in known_hosts", "argocd-ssh-known-hosts-cm"}},
		{"only other hosts", otherHost, []string{"host " + host + " is not in known_hosts", ssh.FingerprintSHA256(x.HostKey)}},
		{"different key", mismatch, []string{"host key mismatch for " + host, ssh.FingerprintSHA256(otherKey), ssh.FingerprintSHA256(x.HostKey)}},
		{"revoked", "@revoked * " + strings.TrimPrefix(x.KnownHosts(), host+" "), []string{"is revoked", host}},
	}
	before := s.Head(t, "apps", "main")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, StaticCredentials{SSHPrivateKey: key, SSHKnownHosts: tt.knownHosts})
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(x.RepoURL("apps"), "9.9.9")})
			if !errors.Is(err, ErrHostKey) {
				t.Fatalf("err = %v, want ErrHostKey", err)
			}
			t.Log(err)
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), keyBody(key)) {
				t.Fatal("error shows the private key")
			}
			if res[0].Attempts != 1 {
				t.Errorf("attempts = %d; a refused host key is not retried", res[0].Attempts)
			}
		})
	}
	if s.Head(t, "apps", "main") != before || x.Count(testgit.KindReceivePack) != 0 || x.Count(testgit.KindUploadPack) != 0 {
		t.Fatalf("a git program ran on an untrusted host (upload %d, receive %d)",
			x.Count(testgit.KindUploadPack), x.Count(testgit.KindReceivePack))
	}
}

// A key the server does not accept is ErrAuth on the first attempt, with
// the SSH reason and without the key.
func TestSSHWrongClientKey(t *testing.T) {
	s, x, _ := sshSeeded(t)
	wrong, _ := testgit.NewSSHKey(t)
	before := s.Head(t, "apps", "main")
	w := newWriter(t, StaticCredentials{SSHPrivateKey: wrong, SSHKnownHosts: x.KnownHosts()})
	res, err := w.Apply(t.Context(), []Change{kustomizeWeb(x.RepoURL("apps"), "9.9.9")})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	if !strings.Contains(err.Error(), "unable to authenticate") || strings.Contains(err.Error(), keyBody(wrong)) {
		t.Errorf("error %q", err)
	}
	if res[0].Attempts != 1 || opCount(w, opClone, resultAuth) != 1 {
		t.Errorf("attempts %d, clone auth failures %d; want 1 and 1", res[0].Attempts, opCount(w, opClone, resultAuth))
	}
	if x.Refused() == 0 || s.Head(t, "apps", "main") != before {
		t.Fatalf("server refused %d keys, head moved: %v", x.Refused(), s.Head(t, "apps", "main") != before)
	}
}

// An SSH URL with no key, a passphrase-protected key, a key that is not a
// key and bad known_hosts each say what is wrong and name the field.
func TestSSHCredentialErrors(t *testing.T) {
	_, x, key := sshSeeded(t)
	encrypted, _ := testgit.NewEncryptedSSHKey(t, "hunter2")
	tests := []struct {
		name    string
		creds   CredentialsSource
		wantErr error
		want    string
	}{
		{"no credentials", nil, ErrSSHKey, "no sshPrivateKey was found"},
		{"password only", StaticCredentials{Username: "bot", Password: "pw"}, ErrSSHKey, "no sshPrivateKey was found"},
		{"passphrase", StaticCredentials{SSHPrivateKey: encrypted, SSHKnownHosts: x.KnownHosts()}, ErrSSHKey, "protected by a passphrase"},
		{"not a key", StaticCredentials{SSHPrivateKey: "hello", SSHKnownHosts: x.KnownHosts()}, ErrSSHKey, "sshPrivateKey for " + x.RepoURL("apps") + ": ssh: no key found"},
		{"bad known_hosts", StaticCredentials{SSHPrivateKey: key, SSHKnownHosts: x.KnownHosts() + "example.com ssh-ed25519 !!!\n"}, nil, "invalid known_hosts: known_hosts:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, tt.creds)
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(x.RepoURL("apps"), "9.9.9")})
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v saying %q", err, tt.wantErr, tt.want)
			}
			for _, secret := range []string{keyBody(key), keyBody(encrypted), "hunter2"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error shows a secret: %v", err)
				}
			}
			if res[0].Attempts > 1 {
				t.Errorf("attempts = %d", res[0].Attempts)
			}
		})
	}
	if n := x.Count(testgit.KindUploadPack); n != 0 {
		t.Fatalf("%d upload-packs ran", n)
	}
}

func TestIsSSHURLAndUser(t *testing.T) {
	key, _ := testgit.NewSSHKey(t)
	tests := []struct {
		url      string
		ssh      bool
		user     string
		hostport string
	}{
		{url: "ssh://git@github.com/org/repo.git", ssh: true, user: "git", hostport: "github.com:22"},
		{url: "ssh://deploy@git.example.com:2222/org/repo", ssh: true, user: "deploy", hostport: "git.example.com:2222"},
		{url: "ssh://git.example.com/org/repo", ssh: true, user: "git", hostport: "git.example.com:22"},
		{url: "git+ssh://git@git.example.com/org/repo", ssh: true, user: "git", hostport: "git.example.com:22"},
		{url: "git@github.com:org/repo.git", ssh: true, user: "git", hostport: "github.com:22"},
		{url: "bot@git.example.com:org/repo.git", ssh: true, user: "bot", hostport: "git.example.com:22"},
		{url: "https://github.com/org/repo.git"},
		{url: "http://127.0.0.1:8080/apps.git"},
		{url: "/srv/git/apps.git"},
		{url: "./a:b/c"},
	}
	for _, tt := range tests {
		if got := isSSHURL(tt.url); got != tt.ssh {
			t.Errorf("isSSHURL(%s) = %v, want %v", tt.url, got, tt.ssh)
			continue
		}
		if !tt.ssh {
			continue
		}
		// The host is known with the probe's view of it: its port.
		kh := knownhosts.Line([]string{tt.hostport}, mustPublicKey(t, key))
		a, err := Credentials{SSHPrivateKey: key, SSHKnownHosts: kh}.newSSHAuth(tt.url, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		if a.user != tt.user {
			t.Errorf("%s: user %q, want %q", tt.url, a.user, tt.user)
		}
		if diff := cmp.Diff([]string{ssh.KeyAlgoED25519}, a.algorithms); diff != "" {
			t.Errorf("%s: host key algorithms (-want +got):\n%s", tt.url, diff)
		}
		if s := a.String(); strings.Contains(s, keyBody(key)) || !strings.Contains(s, "SHA256:") {
			t.Errorf("String() = %q", s)
		}
	}
	// The SSH login is not a secret: it stays in the URL (and cache key)
	// and in errors, where a password in any URL is hidden.
	msg := redact(errors.New("cloning ssh://git@h/a, ssh://u:pw@h/b, https://tok@h/c")).Error()
	if want := "cloning ssh://git@h/a, ssh://***@h/b, https://***@h/c"; msg != want {
		t.Errorf("redact = %q, want %q", msg, want)
	}
	if clean, c := splitURL("ssh://git@github.com/org/repo.git"); clean != "ssh://git@github.com/org/repo.git" || c != (Credentials{}) {
		t.Errorf("splitURL kept %q, %+v", clean, c)
	}
}

func TestHostKeyAlgorithmsFollowKnownHosts(t *testing.T) {
	key, _ := testgit.NewSSHKey(t)
	ed := mustPublicKey(t, key)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, err := ssh.NewPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	db, err := parseKnownHosts("test", knownhosts.Line([]string{"git.example.com"}, rsaPub)+"\n"+knownhosts.Line([]string{"git.example.com"}, ed)+"\n")
	if err != nil {
		t.Fatal(err)
	}
	got := hostKeyAlgorithms(db, "git.example.com:22", "")
	want := []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA, ssh.KeyAlgoED25519}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("algorithms (-want +got):\n%s", diff)
	}
	if got := hostKeyAlgorithms(db, "unknown.example.com:22", ""); got != nil {
		t.Errorf("unknown host: %v, want nil (defaults)", got)
	}
}

func mustPublicKey(t *testing.T, privatePEM string) ssh.PublicKey {
	t.Helper()
	signer, err := ssh.ParsePrivateKey([]byte(privatePEM))
	if err != nil {
		t.Fatal(err)
	}
	return signer.PublicKey()
}
