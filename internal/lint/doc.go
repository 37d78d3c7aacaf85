// Package lint holds the repository's own checks that golangci-lint
// cannot express, run as tests: that no test sleeps a fixed time unless
// a `// sleep-ok:` comment on the same line says why (a poll interval,
// the length of an injected fault), since a test that proves something
// does not happen waits for the point after which it would have happened
// instead; that a //nolint comment names only linters .golangci.yml
// enables; that docs/architecture.md, the map of the code, names every
// package of the module and only files and functions that exist; and
// that the pure packages and config link no notification sender (a
// transitive rule, which depguard cannot check); and that no exported
// struct field is a func unless an allowlist says why (parts talk
// through small named interfaces).
package lint
