// Package conformance runs Argo CD's own code side by side with
// crowsnest's on the same inputs and compares the answers: sync windows
// (Argo CD's SyncWindows), notification triggers and templates
// (notifications-engine with Argo CD's catalog and expression
// environment). It is its own module so the main module never inherits
// Argo CD's dependency tree; it needs the Go toolchain Argo CD needs
// (GOTOOLCHAIN=go1.27.3, set by `make conformance`).
//
// Deliberate differences are listed once, in allowlist.go, and in
// docs/conformance.md.
package conformance
