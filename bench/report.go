package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// result is one scenario's round.
type result struct {
	Scenario string `json:"scenario"`
	N        int    `json:"n"`
	K        int    `json:"k"`
	T        int    `json:"t"`
	Round    string `json:"round"`
	Title    string `json:"title"`
	// Done of Want Applications (commits' files, messages) were updated.
	Done int `json:"done"`
	Want int `json:"want"`
	// WallSeconds is from the round's start (process start, the push) to
	// the last Application updated.
	WallSeconds float64 `json:"wallSeconds"`
	// FloorSeconds is how long the harness's own unthrottled client takes
	// to list and patch every Application until the harness's watch saw
	// every patch (as WallSeconds ends): the apiserver's floor on this
	// machine. FloorAnsweredSeconds is until the last patch was answered.
	FloorSeconds         float64 `json:"floorSeconds,omitempty"`
	FloorAnsweredSeconds float64 `json:"floorAnsweredSeconds,omitempty"`
	// FloorRatio is the round's time to patch every Application over
	// FloorSeconds: WallSeconds for a cold start, AfterTriggerSeconds for
	// a new tag.
	FloorRatio float64 `json:"floorRatio,omitempty"`
	// EventsExpected ImagesUpdated Events (one per Application updated),
	// EventsRecorded as the apiserver holds them (counts summed), and
	// LastEventSeconds from the round's start until the last one (0 when
	// not all were recorded).
	EventsExpected   int     `json:"eventsExpected,omitempty"`
	EventsRecorded   int     `json:"eventsRecorded,omitempty"`
	LastEventSeconds float64 `json:"lastEventSeconds,omitempty"`
	// AfterTriggerSeconds is from the first poll tick or webhook to the
	// last Application updated (round 3).
	AfterTriggerSeconds float64 `json:"afterTriggerSeconds,omitempty"`
	// Latency per Application (round 3: poll tick or webhook to patched;
	// round 5: status update to message received), milliseconds.
	LatencyP50Ms float64 `json:"latencyP50Ms,omitempty"`
	LatencyP99Ms float64 `json:"latencyP99Ms,omitempty"`
	LatencyMaxMs float64 `json:"latencyMaxMs,omitempty"`
	// AddedP50Ms and AddedP99Ms (round 5) are crowsnest's part of the
	// latency, from its crowsnest_notify_latency_seconds histogram
	// (observing the update to the destination's answer): the upper bound
	// of the bucket holding the quantile.
	AddedP50Ms float64 `json:"addedP50Ms,omitempty"`
	AddedP99Ms float64 `json:"addedP99Ms,omitempty"`
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRSSMB"`
	// PeakRSSScope is "round" when the kernel's peak was reset at the
	// round's start, else "process".
	PeakRSSScope string `json:"peakRSSScope"`
	// PeakAnonMB and PeakFileMB are sampled peaks of RSS's anonymous
	// (heap, stacks) and file-backed (the binary's pages) parts.
	PeakAnonMB float64 `json:"peakRSSAnonMB"`
	PeakFileMB float64 `json:"peakRSSFileMB"`
	// Registry requests by kind (ping, token, list, head, manifest, blob).
	Registry        map[string]int `json:"registryRequests"`
	RegistryTotal   int            `json:"registryRequestsTotal"`
	MaxListsPerRepo int            `json:"maxListsPerRepo"`
	// Kube requests by "verb resource", from crowsnest's
	// crowsnest_kube_requests_total.
	Kube          map[string]int `json:"kubeRequests"`
	KubeTotal     int            `json:"kubeRequestsTotal"`
	Commits       int            `json:"commits,omitempty"`
	Pushes        int            `json:"pushes,omitempty"`
	Notifications int            `json:"notifications,omitempty"`
	Duplicates    int            `json:"duplicates,omitempty"`
	// PullRequests are the pull-request round's (8) numbers.
	PullRequests *prStats `json:"pullRequests,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	Checks       []check  `json:"checks,omitempty"`
}

// prStats are what a part of the pull-request round (8) did on the forge.
type prStats struct {
	// Open pull requests at the end, and how many the part opened, as
	// Gitea's API lists them.
	Open   int `json:"open"`
	Opened int `json:"opened"`
	// Proposed is crowsnest_pull_requests_total by action (opened and
	// updated count once per Application).
	Proposed map[string]int `json:"proposed"`
	// ForgeCalls is crowsnest's crowsnest_forge_requests_total by HTTP
	// method, ForgeCallsTotal their sum and ForgeCallsPerPR that over
	// Open; ForgeFailed those answered with no 2xx.
	ForgeCalls      map[string]int `json:"forgeCalls"`
	ForgeCallsTotal int            `json:"forgeCallsTotal"`
	ForgeCallsPerPR float64        `json:"forgeCallsPerPR"`
	ForgeFailed     int            `json:"forgeCallsFailed"`
	// WriteCallsPerPR leaves out the GETs of one pull request: crowsnest
	// follows each open one with one every 2 minutes, so they depend on
	// how long the part took, not on the writes.
	WriteCallsPerPR float64 `json:"writeCallsPerPR"`
	// Received is what Gitea received from crowsnest, by kind (forge API
	// calls and Git over HTTP), counted in front of it.
	Received map[string]int `json:"forgeReceived"`
}

// check is one requirement of the issue as this round shows it.
type check struct {
	Requirement string `json:"requirement"`
	Want        string `json:"want"`
	Got         string `json:"got"`
	Pass        bool   `json:"pass"`
}

func (r *result) check(requirement, want, got string, pass bool) {
	r.Checks = append(r.Checks, check{Requirement: requirement, Want: want, Got: got, Pass: pass})
}

func (r *result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// report is everything one run measured.
type report struct {
	Started time.Time `json:"started"`
	Machine string    `json:"machine"`
	Commit  string    `json:"commit,omitempty"`
	Args    []string  `json:"crowsnestArgs,omitempty"`
	// Registry is the benchmark registry's rateLimit/maxConcurrency when
	// the run set them.
	Registry string   `json:"registrySettings,omitempty"`
	Results  []result `json:"results"`
	Failures []string `json:"failures,omitempty"`
}

func (rep *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(rep.markdown()), 0o644)
}

func (rep *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# crowsnest benchmark, %s\n\n", rep.Started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s", rep.Machine)
	if rep.Commit != "" {
		fmt.Fprintf(&b, "; commit %s", rep.Commit)
	}
	if len(rep.Args) > 0 {
		fmt.Fprintf(&b, "; crowsnest flags `%s`", strings.Join(rep.Args, " "))
	}
	if rep.Registry != "" {
		fmt.Fprintf(&b, "; registry %s", rep.Registry)
	}
	b.WriteString("\n\n")
	b.WriteString("| scenario | round | done | wall s | after trigger s | x floor | Events recorded/expected | last Event s | p50 / p99 ms | CPU s | peak RSS MB (anon+file) | registry requests | kube-apiserver requests | commits | messages | pull requests |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |\n")
	for i := range rep.Results {
		r := &rep.Results[i]
		lat := ""
		if r.LatencyP99Ms > 0 {
			lat = fmt.Sprintf("%.0f / %.0f", r.LatencyP50Ms, r.LatencyP99Ms)
		}
		after := ""
		if r.AfterTriggerSeconds > 0 {
			after = fmt.Sprintf("%.2f", r.AfterTriggerSeconds)
		}
		floor, events, lastEvent := "", "", ""
		if r.FloorRatio > 0 {
			floor = fmt.Sprintf("%.2f (floor %.2f s)", r.FloorRatio, r.FloorSeconds)
		}
		if r.EventsExpected > 0 {
			events = fmt.Sprintf("%d/%d", r.EventsRecorded, r.EventsExpected)
		}
		if r.LastEventSeconds > 0 {
			lastEvent = fmt.Sprintf("%.2f", r.LastEventSeconds)
		}
		fmt.Fprintf(&b, "| %s (N=%d K=%d T=%d) | %s %s | %d/%d | %.2f | %s | %s | %s | %s | %s | %.2f | %.1f (%.0f+%.0f) | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.N, r.K, r.T, r.Round, r.Title, r.Done, r.Want, r.WallSeconds, after, floor, events, lastEvent, lat,
			r.CPUSeconds, r.PeakRSSMB, r.PeakAnonMB, r.PeakFileMB, registryCell(r), kubeCell(r.Kube, r.KubeTotal), zeroBlank(r.Commits), messagesCell(r),
			pullRequestsCell(r.PullRequests))
	}
	b.WriteString("\nRegistry requests: total (ping/list/HEAD/manifest GET/blob). kube-apiserver requests: crowsnest's own, by verb and resource.\n")
	b.WriteString("x floor: the time to patch every Application (wall for a cold start, after trigger for a new tag) over the floor, the harness's own unthrottled client listing and patching every Application in the same run. Events: ImagesUpdated Events in the apiserver (counts summed) of those expected, one per Application updated; last Event is from the round's start, as wall.\n")
	b.WriteString("Pull requests: open at the end (opened by the round); crowsnest's forge API calls (crowsnest_forge_requests_total) by method, and per open pull request, in all and writing (without the GETs that follow open pull requests every 2 minutes); as Gitea received them, by kind; Git pushes.\n")
	b.WriteString("Peak RSS is VmHWM of the crowsnest process, reset at each round's start where the kernel allows it; in brackets the sampled peaks (every 20 ms) of its anonymous (heap, stacks) and file-backed (the binary's pages) parts.\n")

	b.WriteString("\n## Requirements\n\n| scenario | round | requirement | want | got | |\n| --- | --- | --- | --- | --- | --- |\n")
	for i := range rep.Results {
		r := &rep.Results[i]
		for _, c := range r.Checks {
			mark := "pass"
			if !c.Pass {
				mark = "**MISS**"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Scenario, r.Round, c.Requirement, c.Want, c.Got, mark)
		}
	}
	var notes []string
	for i := range rep.Results {
		r := &rep.Results[i]
		for _, n := range r.Notes {
			notes = append(notes, fmt.Sprintf("- %s round %s: %s", r.Scenario, r.Round, n))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Notes\n\n" + strings.Join(notes, "\n") + "\n")
	}
	if len(rep.Failures) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range rep.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

func registryCell(r *result) string {
	g := r.Registry
	return fmt.Sprintf("%d (%d/%d/%d/%d/%d)", r.RegistryTotal, g[kindPing], g[kindList], g[kindHead], g[kindManifest], g[kindBlob])
}

func kubeCell(m map[string]int, total int) string {
	if len(m) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d: %s", total, countsCell(m))
}

// countsCell lists counts by key, the largest first.
func countsCell(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func messagesCell(r *result) string {
	if r.Notifications == 0 && r.Duplicates == 0 {
		return ""
	}
	return fmt.Sprintf("%d (%d dup)", r.Notifications, r.Duplicates)
}

func pullRequestsCell(p *prStats) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%d open (%d opened); %d forge calls, %.2f per pull request (%s), %.2f writing; received: %s; %d pushes",
		p.Open, p.Opened, p.ForgeCallsTotal, p.ForgeCallsPerPR, countsCell(p.ForgeCalls), p.WriteCallsPerPR,
		countsCell(pickKinds(p.Received, forgeAPIKinds)), p.Received[forgeGitPush])
}

// pickKinds returns the counts of m of the kinds given.
func pickKinds(m map[string]int, kinds []string) map[string]int {
	out := map[string]int{}
	for _, k := range kinds {
		if m[k] != 0 {
			out[k] = m[k]
		}
	}
	return out
}

func zeroBlank(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// percentile returns the p-th percentile (0..100) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *result) setLatencies(ds []time.Duration) {
	r.LatencyP50Ms = ms(percentile(ds, 50))
	r.LatencyP99Ms = ms(percentile(ds, 99))
	r.LatencyMaxMs = ms(percentile(ds, 100))
}

func secs(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
