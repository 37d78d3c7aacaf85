// Package dryrun builds the dry run's report (`run --dry-run`, `plan`):
// it asks the write-backs what they would write, without writing (the
// Git writer's Plan, the Kubernetes writer's PlanFrom: their own code, so
// the report is what a write would do), and turns their answers into
// controller/imageupdate's WritePlan, redacted, for a Recorder.
//
// The image reconciler (controller/dryrun.go) decides as in a real run and,
// where it would write, calls here instead; cmd prints the plans
// (cmd/crowsnest/plan.go). It sits between controller and the writers:
// writeback may not import controller/imageupdate, whose report types the
// plans fill in.
package dryrun
