package triggers

import (
	"slices"
	"strings"
)

// State is what the notifications of one Application remember between
// observations; the caller persists it (outside the Application, so that
// rewriting its annotations cannot reset it). It is small and bounded:
// at most MaxKeys short hashes.
type State struct {
	// Seen is set once the Application has been observed, so the first
	// observation can be a baseline.
	Seen bool `json:"seen,omitempty"`
	// Fired holds the dedupe keys of conditions that fired (or were
	// recorded as baseline), oldest first, each marked with its kind:
	// "L" (level: no oncePer value, removed when the condition turns
	// false, which re-arms it) or "V" (a oncePer value, kept until
	// evicted).
	Fired []string `json:"fired,omitempty"`
}

// State entry kinds.
const (
	levelMark = "L"
	valueMark = "V"
)

// DefaultMaxKeys bounds State.Fired: 13 catalog triggers leave ample room
// for oncePer history (a revision per deploy) while a State stays under
// 5 KB.
const DefaultMaxKeys = 256

// StepOptions are the facts Step needs besides the evaluation.
type StepOptions struct {
	// App identifies the Application in dedupe keys: its UID, or
	// "namespace/name" when it has none (file source).
	App string
	// Baseline records conditions already true on first sight instead of
	// sending them (config.Notifications.BaselineEnabled).
	Baseline bool
	// Event marks the evaluation of a crowsnest event (triggers with
	// OnEvent): never a baseline, since an event is news by definition,
	// and not the Application's first sight either.
	Event bool
	// MaxKeys bounds State.Fired; 0 means DefaultMaxKeys. The oldest
	// oncePer values go first; level keys (at most one per condition) are
	// evicted only if nothing else is left, since evicting one would
	// resend a condition that is still true.
	MaxKeys int
}

// Send is a notification due: a condition that fired.
type Send struct {
	Trigger     string
	Condition   int
	ConditionID string
	OncePer     string
	Templates   []string
	// Key is the dedupe key; the outbox can use it with the destination as
	// the delivery's idempotency key.
	Key string
}

// DedupeKey is the key of one firing: the Application, trigger, condition
// identity and oncePer value, hashed. It does not depend on templates,
// send lists or other triggers.
func DedupeKey(app, trigger, conditionID, oncePer string) string {
	return shortHash(app, trigger, conditionID, oncePer)
}

// Step applies one observation's results to st and returns the new state
// and what to send, following argocd-notifications: without oncePer a
// condition fires once each time it becomes true and re-arms when false;
// with oncePer it fires once per distinct value. On first sight with
// Baseline, conditions already true are recorded, not sent. A condition
// that failed to evaluate neither fires nor re-arms. st is not modified.
func Step(st State, results []Result, opt StepOptions) (State, []Send) {
	maxKeys := opt.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	baseline := opt.Baseline && !st.Seen && !opt.Event
	next := State{Seen: st.Seen || !opt.Event, Fired: slices.Clone(st.Fired)}
	var sends []Send
	levels := countLevels(next.Fired)
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		if !r.Triggered {
			if levels == 0 {
				continue // nothing to re-arm; skip hashing
			}
			// Re-arm: only the key without a oncePer value goes away.
			k := levelMark + DedupeKey(opt.App, r.Trigger, r.ConditionID, "")
			if i := slices.Index(next.Fired, k); i >= 0 {
				next.Fired = slices.Delete(next.Fired, i, i+1)
				levels--
			}
			continue
		}
		k := DedupeKey(opt.App, r.Trigger, r.ConditionID, r.OncePer)
		entry := levelMark + k
		if r.OncePer != "" {
			entry = valueMark + k
		}
		if slices.Contains(next.Fired, entry) {
			continue
		}
		next.Fired = append(next.Fired, entry)
		if r.OncePer == "" {
			levels++
		}
		if baseline {
			continue
		}
		sends = append(sends, Send{
			Trigger: r.Trigger, Condition: r.Condition, ConditionID: r.ConditionID,
			OncePer: r.OncePer, Templates: r.Send, Key: k,
		})
	}
	next.Fired = evict(next.Fired, maxKeys)
	return next, sends
}

func countLevels(fired []string) int {
	n := 0
	for _, e := range fired {
		if strings.HasPrefix(e, levelMark) {
			n++
		}
	}
	return n
}

// evict drops the oldest entries beyond maxKeys, oncePer values first.
func evict(fired []string, maxKeys int) []string {
	over := len(fired) - maxKeys
	if over <= 0 {
		return fired
	}
	fired = slices.DeleteFunc(fired, func(e string) bool {
		if over > 0 && strings.HasPrefix(e, valueMark) {
			over--
			return true
		}
		return false
	})
	if over > 0 {
		fired = slices.Delete(fired, 0, over)
	}
	return fired
}
