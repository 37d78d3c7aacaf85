// Package testgit gives tests a real Git server to push to: git's own
// smart-HTTP implementation (git http-backend, run through net/http/cgi on
// an httptest server on 127.0.0.1) serving bare repositories in a test's
// temporary directory, with optional basic auth, request counting by kind
// and injected faults (rejected pushes, pushes whose answer is lost, an
// outage, refused credentials).
// Helpers seed repositories and read them back with the git CLI, so tests
// check what a real Git client would see.
package testgit
