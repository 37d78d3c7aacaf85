package controller

import "github.com/crowsnest-dev/crowsnest/writeback/git/collect"

// The Git batcher (writeback/git/collect) reports each Application's
// outcome after the reconcile that decided it has returned: these let it
// count into the image reconciler's metrics and pass tally.
var (
	_ collect.Metrics = (*ImageMetrics)(nil)
	_ collect.Tally   = (*PassTally)(nil)
)

// GitUpdates counts n Git write-back updates (result "success") or failed
// Applications (result "error"), as collect.Batcher reports them.
func (m *ImageMetrics) GitUpdates(result string, n int) { m.update("git", result, n) }

// GitFailed counts key's Git write-back as failed in the pass: the batch
// failed it after its reconcile recorded an update.
func (t *PassTally) GitFailed(key string) { t.record(key, OutcomeFailed) }
