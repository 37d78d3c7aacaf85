package controller

import "strings"

// Report-once bookkeeping of the image reconciler: a hold, an annotation
// problem or a refusal is reported (log, Event, metric) when it appears or
// changes, not again on every reconcile while it stays.

// saidKey names one kind of report about one Application.
type saidKey struct{ kind, app string }

// Kinds of reports made once (newSaid).
const (
	saidHold    = "hold"
	saidInvalid = "invalid"
	saidRefused = "refused"
	// saidNoCandidate: images whose tag lists hold nothing the policy
	// takes.
	saidNoCandidate = "nocandidate"
	// saidUnsupported: images whose source Argo CD renders as a
	// plain directory.
	saidUnsupported = "unsupported"
	// saidDeclined: versions not proposed again, their pull request
	// closed without merging.
	saidDeclined = "declined"
	// saidUnverified: tags skipped because their signature did not
	// verify.
	saidUnverified = "unverified"
)

// newInvalid records key's annotation problems and reports whether they
// differ from those last reported; none clears the record.
func (r *ImageReconciler) newInvalid(key string, errs []error) bool {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return r.newSaid(saidKey{saidInvalid, key}, strings.Join(msgs, "\n"))
}

// newHold records what holds key's update and reports whether it differs
// from what was last announced.
func (r *ImageReconciler) newHold(key, what string) bool {
	return r.newSaid(saidKey{saidHold, key}, what)
}

// newSaid records what is to be reported under k and reports whether it
// differs from what was reported last; "" forgets k.
func (r *ImageReconciler) newSaid(k saidKey, what string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if what == "" {
		delete(r.said, k)
		return false
	}
	if r.said == nil {
		r.said = map[saidKey]string{}
	}
	if r.said[k] == what {
		return false
	}
	r.said[k] = what
	return true
}
