package config

import (
	"errors"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../examples/config/crowsnest.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example), "", "a: [", "- a", header, header + "watch: {namespaces: [a, 1, {b: c}]}\n",
		header + "controller: {workers: 0x10, retryBaseDelay: 1d}\n", header + "x: &a [*a]\n",
		header + "leaderElection: {enabled: yes, leaseDuration: 99999999999d}\n",
		notificationsDoc, header + "notifications: {services: {s: {webhook: {url: 'https://x', timeout: -1s}}}, triggers: {a: []}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Errors) == 0 {
				t.Fatalf("Parse error %v is not a non-empty *ValidationError", err)
			}
			return
		}
		// Whatever parses is valid and complete.
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
	})
}

// FuzzParseDuration holds ParseDuration to arithmetic: a duration it
// accepts is exactly its days plus the Go duration after them, never a
// value that wrapped around int64.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "1h30m", "7d", "1d12h", "2d12h", " 3d ", "0", "0d", "0d-5m", "1d-1h", "-1d",
		"106751d", "106752d", "200000d", "4294967295d", "99999999999d", "106751d23h47m16s", "d", "1dd", "1.5d", "+1d", "1d1d"} {
		f.Add(s)
	}
	day := big.NewInt(int64(24 * time.Hour))
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid duration") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		trimmed := strings.TrimSpace(s)
		want := big.NewInt(0)
		if i := strings.IndexByte(trimmed, 'd'); i > 0 {
			days, ok := new(big.Int).SetString(trimmed[:i], 10)
			if !ok {
				t.Fatalf("accepted %q with days %q that are not a number", s, trimmed[:i])
			}
			want.Mul(days, day)
			trimmed = trimmed[i+1:]
		}
		if trimmed != "" {
			rest, err := time.ParseDuration(trimmed)
			if err != nil {
				t.Fatalf("accepted %q whose rest %q is not a Go duration: %v", s, trimmed, err)
			}
			want.Add(want, big.NewInt(int64(rest)))
		}
		if want.Cmp(big.NewInt(int64(d.Duration))) != 0 {
			t.Fatalf("ParseDuration(%q) = %d ns, want %s ns", s, int64(d.Duration), want)
		}
		// What it accepts, it writes back in a form it reads.
		again, err := ParseDuration(d.String())
		if err != nil || again != d {
			t.Fatalf("round trip of %q via %q: %v, %v", s, d.String(), again, err)
		}
	})
}

// FuzzParseCredentialRef: references round-trip, and an error never
// repeats an input that names no known source, or an env: name (either
// may be a pasted "user:password").
func FuzzParseCredentialRef(f *testing.F) {
	for _, s := range []string{"pullsecret:argocd/dockerhub", "secret:argocd/creds#token", "env:REGISTRY_SECRET",
		"ext:/app/auth.sh", "dockerconfig:/root/.docker/config.json", "user:hunter2-password", "secret:a/b", "secret:a/b#",
		"secret:A/b#c", "pullsecret:a", "env:1X", "ext:relative", ":", "", "pullsecret:a/b/c", "secret:a/b#c#d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseCredentialRef(s)
		if err != nil {
			src, rest, _ := strings.Cut(s, ":")
			echoes := false // sources whose errors name a path or Secret
			for _, k := range []CredentialSource{CredsPullSecret, CredsSecret, CredsExt, CredsDockerConfig} {
				echoes = echoes || CredentialSource(src) == k
			}
			// The error may name the unknown source: take that out first
			// (for "m:m" the source reads the same as the rest).
			msg := strings.Replace(err.Error(), strconv.Quote(src), "", 1)
			if !echoes && rest != "" && strings.Contains(msg, strconv.Quote(rest)) {
				t.Fatalf("error %q repeats the input %q", err, s)
			}
			return
		}
		if ref.String() != s {
			t.Fatalf("ParseCredentialRef(%q).String() = %q", s, ref.String())
		}
	})
}

// FuzzParseSecretRef: references round-trip; an input that is not a
// reference, or a bad env: name (a pasted secret), is never repeated in
// the error.
func FuzzParseSecretRef(f *testing.F) {
	for _, s := range []string{"$slack-token", "env:SLACK_TOKEN", "file:/var/run/secrets/slack", "xoxb-123-secret",
		"$", "$a b", "env:", "env:1A", "file:relative", "file:", "https://hooks.example/secret-path", "$a$b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseSecretRef(s)
		if err != nil {
			rest := strings.TrimPrefix(strings.TrimPrefix(s, "env:"), "$")
			if !strings.HasPrefix(s, "file:") && rest != "" && strings.Contains(err.Error(), strconv.Quote(rest)) {
				t.Fatalf("error %q repeats the input %q", err, s)
			}
			return
		}
		if ref.String() != s {
			t.Fatalf("ParseSecretRef(%q).String() = %q", s, ref.String())
		}
	})
}

// FuzzArgoCDConfigMapSecrets loads a service block whose `$key`
// references read a Secret: whatever the block, no error repeats a
// value read from the Secret.
func FuzzArgoCDConfigMapSecrets(f *testing.F) {
	f.Add("service.email", "host: $a\nport: 25\nfrom: $b\nusername: u\npassword: $a", "smtp.internal SEKRET", "not-an-address")
	f.Add("service.webhook.hook", "url: $a\nheaders: [{name: $b, value: $a}]", "::not a url 0xSEKRET", "Bad Header")
	f.Add("service.slack", "token: $a\napiURL: $b\nusername: $b", "xoxb-SEKRET", "ftp://SEKRET")
	f.Add("service.webhook.w", "url: https://x/$a\nbasicAuth: {username: $b, password: $a}", "p@ss word", "user\nname")
	f.Add("service.email.mail", "{host: $a, port: $b}", "h", "SEKRET-port")
	f.Fuzz(func(t *testing.T, key, value, a, b string) {
		_, err := ParseArgoCDConfigMap(map[string]string{key: value}, map[string][]byte{"a": []byte(a), "b": []byte(b)})
		if err == nil {
			return
		}
		for _, v := range []string{a, b} {
			// Short values occur in any message by chance.
			if len(v) >= 6 && !strings.Contains(value, v) && !strings.Contains(key, v) && strings.Contains(err.Error(), v) {
				t.Fatalf("error repeats the Secret value %q:\n%v", v, err)
			}
		}
	})
}
