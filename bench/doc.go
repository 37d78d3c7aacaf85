// Command bench is crowsnest's performance harness (`make bench`). It
// starts real parts on 127.0.0.1 (etcd and kube-apiserver from
// internal/testenv, go-containerregistry's registry behind a counter of
// requests by kind, git http-backend, a webhook sink), seeds a scenario of
// N Applications over K images with T tags each, runs the crowsnest binary
// as a separate process and measures each round: wall time until every
// Application is updated, CPU seconds and peak RSS of the process,
// registry requests by kind, kube-apiserver requests by verb (from
// crowsnest's own /metrics), commits pushed and notifications delivered.
// Each cold start and new-tag round also reports its time as a ratio to
// the floor (the harness's own unthrottled client listing and patching
// every Application, measured in the same run), the ImagesUpdated Events
// expected and recorded (counts summed) and the time until the last one,
// and peak RSS split into anonymous and file-backed pages. Round 7 is a
// cold start with 50 ms added to every registry request. Round 8 (opt-in)
// runs every Application in pull-request write-back on a real Gitea
// (internal/giteaenv) behind a counter of requests by kind, one repository
// per image: pull requests opened, then brought up to date by a newer tag,
// read through Gitea's API, and crowsnest's forge API calls per pull
// request.
// It writes results.json and results.md and checks the numbers against
// the requirements of the performance issue, stated as those ratios,
// Event counts, memory and registry requests: never as seconds, which
// depend on the machine.
package main
