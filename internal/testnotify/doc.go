// Package testnotify holds what the tests of the notification pipeline
// (notify/pipeline) and of the engine that feeds it (controller's
// end-to-end test, the repo helpers read with Argo CD's credentials)
// share: a webhook receiver that records what the catalog's templates
// send, a notifications config with one webhook service "hook" that
// sends there, subscriptions to every catalog trigger, and a runner for
// the Notifier's and Outbox's Start. Tests only; nothing else imports it.
package testnotify
