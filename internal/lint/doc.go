// Package lint holds the repository's own checks that golangci-lint
// cannot express, run as tests: today, that no test sleeps a fixed time
// unless a `// sleep-ok:` comment on the same line says why (a poll
// interval, the length of an injected fault). A test that proves
// something does not happen waits for the point after which it would
// have happened instead.
package lint
