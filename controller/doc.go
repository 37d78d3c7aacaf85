// Package controller is crowsnest's sync engine. It wires event sources
// (Applications now; registries, sync windows and config later) into one
// rate-limited work queue keyed by "namespace/name", runs one reconcile per
// key at a time on a configurable number of workers, elects a leader with a
// coordination.k8s.io Lease so only one replica acts, and reports its state
// through Prometheus metrics and health endpoints.
package controller
