// Package outbox owns the durable outbox of notifications: it records
// each delivery (a new one is sent while its record is written, when the
// store knows it holds none with its ID; one that may have been sent is
// looked for at its destination first), delivers asynchronously per
// destination with rate limits, retries with backoff and a bounded
// attempt count, dead-letters what never went through and keeps a
// per-application delivery log. Its state (pending deliveries, the log,
// Slack thread timestamps) lives in a Store: in memory, or in a few
// ConfigMaps so it survives restarts and leader changes; a local journal
// remembers what was sent until the store has it. The senders it calls
// are package notify's Services; it never imports a sender.
package outbox
