package redact_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // empty: unchanged
	}{
		// User information in URLs.
		{name: "https user and token", in: "https://user:t0ken@git.example.com/org/repo.git", want: "https://***@git.example.com/org/repo.git"},
		{name: "http in a log value", in: "repo=http://bot:TOKEN@127.0.0.1:8080/deploy.git branch=main", want: "repo=http://***@127.0.0.1:8080/deploy.git branch=main"},
		{name: "token as the user name", in: "cloning https://ghx_1234567890abcdef@github.com/o/r", want: "cloning https://***@github.com/o/r"},
		{name: "raw @ in the password", in: "https://user:p@ss@host.example.com/x", want: "https://***@host.example.com/x"},
		{name: "escaped password", in: "https://user:p%40ss%3Aw@host.example.com", want: "https://***@host.example.com"},
		{name: "ssh with a password", in: "ssh://git:s3cret@host.example.com/r.git", want: "ssh://***@host.example.com/r.git"},
		{name: "quoted by %q", in: `fetching "https://u:pw@h.example.com/r": EOF`, want: `fetching "https://***@h.example.com/r": EOF`},
		{name: "scheme-less image reference", in: "user:pass@registry.example.com/app:1.0", want: "***@registry.example.com/app:1.0"},
		{name: "scheme-less in a quoted error", in: `invalid image reference "user:pass@registry.example.com/app:1.0": bad`, want: `invalid image reference "***@registry.example.com/app:1.0": bad`},
		{name: "scheme-less after =", in: "web=robot:pa55@reg.example.com:5000/team/web", want: "web=***@reg.example.com:5000/team/web"},
		{name: "scp-like with a password", in: "deploy:s3cret@git.example.com:org/repo.git", want: "***@git.example.com:org/repo.git"},
		// Query and form values.
		{name: "access_token query", in: "https://api.example.com/x?access_token=abc123&page=2", want: "https://api.example.com/x?access_token=***&page=2"},
		{name: "token query", in: "GET /hook?token=s3cret", want: "GET /hook?token=***"},
		{name: "password in free text", in: "dsn host=db password=hunter2 user=app", want: "dsn host=db password=*** user=app"},
		{name: "signed URL", in: "https://b.s3.amazonaws.com/o?X-Amz-Signature=abcdef&X-Amz-Date=1", want: "https://b.s3.amazonaws.com/o?X-Amz-Signature=***&X-Amz-Date=1"},
		{name: "client_secret", in: "client_id=a&client_secret=b1", want: "client_id=a&client_secret=***"},
		{name: "key", in: "https://chat.googleapis.com/v1/spaces/A/messages?key=AIza1&token=x2", want: "https://chat.googleapis.com/v1/spaces/A/messages?key=***&token=***"},
		// Headers and bearer tokens.
		{name: "authorization bearer", in: "Authorization: Bearer eyJhbGciOi.J9.x", want: "Authorization: Bearer ***"},
		{name: "authorization basic", in: "header authorization=Basic dXNlcjpwYXNz,", want: "header authorization=Basic ***,"},
		{name: "authorization without a scheme", in: `"Authorization": "t0ken"`, want: `"Authorization": "***"`},
		{name: "private token header", in: "Private-Token: glx-123", want: "Private-Token: ***"},
		{name: "bearer alone", in: "sent Bearer abc.def-123 to the server", want: "sent Bearer *** to the server"},
		{name: "json password", in: `{"user":"a","password":"hun\"ter2","x":1}`, want: `{"user":"a","password":"***","x":1}`},
		{name: "json token", in: `{"access_token": "eyJ0"}`, want: `{"access_token": "***"}`},
		// Well-known token shapes and webhook URLs.
		{name: "slack token", in: "invalid token xoxb-123-456-abcDEF", want: "invalid token xoxb-***"},
		{name: "github token", in: "ghp_0123456789abcdefABCDEF0123456789abcd", want: "ghp_***"},
		{name: "github fine-grained token", in: "github_pat_11ABC_def", want: "github_pat_***"},
		{name: "gitlab token", in: "glpat-abcdefghij0123456789", want: "glpat-***"},
		{name: "slack webhook", in: "posting to https://hooks.slack.com/services/T000/B000/XXXXsecret: 404", want: "posting to https://hooks.slack.com/services/***: 404"},
		{name: "discord webhook", in: "https://discord.com/api/webhooks/123/abcSECRET?wait=true", want: "https://discord.com/api/webhooks/***"},
		{name: "teams webhook", in: "https://contoso.webhook.office.com/webhookb2/a@b/IncomingWebhook/c/d", want: "https://contoso.webhook.office.com/***"},

		// Left as they are.
		{name: "scp-like login", in: "git@github.com:org/repo.git"},
		{name: "ssh login", in: "ssh://git@github.com/org/repo.git"},
		{name: "plain https", in: "https://github.com/org/repo.git"},
		{name: "e-mail address", in: "from crowsnest@example.com to dev@example.com"},
		{name: "registry port and tag", in: "registry.example.com:5000/team/app:1.2.3"},
		{name: "tag and digest", in: "nginx:1.25@" + digest},
		{name: "path, tag and digest", in: "registry.example.com/app:1.0@" + digest},
		{name: "path with @", in: "https://github.com/org/repo@v1.2 and npm/@scope/pkg"},
		{name: "ordinary parameters", in: "tag=1.0 page=2 app=ns/web tokens=5 monkey=1 keys=3"},
		{name: "go-git 403", in: "pushing: authorization failed (HTTP 403)"},
		{name: "english bearer", in: "bearer token missing; Basic auth refused"},
		{name: "challenge", in: `WWW-Authenticate: Bearer realm="https://auth.example.com/token",service="registry.example.com"`},
		{name: "clock", in: "at 12:30:00 on 2026-05-01"},
		{name: "image list", in: "web=ghcr.io/org/web:~1, api=nginx:1.25"},
		{name: "already masked", in: "https://***@h.example.com ***@r.example.com/a token=*** Authorization: Bearer ***"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			got := redact.String(tt.in)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.in, diff)
			}
			if again := redact.String(got); again != got {
				t.Errorf("String is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

var errRemote = errors.New("authorization failed")

func TestError(t *testing.T) {
	base := fmt.Errorf("cloning: %w", fmt.Errorf("dial https://u:pw@h.example.com: %w", errRemote))
	got := redact.Error(base)
	if diff := cmp.Diff("cloning: dial https://***@h.example.com: authorization failed", got.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
	if !errors.Is(got, errRemote) {
		t.Error("the redacted error does not wrap the original")
	}
	plain := errors.New("nothing secret")
	if redact.Error(plain) != plain || redact.Error(nil) != nil { //nolint:errorlint // the same value, not one wrapping it
		t.Error("an error without secrets is not returned as is")
	}
}

// statusError is a remote answer whose text carries its body.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.code, e.body) }

func TestRewrite(t *testing.T) {
	safe := func(e error) (string, bool) {
		var se *statusError
		if errors.As(e, &se) && e == error(se) { //nolint:errorlint // this node of the chain, not one wrapping it
			return fmt.Sprintf("HTTP %d", se.code), true
		}
		return "", false
	}
	remote := &statusError{code: 403, body: "MARKER internal data"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "wrapped", err: fmt.Errorf("pushing to h: %w", remote), want: "pushing to h: HTTP 403"},
		{name: "joined", err: errors.Join(errors.New("first"), fmt.Errorf("second: %w", remote)), want: "first\nsecond: HTTP 403"},
		{name: "reformatted by a wrapper", err: &quoting{remote}, want: "HTTP 403"},
		{name: "nothing recognized", err: fmt.Errorf("local: %w", fs.ErrNotExist), want: "local: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Rewrite(tt.err, safe)
			if diff := cmp.Diff(tt.want, got.Error()); diff != "" {
				t.Errorf("Rewrite() (-want +got):\n%s", diff)
			}
			if !errors.Is(got, tt.err) {
				t.Error("the rewritten error does not wrap the original")
			}
		})
	}
	if redact.Rewrite(nil, safe) != nil {
		t.Error("Rewrite(nil) != nil")
	}
}

// quoting wraps an error and changes its text.
type quoting struct{ err error }

func (q *quoting) Error() string { return "failed: " + strings.ToUpper(q.err.Error()) }
func (q *quoting) Unwrap() error { return q.err }

// The rule is used on every log attribute: most values hold no secret
// and must cost next to nothing.
func BenchmarkString(b *testing.B) {
	for _, s := range []string{"team-a/web", "https://user:t0ken@git.example.com/org/repo.git", strings.Repeat("x=1 ", 64)} {
		b.Run(fmt.Sprint(len(s)), func(b *testing.B) {
			for b.Loop() {
				redact.String(s)
			}
		})
	}
}
