// Package notifyctl is what `crowsnest notify` does, without its command:
// it reads the notifications of a config and of an argocd-notifications-cm
// with its Secret, as run merges them (Inputs), and with them evaluates a
// trigger on an Application (RunTrigger), renders a template for a service
// (Render; for a configured service, every request a send would make,
// recorded by a transport, and for email a mailer, that answer as the
// service would and send nothing, credentials redacted), sends one
// template through a configured service (Send), and reads and redelivers
// the daemon's outbox in the cluster (OutboxStore, Redeliver). Services are built with
// internal/setup, as run builds them. It takes plain values; flags and
// printing stay in cmd/crowsnest/internal/notifycmd.
package notifyctl
