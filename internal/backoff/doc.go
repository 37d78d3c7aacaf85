// Package backoff is crowsnest's one retry delay and one context-aware
// sleep. Delay is the exponential, capped, jittered wait between attempts
// that the registry transport, the Git writer and the notification outbox
// share; Sleep waits for it unless the caller's context ends first.
// Retry-After headers are read by internal/retryafter; the ConfigMap
// writer (internal/cmbatch) keeps apimachinery's wait.Backoff, whose
// schedule its callers already tune.
//
// It is a copy of no library on purpose: apimachinery's wait.Backoff adds
// its jitter above the delay (past its cap) and keeps state per retry
// loop, while these callers want a pure function of the attempt number
// whose result never exceeds the configured maximum.
package backoff
