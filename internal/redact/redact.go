package redact

import (
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "***"

// rule masks one shape of secret. gate is a cheap test that the shape
// may be present, given the text and its lower-case form, so that the
// text of most log attributes (names, tags, numbers) never meets a
// regular expression; mask rewrites one match given as submatch indexes
// into s, or returns it unchanged.
type rule struct {
	gate func(s, lower string) bool
	re   *regexp.Regexp
	mask func(s string, m []int) string
}

// secretName is the end of a parameter or JSON key whose value is a
// secret: access_token, X-Amz-Signature, client_secret, apiKey.
const secretName = `[\w.-]*?(?:token|password|passwd|secret|api[_-]?key|apikey|signature|credentials?)`

// secretWords are in every name secretName and the short names (key,
// sig, pwd, pass, auth) match: a text without any is not looked at.
var secretWords = []string{"token", "pass", "secret", "key", "sig", "credential", "pwd", "auth"}

// rules are applied in order, each to the result of the one before.
var rules = []rule{
	// An HTTP credentials header: "Authorization: Bearer x",
	// "Proxy-Authorization=Basic x", "Private-Token: x". The header's
	// name and scheme stay.
	{
		gate: func(s, lower string) bool {
			return strings.ContainsAny(s, ":=") && containsAny(lower, "authorization", "private-token", "x-api-key", "x-auth-token", "x-registry-auth")
		},
		re: regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|private-token|x-api-key|x-auth-token|x-registry-auth)(["']?\s*[:=]\s*["']?)(?:(bearer|basic|token|digest|negotiate|ntlm)\s+)?([^\s"',;]+)`),
		mask: func(s string, m []int) string {
			head := s[m[2]:m[5]]
			if m[6] >= 0 {
				head += s[m[6]:m[7]] + " "
			}
			return head + Mask
		},
	},
	// A bearer token on its own ("Bearer eyJhbGci..."). English ("bearer
	// token missing") and the challenge's auth-params (Bearer
	// realm="...") are left: a credential has a digit or punctuation and
	// is not a name=value pair.
	{
		gate: func(_, lower string) bool { return strings.Contains(lower, "bearer") },
		re:   regexp.MustCompile(`(?i)\b(bearer)\s+([A-Za-z0-9._~+/-]+=*)`),
		mask: func(s string, m []int) string {
			tok := s[m[4]:m[5]]
			if tok == Mask || !strings.ContainsAny(tok, "0123456789._~+/-=") {
				return s[m[0]:m[1]]
			}
			if m[1] < len(s) && (s[m[1]] == '"' || isWordByte(s[m[1]])) {
				return s[m[0]:m[1]] // realm="..." or a longer word
			}
			return s[m[2]:m[3]] + " " + Mask
		},
	},
	// User information in a URL with a scheme: everything between "://"
	// and the last "@" of the authority (a raw "@" in a password too).
	// An SSH login without a password is not a secret and stays.
	{
		gate: func(s, _ string) bool { return strings.Contains(s, "://") && strings.Contains(s, "@") },
		re:   regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*)://([^\s/"<>\\]*)@`),
		mask: func(s string, m []int) string {
			scheme, userinfo := strings.ToLower(s[m[2]:m[3]]), s[m[4]:m[5]]
			if userinfo == Mask || userinfo == "" || (isSSHScheme(scheme) && !strings.Contains(userinfo, ":")) {
				return s[m[0]:m[1]]
			}
			return s[m[2]:m[3]] + "://" + Mask + "@"
		},
	},
	// User information with a password and no scheme, as people write it
	// in image references and scp-like Git addresses:
	// "user:pass@registry.example.com/app", "user:pass@host:org/repo".
	// It starts a word; a tag followed by a digest (app:1.0@sha256:...)
	// is not one.
	{
		gate: func(s, _ string) bool { return colonBeforeAt(s) },
		re:   regexp.MustCompile(`(?:^|[\s"'=(,<\[{;|])([^\s/@:"'<>()\[\]{},;|=]+:[^\s/"'<>]+)@([A-Za-z0-9][A-Za-z0-9.-]*)`),
		mask: func(s string, m []int) string {
			if isDigest(s[m[4]:]) {
				return s[m[0]:m[1]]
			}
			return s[m[0]:m[2]] + Mask + s[m[3]:m[1]]
		},
	},
	// A secret query or form parameter (?access_token=, &password=,
	// X-Amz-Signature=, key=), wherever it shows.
	{
		gate: func(s, lower string) bool { return strings.Contains(s, "=") && containsAny(lower, secretWords...) },
		re:   regexp.MustCompile(`(?i)(?:^|[?&;\s"'{(,])(` + secretName + `|key|sig|pwd|pass|auth)=([^&\s"'#,;(){}<>]+)`),
		mask: func(s string, m []int) string { return s[m[0]:m[4]] + Mask },
	},
	// A secret JSON member: "password": "...", "client_secret":"...".
	{
		gate: func(s, lower string) bool {
			return (strings.Contains(s, `":`) || strings.Contains(s, `" :`)) && containsAny(lower, secretWords...)
		},
		re:   regexp.MustCompile(`(?i)("` + secretName + `"\s*:\s*")((?:[^"\\]|\\.)*)"`),
		mask: func(s string, m []int) string { return s[m[2]:m[3]] + Mask + `"` },
	},
	// Tokens of well-known shapes: Slack (xoxb-, xapp-), GitHub (ghp_,
	// github_pat_) and GitLab (glpat-) tokens.
	{
		gate: func(s, _ string) bool {
			return containsAny(s, "xox", "xapp-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-")
		},
		re:   regexp.MustCompile(`\b(xox[abposre]-|xapp-|gh[pousr]_|github_pat_|glpat-)[A-Za-z0-9_-]+`),
		mask: func(s string, m []int) string { return s[m[2]:m[3]] + Mask },
	},
	// Webhook URLs whose path is the secret: Slack incoming webhooks and
	// workflows, Discord and Microsoft Teams webhooks.
	{
		gate: func(s, lower string) bool {
			return strings.Contains(s, "://") && containsAny(lower, "hooks.slack.com", "discord", "webhook.office.com")
		},
		re:   regexp.MustCompile(`(?i)(https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/|(?:[\w-]+\.)?discord(?:app)?\.com/api/webhooks/|[\w.-]*webhook\.office\.com/))[^\s"'<>:]+`),
		mask: func(s string, m []int) string { return s[m[2]:m[3]] + Mask },
	},
}

// String returns s with every secret it can recognize masked: user
// information in URLs (https://user:token@host, user:pass@host/path; an
// SSH login without a password stays), secret query parameters (token=,
// password=, access_token=, X-Amz-Signature=), Authorization headers and
// bearer tokens, secret JSON members, Slack, GitHub and GitLab tokens,
// and the paths of Slack, Discord and Teams webhook URLs. Everything
// else is left as it is; String(String(s)) == String(s).
func String(s string) string {
	// Masking only takes text away, so the lower-case form of the input
	// serves every rule's gate.
	lower := strings.ToLower(s)
	for i := range rules {
		r := &rules[i]
		if r.gate(s, lower) {
			s = r.apply(s)
		}
	}
	return s
}

// URL is String for a value known to be a URL: the name says what the
// caller holds, the rule is the same.
func URL(raw string) string { return String(raw) }

func (r *rule) apply(s string) string {
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[0]])
		b.WriteString(r.mask(s, m))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// isSSHScheme says whether a URL scheme is Git over SSH, whose user name
// is a login (git@), not a secret.
func isSSHScheme(scheme string) bool {
	switch scheme {
	case "ssh", "git+ssh", "ssh+git", "sftp":
		return true
	}
	return false
}

// digestRE is an OCI digest: algorithm, colon, at least 32 hex digits.
var digestRE = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}`)

func isDigest(s string) bool { return digestRE.MatchString(s) }

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// colonBeforeAt reports whether some "@" in s has a ":" before it in the
// same word and no "/" between them: user:pass@ may be there.
func colonBeforeAt(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			continue
		}
	back:
		for j := i - 1; j >= 0; j-- {
			switch s[j] {
			case ':':
				return true
			case '/', '@', ' ', '\t', '\n', '"', '\'':
				break back
			}
		}
	}
	return false
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
