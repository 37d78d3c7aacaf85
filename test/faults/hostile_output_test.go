package faults

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// At --log-level debug, a Git repository URL with a token in it (through
// which the write-back must still work) and image references written with
// user:password@ never show the token or the password in any log line.
func TestHostileSecretsInDebugLog(t *testing.T) {
	hostileTest(t)
	const (
		gitToken  = "git-t0ken-HOSTILE-7f3a"
		imagePass = "img-pa55-HOSTILE-c91e"
	)
	v := newVerdict(t, "secrets in output: --log-level debug",
		"repoURL http://bot:<token>@host/deploy.git (Git write-back), image-list with user:<password>@host/... and https://user:<password>@host/...")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{Username: "bot", Password: gitToken})
	g.CreateRepo(t, "deploy")
	g.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": "images:\n- name: " + web + "\n  newTag: 1.0.0\n"}, "initial")
	withToken := strings.Replace(g.RepoURL("deploy"), "http://", "http://bot:"+gitToken+"@", 1)
	dir := writeApps(t,
		appFile{ns: "ci", name: "git-token", annotations: map[string]string{
			annImageList: "web=" + web + ":^1", annWriteBack: "git", annTarget: "kustomization",
		}, source: fmt.Sprintf("{repoURL: %s, path: apps/web, targetRevision: main}", withToken), running: []string{web + ":1.0.0"}},
		appFile{ns: "ci", name: "image-userinfo", annotations: map[string]string{
			annImageList: fmt.Sprintf("a=user:%s@%s:^1, b=https://user:%s@%s:^1", imagePass, web, imagePass, web),
		}, source: "{repoURL: https://git.example.invalid/r.git, path: deploy}", running: []string{web + ":1.0.0"}})
	p, code := runOnce(t, dir, onceOptions{args: []string{"--log-level", "debug"}})
	lines := p.logLines()
	evs := p.events()
	debug := p.count(`"level":"DEBUG"`)
	redacted := p.count("***@")
	v.answer("exit %d; %d log lines (%d at debug), %d with credentials masked as ***@; %s", code, len(lines), debug, redacted,
		firstMessage(warnings(evs, "ci/image-userinfo")))
	n, first := occurrences(lines, gitToken, imagePass)
	v.leak(n, "%d log lines: %s", n, first)
	v.expect(debug > 0 && redacted > 0, "no debug lines (%d) or none masking credentials (%d): the row tested nothing", debug, redacted)
	v.expect(len(warnings(evs, "ci/image-userinfo")) > 0, "no Warning on ci/image-userinfo for the credentials in its image-list")
	v.loseUnless(gitFileChanged(t, g, "deploy", "apps/web/kustomization.yaml"), "the write-back through the URL's token did not land")
	v.credited(foreignEvents(evs, "ci/image-userinfo", annImageList))
	v.done()
}

// webhookFlood is how many unauthenticated requests the starvation row
// sends, a third each without credentials, with a wrong token and with a
// well-formed signature of the wrong key.
const webhookFlood = 90

// A flood of unauthenticated POSTs to the registry webhook, from the same
// address, does not use up a correctly signed sender's budget: its push
// after the flood gets 202 and the update it announces lands; neither the
// secret nor the flood's token shows in the log.
func TestHostileWebhookStarvation(t *testing.T) {
	hostileTest(t)
	const (
		secret     = "webhook-S3CR3T-HOSTILE-5d0b"
		floodToken = "flood-token-HOSTILE-e2a7"
	)
	v := newVerdict(t, "registry webhook starvation",
		fmt.Sprintf("%d unauthenticated POSTs (no credentials, a wrong token, signatures of another key), then one signed push", webhookFlood))
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0")
	dir := writeApps(t, kubeApp("ci", "web", map[string]string{"web": web}))
	p, hookAddr, metricsAddr := startWithWebhook(t, dir, secret)
	metric := func(name string) float64 { return metricSum(t, "http://"+metricsAddr+"/metrics", name) }
	// The poller's first poll of the repository records the tag set a
	// refresh is compared with.
	testwait.Within(t, "the first poll of the repository", time.Minute, func() bool { return metric("crowsnest_registry_polls_total") >= 1 })
	reg.Push(t, "team/web:1.1.0", testreg.Image(t, time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC), "linux/amd64"))

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	post := func(body string, header map[string]string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+hookAddr+"/webhooks/registry/generic", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, val := range header {
			req.Header.Set(k, val)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode
	}
	sign := func(key, body string) string {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte(body))
		return "sha256=" + hex.EncodeToString(mac.Sum(nil))
	}
	push := fmt.Sprintf(`{"repository":%q,"tag":"1.1.0"}`, web)
	codes := map[int]int{}
	for i := range webhookFlood {
		var header map[string]string
		switch i % 3 {
		case 1:
			header = map[string]string{"Authorization": "Bearer " + floodToken}
		case 2:
			header = map[string]string{"X-Crowsnest-Signature-256": sign(floodToken, push)}
		}
		codes[post(push, header)]++
	}
	floodRefreshes := metric("crowsnest_registry_refresh_requests_total")
	signed := post(push, map[string]string{"X-Crowsnest-Signature-256": sign(secret, push)})
	landed := testwait.Until(t.Context(), time.Minute, func() bool { return updated(p.events(), "ci/web", web, "1.1.0") })

	v.answer("flood answered %s, %.0f refreshes from it; the signed push %d; its update landed: %v", describeCodes(codes), floodRefreshes, signed, landed)
	v.expect(floodRefreshes == 0, "the flood caused %.0f refreshes", floodRefreshes)
	accepted := 0
	for c, k := range codes {
		if c < 300 {
			accepted += k
		}
	}
	v.expect(accepted == 0, "%d unauthenticated requests were accepted", accepted)
	v.expect(codes[http.StatusTooManyRequests] > 0, "the flood was never rate limited: %s", describeCodes(codes))
	lost := 0
	if signed != http.StatusAccepted {
		lost++
	}
	if !landed {
		lost++
	}
	v.lose(lost, "the signed push got %d (want 202), its update landed: %v", signed, landed)
	n, first := occurrences(p.logLines(), secret, floodToken)
	v.leak(n, "%d log lines: %s", n, first)
	v.done()
}

// metricSum sums the series of the metric name at url.
func metricSum(t *testing.T, url, name string) float64 {
	t.Helper()
	_, body := httpGet(t.Context(), url)
	sum := 0.0
	for line := range strings.SplitSeq(body, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		if f, err := strconv.ParseFloat(value, 64); err == nil {
			sum += f
		}
	}
	return sum
}

// describeCodes lists status codes and their counts, in code order.
func describeCodes(codes map[int]int) string {
	keys := make([]int, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, c := range keys {
		parts[i] = fmt.Sprintf("%dx %d", codes[c], c)
	}
	return strings.Join(parts, ", ")
}
