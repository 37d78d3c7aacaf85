// Package testreg gives tests OCI registries to talk to: go-containerregistry's
// in-memory registry on httptest behind an auth handler that records requests
// and injects faults (StartOCI), and the real CNCF distribution registry from
// Debian's docker-registry package run as a child process with its own
// config, htpasswd users and push notifications (StartDistribution; install
// it with hack/apt.sh). Both listen on 127.0.0.1 and stop when the test ends.
package testreg
