package faults

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// Two teams' Applications use one repository; one names a pull secret
// that cannot work. The poller polls the repository once per credentials,
// so the other team's Application still sees the new tag and is updated,
// and the failing secret fails only its own Application.
func TestHostileBogusPullSecretOnASharedRepository(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "polling: one team's bogus pull secret on a shared repository",
		"team-b's Application names pullsecret:ci/nonexistent for the repository team-a's Application polls anonymously")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0")
	good := kubeApp("ci", "team-a-web", map[string]string{"web": web})
	bogus := kubeApp("ci", "team-b-web", map[string]string{"web": web})
	bogus.annotations["argocd-image-updater.argoproj.io/web.pull-secret"] = "pullsecret:ci/nonexistent"
	dir := writeApps(t, bogus, good)
	work := t.TempDir()
	cfg := filepath.Join(work, "crowsnest.yaml")
	writeTestFile(t, cfg, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
log: {level: debug}
registries:
  pollInterval: 5s
`)
	metricsAddr := freeAddr(t)
	p := startCrowsnest(t, nil, "run", "--apps-dir", dir, "--config", cfg,
		"--git-cache-dir", filepath.Join(work, "git-cache"), "--log-format", "json", "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--webhook-bind-address", "0")
	metric := func(name string) float64 { return metricSum(t, "http://"+metricsAddr+"/metrics", name) }
	testwait.Within(t, "the first poll of the repository", time.Minute, func() bool { return metric("crowsnest_registry_polls_total") >= 1 })
	reg.Push(t, "team/web:1.1.0", testreg.Image(t, time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC), "linux/amd64"))
	landed := testwait.Until(t.Context(), time.Minute, func() bool { return updated(p.events(), "ci/team-a-web", web, "1.1.0") })

	evs := p.events()
	warn := warnings(evs, "ci/team-b-web")
	v.answer("team-a's update landed: %v; team-b: %s; %.0f failed polls", landed, firstMessage(warn, "nonexistent"),
		metric(`crowsnest_registry_polls_total{result="error"}`))
	v.loseUnless(landed, "team-a's Application was not updated to 1.1.0 while team-b's pull secret fails")
	v.expect(slices.ContainsFunc(warn, func(e logEvent) bool { return strings.Contains(e.Message, "nonexistent") }),
		"no Warning on team-b's Application naming its pull secret: %v", warn)
	v.expect(!updated(evs, "ci/team-b-web", web, "1.1.0"), "team-b's Application was updated through a pull secret that cannot work")
	v.credited(append(foreignEvents(evs, "ci/team-b-web", "nonexistent"), warnings(evs, "ci/team-a-web")...))
	v.done()
}

// An Application names images on hosts that accept connections and never
// answer. Their polls hang, yet another Application's registry is polled
// and its pushed tag (announced by a signed webhook) lands while they
// still hang: a host has at most half the poller's places, and a slow
// poll gives its place back.
func TestHostileHangingRegistryHosts(t *testing.T) {
	hostileTest(t)
	const secret = "webhook-S3CR3T-HOSTILE-91c4"
	v := newVerdict(t, "polling: registry hosts that never answer",
		"one Application's image-list names 6 images on 2 hosts that accept connections and never answer")
	images := map[string]string{}
	for h := range 2 {
		host := hangingHost(t)
		for i := range 3 {
			images[fmt.Sprintf("h%di%d", h, i)] = fmt.Sprintf("%s/team/svc%d", host, i)
		}
	}
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0")
	dir := writeApps(t, kubeApp("ci", "hang", images), kubeApp("ci", "web", map[string]string{"web": web}))
	p, hookAddr, metricsAddr := startWithWebhook(t, dir, secret)
	start := time.Now()
	// The poller's first poll of ci/web's repository (the tag set a
	// refresh is compared with) is the only one that can succeed.
	polled := testwait.Until(t.Context(), time.Minute, func() bool {
		return metricSum(t, "http://"+metricsAddr+"/metrics", `crowsnest_registry_polls_total{result="unchanged"}`) >= 1
	})
	firstPoll := time.Since(start)
	reg.Push(t, "team/web:1.1.0", testreg.Image(t, time.Date(2026, 5, 1, 1, 0, 0, 0, time.UTC), "linux/amd64"))
	push := fmt.Sprintf(`{"repository":%q,"tag":"1.1.0"}`, web)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(push))
	code := postWebhook(t, "http://"+hookAddr+"/webhooks/registry/generic", push,
		map[string]string{"X-Crowsnest-Signature-256": "sha256=" + hex.EncodeToString(mac.Sum(nil))})
	landed := testwait.Until(t.Context(), time.Minute, func() bool { return updated(p.events(), "ci/web", web, "1.1.0") })

	v.answer("ci/web's first poll after %s; webhook %d; its update landed after %s: %v, while the hosts still hang",
		firstPoll.Round(time.Second), code, time.Since(start).Round(time.Second), landed)
	v.expect(polled, "ci/web's repository was not polled within a minute")
	v.loseUnless(landed, "ci/web was not updated to 1.1.0 within a minute of the webhook while the other hosts hang")
	v.credited(warnings(p.events(), "ci/web"))
	v.done()
}

// hangingHost is a registry host that accepts connections and never
// answers until the test ends.
func hangingHost(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return strings.TrimPrefix(srv.URL, "http://")
}

// postWebhook posts body with header and returns the status code.
func postWebhook(t *testing.T, url, body string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, val := range header {
		req.Header.Set(k, val)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode
}
