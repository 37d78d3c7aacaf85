package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// Two teams' Applications read one repository: one through the registry's
// own credentials, one through a pull secret whose password is wrong. The
// bogus one fails its own polls only: the other still sees new tags on
// its interval and on a webhook's refresh. A third client (another pull
// secret that works) sees the change for its own Applications.
func TestPollerBogusPullSecretFailsOnlyItself(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "u", Password: "p"})
	reg.Push(t, "team/app:1", testreg.Image(t, t0, ""))
	clock := &fakeClock{now: t0}
	m := NewMetrics(prometheus.NewRegistry())
	good := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "u", pass: "p"}, Now: clock.Now, Metrics: m}
	bogus := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "u", pass: "wrong"}, Now: clock.Now, Metrics: m}
	other := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "u", pass: "p"}, Now: clock.Now, Metrics: m}
	log := &changeLog{}
	p := &Poller{Client: good, Interval: time.Minute, Now: clock.Now, Listener: log, Metrics: m}
	repo := reg.Host() + "/team/app"
	// The bogus secret's Application is listed first, as Interest.Merge
	// once took the first pull secret for every user of a repository.
	p.SetInterests(map[Target]Interest{{Repo: repo, Client: bogus}: {}, {Repo: repo}: {}, {Repo: repo, Client: other}: {}})
	cycle(t.Context(), p) // baselines; the bogus client's fails

	reg.Push(t, "team/app:2", testreg.Image(t, t0, ""))
	clock.Add(time.Minute)
	cycle(t.Context(), p)
	want := []RepoChange{
		{Repo: repo, Added: []string{"2"}, Tags: []string{"1", "2"}},
		{Repo: repo, Client: other, Added: []string{"2"}, Tags: []string{"1", "2"}},
	}
	if diff := cmp.Diff(want, byClient(log.take(), other), sameClient); diff != "" {
		t.Errorf("changes on the interval (-want +got):\n%s", diff)
	}

	reg.Push(t, "team/app:3", testreg.Image(t, t0, ""))
	if !p.Refresh(repo) {
		t.Fatal("Refresh of a polled repository reported false")
	}
	cycle(t.Context(), p)
	want = []RepoChange{
		{Repo: repo, Added: []string{"3"}, Tags: []string{"1", "2", "3"}, Refreshed: true},
		{Repo: repo, Client: other, Added: []string{"3"}, Tags: []string{"1", "2", "3"}, Refreshed: true},
	}
	if diff := cmp.Diff(want, byClient(log.take(), other), sameClient); diff != "" {
		t.Errorf("changes on a webhook's refresh (-want +got):\n%s", diff)
	}
	if n := testutil.ToFloat64(m.pollsVec.WithLabelValues("error")); n != 3 {
		t.Errorf("failed polls = %v, want 3 (the bogus secret's baseline, interval and refresh)", n)
	}
}

// sameClient compares clients by identity.
var sameClient = cmp.Comparer(func(a, b *Client) bool { return a == b })

// byClient orders changes: the poller's own client's first, then other's.
func byClient(cs []RepoChange, other *Client) []RepoChange {
	var out []RepoChange
	for _, want := range []*Client{nil, other} {
		for _, c := range cs {
			if c.Client == want {
				out = append(out, c)
			}
		}
	}
	if len(out) != len(cs) {
		return cs // a change from an unexpected client: show them all
	}
	return out
}

// hangingHost is a registry host that accepts connections and never
// answers, until the test ends.
func hangingHost(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		select {
		case <-release:
		case <-t.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return strings.TrimPrefix(srv.URL, "http://")
}

// Hosts that accept connections and never answer hold their polls (a
// client waits minutes through its retries), yet a healthy host's
// repository is polled, and its change reported, while they still hang:
// one host has at most PerHost polls in flight, and a poll past SlowAfter
// stops holding one of Concurrency's places.
func TestPollerHangingHostsDoNotDelayOthers(t *testing.T) {
	tests := []struct {
		name      string
		hosts     int // hanging hosts
		repos     int // repositories on each
		slowAfter time.Duration
	}{
		// Only PerHost can keep the healthy host's place.
		{name: "one host with many repositories", hosts: 1, repos: 6, slowAfter: time.Hour},
		// Together they take every place: slow polls give theirs back.
		{name: "a few hosts", hosts: 3, repos: 2, slowAfter: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthy := testreg.StartOCI(t, testreg.OCIOptions{})
			healthy.Push(t, "app:1", testreg.Image(t, t0, ""))
			interests := map[Target]Interest{{Repo: healthy.Host() + "/app"}: {}}
			for range tt.hosts {
				host := hangingHost(t)
				for r := range tt.repos {
					interests[Target{Repo: fmt.Sprintf("%s/team/svc%d", host, r)}] = Interest{}
				}
			}
			// Other hosts: 30 s per attempt, four attempts.
			c := &Client{Hosts: perHost{hosts: map[string]HostConfig{healthy.Host(): fast()}}}
			log := &changeLog{ch: make(chan RepoChange, 4)}
			p := &Poller{Client: c, Interval: time.Hour, SlowAfter: tt.slowAfter, Listener: log}
			p.SetInterests(interests)
			startPoller(t, p)

			// 20 s: less than one attempt on a hanging host (30 s), so a
			// healthy poll that waited behind one fails the test.
			testwait.Within(t, "the healthy host's first poll", 20*time.Second, func() bool { return healthy.Count("list", "/app/") > 0 })
			healthy.Push(t, "app:2", testreg.Image(t, t0, ""))
			p.Refresh(healthy.Host() + "/app")
			select {
			case ch := <-log.ch:
				want := RepoChange{Repo: healthy.Host() + "/app", Added: []string{"2"}, Tags: []string{"1", "2"}, Refreshed: true}
				if diff := cmp.Diff(want, ch); diff != "" {
					t.Errorf("change (-want +got):\n%s", diff)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no change of the healthy host within 20 s while the others hang")
			}
		})
	}
}

// startPoller runs p until the test ends and checks that Start returns.
func startPoller(t *testing.T, p *Poller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Start did not return after cancel")
		}
	})
}

// An annotation may name any registry host. Naming 1,000 of them leaves
// at most MaxHostSeries of them with series of their own (the rest count
// as "other"; a host the operator configured always keeps its own), and
// once they fall out of use their series, transports, pacers and cached
// tag lists are gone, as are a dropped repository's pullers, tag list and
// digests on a host still in use.
func TestPollerBoundsPerHostStateAndSeries(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	reg.Push(t, "gone:1", testreg.Image(t, t0, ""))
	const configured = "registry.example.com"
	promReg := prometheus.NewRegistry()
	m := NewMetrics(promReg)
	cfg := fast()
	cfg.APIURL, cfg.MaxAttempts = reg.Server.URL, 1 // every host is served by reg
	configuredCfg := cfg
	configuredCfg.Configured = true
	c := &Client{Metrics: m, Hosts: perHost{hosts: map[string]HostConfig{configured: configuredCfg}, others: cfg}}
	p := &Poller{Client: c, Concurrency: 64, Metrics: m}
	interests := map[Target]Interest{{Repo: reg.Host() + "/app"}: {}, {Repo: reg.Host() + "/gone"}: {TrackDigests: []string{"1"}}}
	for i := range 1000 {
		interests[Target{Repo: fmt.Sprintf("tenant-%04d.example/app", i)}] = Interest{}
	}
	interests[Target{Repo: configured + "/app"}] = Interest{}
	p.SetInterests(interests)
	cycle(t.Context(), p)
	if n := testutil.ToFloat64(m.pollsVec.WithLabelValues("unchanged")); n != 1003 {
		t.Fatalf("%v successful polls, want 1003", n)
	}
	labels := registryLabels(t, promReg)
	if len(labels) > MaxHostSeries+2 || !labels[OtherHost] || !labels[configured] {
		t.Errorf("%d registry label values (other: %v, %s: %v), want at most %d with both",
			len(labels), labels[OtherHost], configured, labels[configured], MaxHostSeries+2)
	}

	p.SetInterests(map[Target]Interest{{Repo: reg.Host() + "/app"}: {}})
	got := map[string]int{"hosts": len(c.hosts), "tags": len(c.tags), "digests": len(c.digests), "pacers": len(c.Pacers.m)}
	for _, hs := range c.hosts {
		got["pullers"] += len(hs.repos)
	}
	want := map[string]int{"hosts": 1, "tags": 1, "digests": 0, "pacers": 1, "pullers": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state kept once one host is in use (-want +got):\n%s", diff)
	}
	labels = registryLabels(t, promReg)
	for host := range labels {
		if strings.HasPrefix(host, "tenant-") {
			t.Errorf("series of %s remain after it fell out of use", host)
			break
		}
	}
}

// registryLabels returns the registry label values of the registry
// metrics' series.
func registryLabels(t *testing.T, g prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "registry" {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// Start polls each target again on its interval, with nothing else to
// wake it (no refresh, no new interests): a poll that ends schedules the
// next.
func TestPollerStartPollsAgainOnTheInterval(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "app:1", testreg.Image(t, t0, ""))
	log := &changeLog{ch: make(chan RepoChange, 4)}
	p := &Poller{Client: &Client{Hosts: fastHosts, TagTTL: time.Millisecond}, Interval: 100 * time.Millisecond, Listener: log}
	repo := reg.Host() + "/app"
	p.SetInterests(map[Target]Interest{{Repo: repo}: {}})
	startPoller(t, p)
	testwait.For(t, "the first poll", func() bool { return reg.Count("list", "/app/") > 0 })
	reg.Push(t, "app:2", testreg.Image(t, t0, ""))
	select {
	case ch := <-log.ch:
		if diff := cmp.Diff(RepoChange{Repo: repo, Added: []string{"2"}, Tags: []string{"1", "2"}}, ch); diff != "" {
			t.Errorf("change (-want +got):\n%s", diff)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no change reported within 20 s on a 100 ms interval")
	}
}
