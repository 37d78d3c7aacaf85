package collect

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// EventWriteBackRefused is the reason of the Event on an Application
// whose change the tenancy rules refused (controller.EventWriteBackRefused
// is this): the writer found its file outside what it renders from.
const EventWriteBackRefused = "WriteBackRefused"

// resultRefused is Metrics.GitUpdates' result for a refused change.
const resultRefused = "refused"

// onlyRefused reports whether every change of key in failed was refused
// for writing outside what its Application renders from.
func onlyRefused(failed []*gitwb.ChangeError, key string) bool {
	for _, f := range failed {
		if f.Key == key && !errors.Is(f.Err, gitwb.ErrOutsideScope) {
			return false
		}
	}
	return true
}

// refuse reports key's refused write: retrying cannot change the answer
// until the Application, the repository or the config does, which
// reconciles it again.
func (b *Batcher) refuse(key string, err error) {
	b.count(resultRefused, 1)
	if b.Tally != nil {
		b.Tally.GitFailed(key)
	}
	b.Log.Warn("git write-back refused", "app", key, "error", err)
	b.event(key, corev1.EventTypeWarning, EventWriteBackRefused, "git write-back: "+err.Error())
}
