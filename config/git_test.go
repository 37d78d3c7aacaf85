package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGitSection(t *testing.T) {
	c, err := Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Git.Author != (GitAuthor{Name: DefaultGitAuthorName, Email: DefaultGitAuthorEmail}) {
		t.Errorf("default author %+v", c.Git.Author)
	}
	if c.Git.Refresh != GitRefreshNormal {
		t.Errorf("default refresh %q, want %q", c.Git.Refresh, GitRefreshNormal)
	}
	if c.Git.CommitMethod != GitCommitMethodGit {
		t.Errorf("default commitMethod %q, want %q", c.Git.CommitMethod, GitCommitMethodGit)
	}
	c, err = Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  author: {name: Release Bot, email: bot@example.com}
  commitMessage: "deploy {{range .Apps}}{{.}}{{end}}"
  signingKey: file:/etc/key.asc
  signingKeyPassphrase: env:PASS
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Git.SigningKey.File != "/etc/key.asc" || c.Git.SigningKeyPassphrase.Env != "PASS" || c.Git.Author.Name != "Release Bot" {
		t.Errorf("parsed %+v", c.Git)
	}

	_, err = Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  author: {name: "a <b>", email: not-an-address}
  commitMessage: "{{.Apps"
  signingKeyPassphrase: $pass
  refresh: soft
  pullRequestTitle: "{{if}}"
  pullRequestBody: "{{range .Updates}}"
`))
	want := []FieldError{
		{Path: "git.author.name", Line: 4, Msg: "must not contain"},
		{Path: "git.author.email", Line: 4, Msg: "want an email address"},
		{Path: "git.commitMessage", Line: 5, Msg: "unclosed action"},
		{Path: "git.pullRequestTitle", Line: 8, Msg: "missing value for if"},
		{Path: "git.pullRequestBody", Line: 9, Msg: "unexpected EOF"},
		{Path: "git.signingKeyPassphrase", Line: 6, Msg: "Secret references work in notifications only"},
		{Path: "git.signingKeyPassphrase", Line: 6, Msg: "set without signingKey"},
		{Path: "git.refresh", Line: 7, Msg: `want normal, hard or none, got "soft"`},
	}
	if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// GitHub signs the commits its API makes: an OpenPGP key with
// commitMethod api is refused, naming both fields.
func TestGitCommitMethod(t *testing.T) {
	c, err := Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\ngit:\n  commitMethod: api\n"))
	if err != nil || c.Git.CommitMethod != GitCommitMethodAPI {
		t.Fatalf("err %v, commitMethod %q", err, c.Git.CommitMethod)
	}
	_, err = Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  commitMethod: api
  signingKey: file:/etc/key.asc
`))
	want := []FieldError{{Path: "git.commitMethod", Line: 4, Msg: "api: GitHub signs the commits its API makes; leave git.signingKey out"}}
	if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	_, err = Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\ngit:\n  commitMethod: graphql\n"))
	want = []FieldError{{Path: "git.commitMethod", Line: 4, Msg: `want git or api, got "graphql"`}}
	if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestGitTLS(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, []byte(testCA()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  tls:
    git.example.com:
      caFile: ` + caFile + `
    git.example.com:8443:
      insecureSkipVerify: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Git.TLS["git.example.com:8443"]; !got.InsecureSkipVerify {
		t.Errorf("git.tls[git.example.com:8443] = %+v", got)
	}
	bundle, err := c.Git.TLS["git.example.com"].CABundle()
	if err != nil || string(bundle) != testCA() {
		t.Errorf("CABundle() = %q, %v; want the file's certificate", bundle, err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (GitTLS{CAFile: notPEM}).CABundle(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("CABundle of a non-PEM file: %v", err)
	}
	if _, err := (GitTLS{CAFile: filepath.Join(dir, "missing")}).CABundle(); err == nil || !strings.Contains(err.Error(), "caFile") {
		t.Errorf("CABundle of a missing file: %v", err)
	}

	_, err = Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  tls:
    https://git.example.com/org:
      insecureSkipVerify: true
    a.example.com:
      caFile: relative/ca.crt
    b.example.com:
      caData: not a certificate
    c.example.com:
      caData: |
` + indent(testCA(), "        ") + `
      insecureSkipVerify: true
    d.example.com: {}
`))
	pemLines := strings.Count(testCA(), "\n")
	want := []FieldError{
		{Path: "git.tls[a.example.com].caFile", Line: 8, Msg: "must be an absolute path"},
		{Path: "git.tls[b.example.com].caData", Line: 10, Msg: "no PEM certificate found"},
		{Path: "git.tls[c.example.com].insecureSkipVerify", Line: 13 + pemLines, Msg: "set together with a CA"},
		{Path: "git.tls[d.example.com]", Line: 14 + pemLines, Msg: "set caFile, caData or insecureSkipVerify"},
		{Path: "git.tls[https://git.example.com/org]", Line: 6, Msg: "want a host or host:port"},
	}
	got := gotFieldErrors(t, err, want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
