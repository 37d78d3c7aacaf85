package webhook

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

// goodPush is one sender's correctly authenticated push, the way its
// product sends it.
type goodPush struct {
	name   string
	target string // source, with ?secret= when that is the credential
	body   []byte
	header map[string]string
	repo   string // what the Listener must hear
}

func goodPushes(t *testing.T) []goodPush {
	t.Helper()
	ghcr, generic := readTestdata(t, "ghcr_package.json"), readTestdata(t, "generic.json")
	return []goodPush{
		{"ghcr HMAC", "ghcr", ghcr, map[string]string{"X-GitHub-Event": "package", GitHubSignatureHeader: signature(secret, ghcr)},
			"ghcr.io/crowsnest-dev/demo-app"},
		{"generic HMAC", "generic", generic, map[string]string{SignatureHeader: signature(secret, generic)},
			"registry.example.com:5000/payments/api"},
		{"harbor header", "harbor", readTestdata(t, "harbor.json"), map[string]string{"Authorization": secret},
			"harbor.example.com/platform/nginx"},
		{"distribution bearer", "distribution", readTestdata(t, "distribution_push.json"), bearerHeader(secret),
			"registry.internal:5000/team/app"},
		{"dockerhub bearer", "dockerhub", readTestdata(t, "dockerhub.json"), bearerHeader(secret),
			"docker.io/crowsnestdev/demo-app"},
		{"quay ?secret=", "quay?secret=" + secret, readTestdata(t, "quay.json"), nil, "quay.io/acme/worker"},
	}
}

// forgery is where a forged request goes and the credentials it carries.
type forgery struct {
	target string
	header map[string]string
}

// forgeries are the credentials a flood tries, each wrong: none, wrong
// tokens every way a token is sent, and well-formed signatures under a
// guessed key (which the receiver can only refuse after reading the body).
func forgeries(source string, body []byte) []forgery {
	return []forgery{
		{source, nil},
		{source, bearerHeader("guess")},
		{source + "?secret=guess", nil},
		{source, map[string]string{"Authorization": "guess"}},
		{source, map[string]string{"X-GitHub-Event": "package", GitHubSignatureHeader: signature("guess", body)}},
		{source, map[string]string{SignatureHeader: signature("guess", body)}},
	}
}

// An unauthenticated flood from one address does not starve the source:
// after it, a correctly authenticated push from the very same address is
// accepted, for every way of authenticating. The flood itself is answered
// 429 once the address's failure budget is spent.
func TestReceiverUnauthenticatedFloodDoesNotStarveSenders(t *testing.T) {
	const failureBurst = 10
	for _, good := range goodPushes(t) {
		for _, flood := range []int{80, 300} {
			t.Run(fmt.Sprintf("%s after %d forgeries", good.name, flood), func(t *testing.T) {
				// No refill during the test: the outcome does not depend on
				// the machine's speed. The source's burst is the default.
				lr := startLiveReceiver(t, Config{
					Sources:   allSources(),
					RateLimit: rate.Every(time.Hour), Burst: DefaultBurst,
					UnauthenticatedRateLimit: rate.Every(time.Hour), UnauthenticatedBurst: failureBurst,
				})
				source := sourceOf(good.target)
				forged := forgeries(source, good.body)
				codes := map[int]int{}
				var retryAfter string
				for i := range flood {
					f := forged[i%len(forged)]
					code, _, h := lr.postHeader(t, f.target, bytes.NewReader(good.body), f.header)
					codes[code]++
					if code == http.StatusTooManyRequests {
						retryAfter = h.Get("Retry-After")
					}
				}
				want := map[int]int{http.StatusUnauthorized: failureBurst, http.StatusTooManyRequests: flood - failureBurst}
				if diff := cmp.Diff(want, codes); diff != "" {
					t.Errorf("flood answers by status (-want +got):\n%s", diff)
				}
				if s, err := strconv.Atoi(retryAfter); err != nil || s < 1 {
					t.Errorf("flood's 429 Retry-After = %q, want whole seconds", retryAfter)
				}

				code, text, _ := lr.postHeader(t, good.target, bytes.NewReader(good.body), good.header)
				if code != http.StatusAccepted {
					t.Errorf("authenticated push after the flood: %d %q, want 202", code, text)
				}
				if diff := cmp.Diff([]string{good.repo}, repositories(lr.pushes.got())); diff != "" {
					t.Errorf("pushed repositories (-want +got):\n%s", diff)
				}
				wantCounts := map[string]float64{ResultUnauthorized: failureBurst, ResultUnauthenticatedRateLimited: float64(flood - failureBurst),
					ResultRateLimited: 0, ResultAccepted: 1}
				if diff := cmp.Diff(wantCounts, lr.counts(t, source, wantCounts)); diff != "" {
					t.Errorf("requests_total{source=%q} (-want +got):\n%s", source, diff)
				}
				if log := lr.log.String(); strings.Contains(log, "guess") || strings.Contains(log, secret) {
					t.Errorf("the receiver logged what was sent:\n%s", log)
				}
			})
		}
	}
}

func sourceOf(target string) string {
	source, _, _ := strings.Cut(target, "?")
	return source
}

func repositories(evs []PushEvent) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Repository)
	}
	return out
}

// The old protection is kept: authenticated requests above a source's
// limit still get 429, however they authenticate.
func TestReceiverAuthenticatedRateLimitOverHTTP(t *testing.T) {
	const burst = 5
	for _, good := range goodPushes(t) {
		t.Run(good.name, func(t *testing.T) {
			lr := startLiveReceiver(t, Config{Sources: allSources(), RateLimit: rate.Every(time.Hour), Burst: burst})
			var codes []int
			var retryAfter string
			for range burst + 3 {
				code, _, h := lr.postHeader(t, good.target, bytes.NewReader(good.body), good.header)
				codes = append(codes, code)
				retryAfter = h.Get("Retry-After")
			}
			want := []int{202, 202, 202, 202, 202, 429, 429, 429}
			if diff := cmp.Diff(want, codes); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if s, err := strconv.Atoi(retryAfter); err != nil || s < 3000 {
				t.Errorf("Retry-After = %q, want about an hour in seconds", retryAfter)
			}
			source := sourceOf(good.target)
			wantCounts := map[string]float64{ResultAccepted: burst, ResultRateLimited: 3, ResultUnauthenticatedRateLimited: 0}
			if diff := cmp.Diff(wantCounts, lr.counts(t, source, wantCounts)); diff != "" {
				t.Errorf("requests_total{source=%q} (-want +got):\n%s", source, diff)
			}
		})
	}
}

// The failure budget belongs to one client address (an IPv6 /64) and one
// source: other clients, and the same client's other sources, are
// unaffected, and nobody's authenticated pushes are.
func TestReceiverUnauthenticatedLimitIsPerClientAndSource(t *testing.T) {
	const burst = 3
	f := newFixture(t, Config{Sources: allSources(), UnauthenticatedRateLimit: rate.Every(time.Hour), UnauthenticatedBurst: burst})
	hub, ghcr := readTestdata(t, "dockerhub.json"), readTestdata(t, "ghcr_package.json")
	forged := map[string]string{GitHubSignatureHeader: signature("guess", ghcr)}
	signed := map[string]string{"X-GitHub-Event": "package", GitHubSignatureHeader: signature(secret, ghcr)}
	const attacker, attacker6 = "198.51.100.7:40000", "[2001:db8:1:2::7]:40000"
	steps := []struct {
		remote string
		target string
		body   []byte
		header map[string]string
	}{
		// Spend the attacker's budget on dockerhub and ghcr, and more.
		{attacker, "dockerhub", hub, nil},
		{attacker, "dockerhub?secret=guess", hub, nil},
		{attacker, "dockerhub", hub, bearerHeader("guess")},
		{attacker, "dockerhub", hub, nil},
		{attacker, "ghcr", ghcr, forged},
		{attacker, "ghcr", ghcr, forged},
		{attacker, "ghcr", ghcr, forged},
		{attacker, "ghcr", ghcr, forged},
		// Another port is the same client.
		{"198.51.100.7:40001", "dockerhub", hub, nil},
		// The attacker's other sources keep their budget.
		{attacker, "quay", hub, nil},
		// Another client keeps its budget...
		{"198.51.100.8:40000", "dockerhub", hub, nil},
		// ...and authenticated pushes get through, the attacker's own too.
		{"198.51.100.8:40000", "dockerhub?secret=" + secret, hub, nil},
		{attacker, "dockerhub?secret=" + secret, hub, nil},
		{attacker, "ghcr", ghcr, signed},
		// An IPv6 client is its /64.
		{attacker6, "dockerhub", hub, nil},
		{attacker6, "dockerhub", hub, nil},
		{attacker6, "dockerhub", hub, nil},
		{"[2001:db8:1:2::8]:1", "dockerhub", hub, nil},
		{"[2001:db8:1:3::7]:1", "dockerhub", hub, nil},
	}
	var codes []int
	for _, s := range steps {
		codes = append(codes, f.postFrom(t, s.remote, "/webhooks/registry/"+s.target, s.body, s.header).Code)
	}
	want := []int{401, 401, 401, 429, 401, 401, 401, 429, 429, 401, 401, 202, 202, 202, 401, 401, 401, 429, 401}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("answers in order (-want +got):\n%s", diff)
	}
}

// A flood from ever new addresses cannot grow the receiver's memory: the
// failures of at most MaxClients clients are remembered, and each new
// client still gets its own budget.
func TestReceiverUnauthenticatedClientsAreBounded(t *testing.T) {
	const maxClients, addresses = 16, 1000
	f := newFixture(t, Config{Sources: allSources(), MaxClients: maxClients, UnauthenticatedRateLimit: rate.Every(time.Hour)})
	hub := readTestdata(t, "dockerhub.json")
	codes := map[int]int{}
	tracked := 0
	for i := range addresses {
		remote := fmt.Sprintf("10.%d.%d.%d:1234", i>>16&0xff, i>>8&0xff, i&0xff)
		codes[f.postFrom(t, remote, "/webhooks/registry/dockerhub", hub, nil).Code]++
		tracked = max(tracked, f.rv.failures.cache.Len())
	}
	if diff := cmp.Diff(map[int]int{http.StatusUnauthorized: addresses}, codes); diff != "" {
		t.Errorf("answers by status (-want +got):\n%s", diff)
	}
	if tracked != maxClients {
		t.Errorf("clients remembered at most = %d, want %d", tracked, maxClients)
	}
	if rec := f.post(t, "/webhooks/registry/dockerhub?secret="+secret, hub, nil); rec.Code != http.StatusAccepted {
		t.Errorf("authenticated push after the flood: %d, want 202", rec.Code)
	}
}

func TestClientOf(t *testing.T) {
	tests := []struct {
		remoteAddr string
		want       string
	}{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"192.0.2.1", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:1234", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2::9]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:443", "fe80::/64"},
		{"[::1]:80", "::/64"},
		{"@", "@"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.remoteAddr, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, clientOf(tt.remoteAddr)); diff != "" {
				t.Errorf("clientOf(%q) (-want +got):\n%s", tt.remoteAddr, diff)
			}
		})
	}
}
