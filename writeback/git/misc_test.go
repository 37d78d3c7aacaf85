package git

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

func TestSignedCommit(t *testing.T) {
	entity, err := openpgp.NewEntity("Crow Bot", "", "bot@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	aw, _ := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := entity.SerializePrivate(aw, nil); err != nil {
		t.Fatal(err)
	}
	_ = aw.Close()
	aw, _ = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := entity.Serialize(aw); err != nil {
		t.Fatal(err)
	}
	_ = aw.Close()

	key, err := ReadSignKey(priv.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSignKey([]byte("not a key"), nil); err == nil {
		t.Fatal("garbage key accepted")
	}

	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	w.SignKey = key
	res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))

	repo, err := gogit.PlainOpen(s.Root + "/apps.git")
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(res.CommitSHA))
	if err != nil {
		t.Fatal(err)
	}
	if c.PGPSignature == "" {
		t.Fatal("commit not signed")
	}
	if _, err := c.Verify(pub.String()); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
}

func TestMessageTemplate(t *testing.T) {
	tmpl, err := ParseMessage("chore: {{range .Apps}}{{.}} {{end}}on {{.Branch}}\n{{range .Updates}}\n{{.File}}: {{.From}} -> {{.To}}{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMessage("{{.Nope"); err == nil {
		t.Fatal("broken template parsed")
	}
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	w.Message = tmpl
	mustApply(t, w, kustomizeWeb(url, "1.2.0"))
	head := s.Log(t, "apps", "main")[0]
	want := testgit.Commit{SHA: head.SHA, Author: head.Author, Subject: "chore: web on main", Body: "web/kustomization.yaml: 1.0.0 -> 1.2.0"}
	if diff := cmp.Diff(want, head); diff != "" {
		t.Fatalf("commit (-want +got):\n%s", diff)
	}

	bad, _ := ParseMessage("{{.Missing}}")
	w.Message = bad
	if _, err := w.Apply(t.Context(), []Change{kustomizeWeb(url, "1.3.0")}); err == nil {
		t.Fatal("template error not reported")
	}
}

func TestRedact(t *testing.T) {
	err := redact(errors.New(`fetching https://bot:hunter2@git.example.com/a.git: token hunter2 refused`), "hunter2")
	if got, want := err.Error(), "fetching https://***@git.example.com/a.git: token *** refused"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	wrapped := redact(classify("pushing", transport.ErrAuthenticationRequired), "x")
	if !errors.Is(wrapped, ErrAuth) || !errors.Is(wrapped, transport.ErrAuthenticationRequired) {
		t.Fatalf("redacted error lost its chain: %v", wrapped)
	}
	if redact(nil) != nil {
		t.Fatal("redact(nil) != nil")
	}
	clean, c := splitURL("https://bot:pw@git.example.com/a.git")
	if clean != "https://git.example.com/a.git" || c != (Credentials{Username: "bot", Password: "pw"}) {
		t.Fatalf("splitURL = %q, %+v", clean, c)
	}
}

func TestVersionOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.2.3", "1.2.3"},
		{"ghcr.io/a/b:v1", "v1"},
		{"name=localhost:5000/a/b:v2", "v2"},
		{"a/b@sha256:abc", "sha256:abc"},
		{"localhost:5000/a/b", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := versionOf(tt.in); got != tt.want {
			t.Errorf("versionOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

var testStart = time.Now()

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.op(opPush, testStart, errors.New("command error on refs/heads/main: failed to update ref"))
	m.retry()
	m.evicted()
	n, err := testutil.GatherAndCount(reg, "crowsnest_git_operations_total", "crowsnest_git_operation_duration_seconds",
		"crowsnest_git_push_retries_total", "crowsnest_git_cache_evictions_total")
	if err != nil || n != 4 {
		t.Fatalf("gathered %d series, err %v", n, err)
	}
	if got := testutil.ToFloat64(m.ops.WithLabelValues(opPush, resultRejected)); got != 1 {
		t.Fatalf("rejected pushes = %v", got)
	}
	var nilMetrics *Metrics
	nilMetrics.op(opPush, testStart, nil)
	nilMetrics.retry()
	nilMetrics.evicted()
	if !strings.Contains(DefaultMessage, "build: automatic update of") {
		t.Fatal("default message changed")
	}
}

func TestBackoffBounds(t *testing.T) {
	w := &Writer{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for attempt := 1; attempt <= 10; attempt++ {
		want := min(100*time.Millisecond<<(attempt-1), time.Second)
		for range 20 {
			if d := w.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := (&Writer{}).backoff(1); d < DefaultBackoff/2 || d > DefaultBackoff {
		t.Fatalf("default backoff %v", d)
	}
}
