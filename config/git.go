package config

import (
	"net/mail"
	"strings"
	"text/template"
)

// Git configures Git write-back commits: who they are by, what they say
// and whether they are signed. argocd-image-updater keeps the same settings
// in its ConfigMap (git.user, git.email, git.commit-message-template,
// git.commit-signing-key).
type Git struct {
	// Author of the commits; the committer is the same.
	Author GitAuthor `yaml:"author"`
	// CommitMessage is a Go text/template over .RepoURL, .Branch, .Apps
	// (sorted names) and .Updates (each .App, .Image, .Alias, .File,
	// .From, .To); empty is argocd-image-updater's message.
	CommitMessage string `yaml:"commitMessage"`
	// SigningKey, when set, is an ASCII-armored OpenPGP private key
	// (env:<VAR> or file:<absolute path>) that signs every commit;
	// SigningKeyPassphrase decrypts it when it is protected.
	SigningKey           SecretRef `yaml:"signingKey"`
	SigningKeyPassphrase SecretRef `yaml:"signingKeyPassphrase"`
}

// GitAuthor names a commit's author.
type GitAuthor struct {
	Name  string `yaml:"name"`
	Email string `yaml:"email"`
}

// Default Git author: a tool, not a person, as argocd-image-updater signs.
const (
	DefaultGitAuthorName  = "crowsnest"
	DefaultGitAuthorEmail = "crowsnest@noreply.crowsnest.dev"
)

func (g *Git) setDefaults() {
	if g.Author.Name == "" {
		g.Author.Name = DefaultGitAuthorName
	}
	if g.Author.Email == "" {
		g.Author.Email = DefaultGitAuthorEmail
	}
}

func (g *Git) validate(path string, errs *fieldErrors) {
	if strings.ContainsAny(g.Author.Name, "<>\n") {
		errs.invalid(join(path, "author.name"), "must not contain '<', '>' or a newline")
	}
	if _, err := mail.ParseAddress(g.Author.Email); err != nil || strings.ContainsAny(g.Author.Email, "<>\n ") {
		errs.invalid(join(path, "author.email"), "want an email address like bot@example.com, got %q", g.Author.Email)
	}
	if g.CommitMessage != "" {
		if _, err := template.New("commit-message").Parse(g.CommitMessage); err != nil {
			errs.invalid(join(path, "commitMessage"), "%v", err)
		}
	}
	for _, f := range []struct {
		name string
		ref  SecretRef
	}{{"signingKey", g.SigningKey}, {"signingKeyPassphrase", g.SigningKeyPassphrase}} {
		if f.ref.Key != "" {
			errs.invalid(join(path, f.name), "$%s: Secret references work in notifications only; use env:<VAR> or file:<absolute path>", f.ref.Key)
		}
	}
	if g.SigningKey.IsZero() && !g.SigningKeyPassphrase.IsZero() {
		errs.invalid(join(path, "signingKeyPassphrase"), "set without signingKey")
	}
}
