// Package notifycmd is `crowsnest notify`: the flags and the printing of
// dry runs of triggers and templates (trigger run, template render,
// including every request a service would make), a real send of one
// template (send), and the outbox's delivery log and redelivery of dead
// letters (log, redeliver). What each does is internal/notifyctl's.
package notifycmd
