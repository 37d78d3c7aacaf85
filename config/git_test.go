package config

import (
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
`))
	want := []FieldError{
		{Path: "git.author.name", Line: 4, Msg: "must not contain"},
		{Path: "git.author.email", Line: 4, Msg: "want an email address"},
		{Path: "git.commitMessage", Line: 5, Msg: "unclosed action"},
		{Path: "git.signingKeyPassphrase", Line: 6, Msg: "Secret references work in notifications only"},
		{Path: "git.signingKeyPassphrase", Line: 6, Msg: "set without signingKey"},
	}
	if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
