// Package testnotify holds what the tests of the notifications share.
// Recorder is the one HTTP server standing in for a notification service
// (Slack, a webhook, a service's API): it records every request and
// answers as told; Requests and Sink are built on it. FakeSlack is a fake
// of Slack's Web API that the tests of the Slack sender (notify) and of
// the outbox (notify/outbox) share. For the notification pipeline
// (notify/pipeline) and the engine that feeds it (controller's end-to-end
// test, the repo helpers read with Argo CD's credentials) it also keeps a
// notifications config with one webhook service "hook" that sends to a
// Sink, subscriptions to every catalog trigger, and a runner for the
// Notifier's and Outbox's Start. Tests only; nothing else imports it.
package testnotify
