package redact_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// Markers around a planted secret: when either survives, part of the
// secret did.
const (
	secretStart = "S3cR"
	secretEnd   = "t9Q"
)

// plantings write a secret the way it shows in a URL, header or body.
var plantings = []func(secret string) string{
	func(s string) string {
		return (&url.URL{Scheme: "https", User: url.UserPassword("bot", s), Host: "git.example.com", Path: "/org/r.git"}).String()
	},
	func(s string) string {
		return (&url.URL{Scheme: "http", User: url.User(s), Host: "127.0.0.1:8080", Path: "/r"}).String()
	},
	func(s string) string {
		return (&url.URL{Scheme: "ssh", User: url.UserPassword("git", s), Host: "git.example.com", Path: "/r"}).String()
	},
	func(s string) string { return "robot:" + keep(s, userinfoBytes) + "@registry.example.com/app:1.0" },
	func(s string) string { return "deploy:" + keep(s, userinfoBytes) + "@git.example.com:org/repo.git" },
	func(s string) string {
		return "https://api.example.com/x?a=1&access_token=" + url.QueryEscape(s) + "&b=2"
	},
	func(s string) string { return "password=" + url.QueryEscape(s) },
	func(s string) string { return "Authorization: Bearer " + keep(s, token68Bytes) },
	func(s string) string { return "Proxy-Authorization: Basic " + keep(s, token68Bytes) },
	func(s string) string { return "Bearer " + keep(s, token68Bytes) },
	func(s string) string { b, _ := json.Marshal(s); return `{"client_secret":` + string(b) + `}` },
	func(s string) string { return "https://hooks.slack.com/services/T0/B0/" + keep(s, alnum) },
	func(s string) string { return "xoxb-" + keep(s, alnum+"-") },
}

const (
	alnum         = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	token68Bytes  = alnum + "-._~+/"
	userinfoBytes = alnum + "-._~!$&+,;=:@%*"
)

// keep drops the bytes of s not in allowed.
func keep(s, allowed string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(allowed, r) {
			return r
		}
		return -1
	}, s)
}

// FuzzString: a secret planted in any of the shapes the rule knows,
// between arbitrary text, never survives, not even in part; and the rule
// never changes its own output. Seeds: testdata/fuzz/FuzzString, one per
// planting.
func FuzzString(f *testing.F) {
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string, form uint8) {
		planted := plantings[int(form)%len(plantings)](secretStart + secret + secretEnd)
		if strings.Contains(prefix+suffix, secretStart) || strings.Contains(prefix+suffix, secretEnd) {
			t.Skip("the surrounding text holds a marker")
		}
		in := prefix + " " + planted + " " + suffix
		out := redact.String(in)
		if strings.Contains(out, secretStart) || strings.Contains(out, secretEnd) {
			t.Fatalf("the secret survives:\n in: %q\nout: %q", in, out)
		}
		if again := redact.String(out); again != out {
			t.Fatalf("not idempotent:\n   %q\n-> %q", out, again)
		}
		if again := redact.String(prefix); again != redact.String(again) {
			t.Fatalf("not idempotent on %q", prefix)
		}
	})
}
