// Command bench is crowsnest's performance harness (`make bench`). It
// starts real parts on 127.0.0.1 (etcd and kube-apiserver from
// internal/testenv, go-containerregistry's registry behind a counter of
// requests by kind, git http-backend, a webhook sink), seeds a scenario of
// N Applications over K images with T tags each, runs the crowsnest binary
// as a separate process and measures each round: wall time until every
// Application is updated, CPU seconds and peak RSS of the process,
// registry requests by kind, kube-apiserver requests by verb (from
// crowsnest's own /metrics), commits pushed and notifications delivered.
// It writes results.json and results.md and checks the numbers against
// the requirements of the performance issue.
package main
