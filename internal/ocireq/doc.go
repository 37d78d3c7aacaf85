// Package ocireq names the requests of the OCI distribution API by what
// they do (ping, list, head, manifest, blob, token). The registry
// transport labels its metrics with these names and the test registry
// (internal/testreg) records them, so tests and dashboards speak of the
// same kinds.
package ocireq
