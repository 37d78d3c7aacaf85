// Package notify holds crowsnest's message model: the message types
// (Template as configured, Notification as rendered by package
// notify/render), where one goes (Destination), what a send reports
// (Receipt), the Service interface every sender implements with its
// errors (Permanent, RateLimitError), the Confirmer a sender may add, and
// the ThreadStore Slack threads are kept in. The senders, Slack, webhooks
// and email included, are package notify/services and its subpackages,
// each built from its svc.Kind; the durable outbox that records and
// delivers each message is package notify/outbox.
package notify
