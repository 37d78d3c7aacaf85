// Package notifycmd is `crowsnest notify`: dry runs of triggers and
// templates (trigger run, template render, including the exact request a
// service would make), a real send of one template (send), and the
// outbox's delivery log and redelivery of dead letters (log, redeliver).
// It builds services with internal/setup, as `run` does.
package notifycmd
