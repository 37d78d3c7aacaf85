// Package notify delivers crowsnest's notifications: it defines the
// message types (Template as configured, Notification as rendered by
// package notify/render), sends rendered notifications through services
// (Slack with slack-go, webhooks, email over SMTP; the other service
// types live in notify/services) and owns the durable outbox that records
// each delivery (a new one is sent while its record is written, when the
// store knows it holds none with its ID; one that may have been sent is
// looked for at its destination first), delivers asynchronously per
// destination with rate limits, retries with backoff and a bounded
// attempt count, dead-letters what never went through and keeps a
// per-application delivery log. Outbox state (pending deliveries, the
// log, Slack thread timestamps) lives in a Store: in memory, or in a few
// ConfigMaps so it survives restarts and leader changes.
package notify
