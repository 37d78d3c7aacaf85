// Package pipeline is crowsnest's notification pipeline: it turns the
// Application transitions the engine observes, and crowsnest's own events
// (image updated, held or failed, window opened or closed), into
// deliveries in the notify package's outbox.
//
// The Notifier (notifier.go) queues each observation per Application and
// works them in order (process.go): it evaluates the triggers package's
// conditions against the transition, steps the Application's persisted
// trigger state (state.go: in memory, or sharded ConfigMaps through
// internal/cmbatch), resolves subscriptions, renders the templates for
// each service (render.go), refuses a message whose service would act on
// a repository the Application may not use (tenancy.go: GitHub's
// repoURLPath, checked with Notifier.Repos, crowsnest run's tenancy rules) and
// enqueues one delivery per destination under a dedupe key, so that a
// restart or a leader change sends nothing twice. Repo (repo.go)
// answers the repo.GetCommitMetadata and repo.GetAppDetails helpers of
// templates and conditions from crowsnest's Git cache; metrics.go counts
// evaluations and messages not enqueued.
//
// It sits beside the engine, not inside it: controller hands it
// transitions (Engine.Transitions) and events, and adapts the engine's
// sources, projects and lease to its Synced and Project fields and to
// Start (controller/notifywiring.go); this package never imports
// controller. cmd/crowsnest builds it (notifications.go) and the `notify`
// commands render with ServiceTemplate and TemplateVars as it does.
package pipeline
