// Package notify holds crowsnest's message model and the senders built
// into it: the message types (Template as configured, Notification as
// rendered by package notify/render), where one goes (Destination), what
// a send reports (Receipt), the Service interface every sender
// implements with its errors (Permanent, RateLimitError) and the
// Confirmer a sender may add, and the built-in senders: Slack with
// slack-go, webhooks, email over SMTP (the other service types live in
// notify/services). The durable outbox that records and delivers each
// message is package notify/outbox.
package notify
