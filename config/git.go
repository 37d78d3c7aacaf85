package config

import (
	"crypto/x509"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
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
	// PullRequestTitle and PullRequestBody are Go text/templates of the
	// pull requests' title and body, over .RepoURL, .Base, .Head, .Apps
	// and .Updates (each .App, .Image, .Alias, .File, .From, .To,
	// .Revision, .Source, .ShortRevision, .Link, .RevisionLink): every
	// value the pull request changes, from the base's value. Empty is
	// crowsnest's title and table (docs/pull-requests.md).
	PullRequestTitle string `yaml:"pullRequestTitle"`
	PullRequestBody  string `yaml:"pullRequestBody"`
	// SigningKey, when set, is an ASCII-armored OpenPGP private key
	// (env:<VAR> or file:<absolute path>) that signs every commit;
	// SigningKeyPassphrase decrypts it when it is protected.
	SigningKey           SecretRef `yaml:"signingKey"`
	SigningKeyPassphrase SecretRef `yaml:"signingKeyPassphrase"`
	// CommitMethod is how write-back commits are made: "git" (the
	// default: a commit pushed with Git) or "api" (created through the
	// GitHub API with the credentials that would have pushed, so GitHub
	// signs it and a GitHub App's commits show as Verified; GitHub
	// repositories only, and without SigningKey), as argocd-image-
	// updater's --git-commit-method.
	CommitMethod string `yaml:"commitMethod"`
	// TLS is the HTTPS trust per Git server host ("git.example.com", or
	// "git.example.com:8443" as in the repository URLs): a private CA to
	// trust besides the system roots, or, explicitly, no verification.
	// Other servers are verified against the system roots.
	TLS map[string]GitTLS `yaml:"tls"`
	// Refresh is how crowsnest asks Argo CD to look at an Application it
	// has just written a commit for (Argo CD's argocd.argoproj.io/refresh
	// annotation): "normal" (the default), "hard" (also drops Argo CD's
	// manifest cache) or "none" (wait for Argo CD's own poll, three
	// minutes by default).
	Refresh string `yaml:"refresh"`
	// Forges names the forge of each Git server host that pull requests
	// are opened on ("git.example.com", or "git.example.com:3000" as in
	// the repository URLs). github.com, gitlab.com, bitbucket.org,
	// dev.azure.com, *.visualstudio.com and codeberg.org need no entry;
	// an entry for github.com may leave its kind out.
	Forges map[string]GitForge `yaml:"forges"`
	// PullRequestsInDenyWindows opens and updates pull requests while a
	// deny window holds write-backs: merging one is the deploy, which a
	// person does. Off, a pull request waits for the window like a push.
	PullRequestsInDenyWindows bool `yaml:"pullRequestsInDenyWindows"`
}

// GitForge is the forge serving one Git host.
type GitForge struct {
	// Kind is github, gitlab, gitea, forgejo, bitbucket,
	// bitbucket-server or azure-devops.
	Kind string `yaml:"kind"`
	// API is the API's base URL when it is not where Kind's default puts
	// it (https://HOST/api/v3 for GitHub Enterprise, /api/v4 for GitLab,
	// /api/v1 for Gitea and Forgejo).
	API string `yaml:"api"`
	// UseNotificationsGitHubApp lends the GitHub App of the notifications'
	// github service (the one for this host) to pull requests whose
	// pushing credentials carry no token (an SSH key): their API calls
	// are made as the app's installation. It is the operator's
	// credential, used for every tenant's repositories on the host, so it
	// is off unless asked for; credentials with a token keep using it.
	UseNotificationsGitHubApp bool `yaml:"useNotificationsGitHubApp"`
}

// githubHosts are the hosts whose forge is GitHub without an entry: an
// entry for one may leave its kind out.
var githubHosts = []string{"github.com", "www.github.com"}

// ForgeKinds are the kinds of forge GitForge.Kind takes.
var ForgeKinds = []string{ForgeGitHub, "gitlab", "gitea", "forgejo", "bitbucket", "bitbucket-server", "azure-devops"}

// ForgeGitHub is GitHub's kind (GitForge.Kind).
const ForgeGitHub = "github"

// Git commit methods (Git.CommitMethod).
const (
	GitCommitMethodGit = "git"
	GitCommitMethodAPI = "api"
)

// Git refresh modes (Git.Refresh).
const (
	GitRefreshNormal = "normal"
	GitRefreshHard   = "hard"
	GitRefreshNone   = "none"
)

// GitTLS is the HTTPS trust for one Git server.
type GitTLS struct {
	// CAFile (an absolute path) and CAData hold PEM CA certificates.
	CAFile string `yaml:"caFile"`
	CAData string `yaml:"caData"`
	// InsecureSkipVerify turns certificate verification off for this
	// server.
	InsecureSkipVerify bool `yaml:"insecureSkipVerify"`
}

// gitHostRE matches a host or host:port as it appears in a repository URL.
var gitHostRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?$`)

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
	if g.Refresh == "" {
		g.Refresh = GitRefreshNormal
	}
	for host, f := range g.Forges {
		if f.Kind == "" && slices.Contains(githubHosts, host) {
			f.Kind = ForgeGitHub
			g.Forges[host] = f
		}
	}
	if g.CommitMethod == "" {
		g.CommitMethod = GitCommitMethodGit
	}
}

func (g *Git) validate(path string, errs *fieldErrors) {
	if strings.ContainsAny(g.Author.Name, "<>\n") {
		errs.invalid(fieldpath.Join(path, "author.name"), "must not contain '<', '>' or a newline")
	}
	if _, err := mail.ParseAddress(g.Author.Email); err != nil || strings.ContainsAny(g.Author.Email, "<>\n ") {
		errs.invalid(fieldpath.Join(path, "author.email"), "want an email address like bot@example.com, got %q", g.Author.Email)
	}
	for _, t := range []struct{ key, text string }{
		{"commitMessage", g.CommitMessage}, {"pullRequestTitle", g.PullRequestTitle}, {"pullRequestBody", g.PullRequestBody},
	} {
		if t.text == "" {
			continue
		}
		if _, err := template.New(t.key).Parse(t.text); err != nil {
			errs.invalid(fieldpath.Join(path, t.key), "%v", err)
		}
	}
	for _, f := range []struct {
		name string
		ref  SecretRef
	}{{"signingKey", g.SigningKey}, {"signingKeyPassphrase", g.SigningKeyPassphrase}} {
		if f.ref.Key != "" {
			errs.invalid(fieldpath.Join(path, f.name), "$%s: Secret references work in notifications only; use env:<VAR> or file:<absolute path>", f.ref.Key)
		}
	}
	if g.SigningKey.IsZero() && !g.SigningKeyPassphrase.IsZero() {
		errs.invalid(fieldpath.Join(path, "signingKeyPassphrase"), "set without signingKey")
	}
	switch g.CommitMethod {
	case GitCommitMethodGit:
	case GitCommitMethodAPI:
		if !g.SigningKey.IsZero() {
			errs.invalid(fieldpath.Join(path, "commitMethod"), "api: GitHub signs the commits its API makes; leave %s out or set commitMethod git", fieldpath.Join(path, "signingKey"))
		}
	default:
		errs.invalid(fieldpath.Join(path, "commitMethod"), "want git or api, got %q", g.CommitMethod)
	}
	switch g.Refresh {
	case GitRefreshNormal, GitRefreshHard, GitRefreshNone:
	default:
		errs.invalid(fieldpath.Join(path, "refresh"), "want normal, hard or none, got %q", g.Refresh)
	}
	for _, host := range slices.Sorted(maps.Keys(g.TLS)) {
		t := g.TLS[host]
		p := fieldpath.Join(path, "tls") + "[" + host + "]"
		if !gitHostRE.MatchString(host) {
			errs.invalid(p, "want a host or host:port as in the repository URL (git.example.com, git.example.com:8443), got %q", host)
		}
		if t.CAFile != "" && !filepath.IsAbs(t.CAFile) {
			errs.invalid(fieldpath.Join(p, "caFile"), "must be an absolute path, got %q", t.CAFile)
		}
		if t.CAData != "" && !x509.NewCertPool().AppendCertsFromPEM([]byte(t.CAData)) {
			errs.invalid(fieldpath.Join(p, "caData"), "no PEM certificate found")
		}
		if t.InsecureSkipVerify && (t.CAFile != "" || t.CAData != "") {
			errs.invalid(fieldpath.Join(p, "insecureSkipVerify"), "set together with a CA: set either the CA to verify against or insecureSkipVerify")
		}
		if !t.InsecureSkipVerify && t.CAFile == "" && t.CAData == "" {
			errs.invalid(p, "set caFile, caData or insecureSkipVerify")
		}
	}
	g.validateForges(path, errs)
}

// validateForges checks git.forges.
func (g *Git) validateForges(path string, errs *fieldErrors) {
	for _, host := range slices.Sorted(maps.Keys(g.Forges)) {
		f := g.Forges[host]
		p := fieldpath.Join(path, "forges") + "[" + host + "]"
		if !gitHostRE.MatchString(host) || host != strings.ToLower(host) {
			errs.invalid(p, "want a lower-case host or host:port as in the repository URLs (git.example.com, git.example.com:3000), got %q", host)
		}
		if !slices.Contains(ForgeKinds, f.Kind) {
			errs.invalid(fieldpath.Join(p, "kind"), "unsupported value %q, want one of %s", f.Kind, strings.Join(ForgeKinds, ", "))
		}
		if f.API != "" && (f.Kind == "bitbucket-server" || f.Kind == "azure-devops" || f.Kind == "bitbucket") {
			errs.invalid(fieldpath.Join(p, "api"), "%s takes its API address from the repository URL; leave api out", f.Kind)
		} else if f.API != "" {
			u, err := url.Parse(f.API)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				errs.invalid(fieldpath.Join(p, "api"), "want an http(s) URL without credentials, query or fragment, got %q", f.API)
			}
		}
		if f.UseNotificationsGitHubApp && f.Kind != ForgeGitHub && slices.Contains(ForgeKinds, f.Kind) {
			errs.invalid(fieldpath.Join(p, "useNotificationsGitHubApp"), "works on GitHub only (kind github), not %s", f.Kind)
		}
	}
}

// CABundle returns the PEM certificates of CAData and CAFile (read now),
// or an error naming the file and what is wrong with it.
func (t GitTLS) CABundle() ([]byte, error) {
	bundle := []byte(t.CAData)
	if t.CAFile == "" {
		return bundle, nil
	}
	b, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("caFile: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("caFile %s: no PEM certificate found", t.CAFile)
	}
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	return append(bundle, b...), nil
}
