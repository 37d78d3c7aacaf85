package triggers

import "time"

// Event types of crowsnest's own events, as `event.type` reads them.
const (
	EventImageUpdated      = "image-updated"
	EventImageUpdateHeld   = "image-update-held"
	EventImageUpdateFailed = "image-update-failed"
	EventSyncWindowOpened  = "sync-window-opened"
	EventSyncWindowClosed  = "sync-window-closed"
	// Pull-request write-back: the pull request proposing an update was
	// opened, brought up to date (a newer tag), merged, or closed
	// without merging.
	EventPullRequestOpened  = "pr-opened"
	EventPullRequestUpdated = "pr-updated"
	EventPullRequestMerged  = "pr-merged"
	EventPullRequestClosed  = "pr-closed"
)

// Event is a crowsnest event as triggers and templates see it (`event`).
// Fields that do not apply stay empty.
type Event struct {
	Type string
	// ID is unique per event; the catalog's event triggers fire once per
	// ID, so an event is never sent twice.
	ID string
	// Image is the image repository; From and To are the old and new
	// tags or digests (image events).
	Image, From, To string
	// Reason is a named reason (why held, why failed); Message says it
	// for people.
	Reason, Message string
	// Window describes the sync window (window events and held updates).
	Window string
	// Commit is the write-back commit SHA, when written to Git: a pull
	// request's head commit, or its merge commit once merged.
	Commit string
	// PullRequest is the pull request's URL and PullRequestNumber its
	// number (pull-request events).
	PullRequest       string
	PullRequestNumber int
	Time              time.Time
	// Recovered marks an event a restarted process announces again (a
	// write of an earlier process found landed): that process may have
	// sent its messages already. Not seen by conditions or templates.
	Recovered bool
}

// Map returns the event as the map conditions and templates read. Every
// key is present, empty when it does not apply, so templates print ""
// rather than "<no value>".
func (e *Event) Map() map[string]any {
	ts := ""
	if !e.Time.IsZero() {
		ts = e.Time.UTC().Format(time.RFC3339)
	}
	return map[string]any{
		"type": e.Type, "id": e.ID, "image": e.Image, "from": e.From, "to": e.To, "reason": e.Reason,
		"message": e.Message, "window": e.Window, "commit": e.Commit, "time": ts,
		"pullRequest": e.PullRequest, "pullRequestNumber": e.PullRequestNumber,
	}
}
