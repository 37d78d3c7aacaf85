package imageupdaters

import (
	"fmt"
	"time"

	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// maxRecentUpdates caps a resource's recentUpdates: crowsnest updates
// continuously rather than in cycles, so the list keeps the newest
// updates instead of one cycle's.
const maxRecentUpdates = 20

// recentUpdate is one entry of status.recentUpdates: an alias updated to
// a version, in how many Applications (argocd-image-updater aggregates
// by alias and new version too).
type recentUpdate struct {
	alias, image, version, message string
	apps                           map[string]bool
	at                             time.Time
}

// updates are a resource's recent image updates.
type updates struct {
	list []*recentUpdate
	last time.Time
}

// Observe records an image update crowsnest made (the reconciler's and
// the Git batcher's Notify events) for the ImageUpdater that decides for
// app, for its status's recentUpdates and lastUpdatedAt.
func (s *Set) Observe(app *watcher.App, ev triggers.Event) {
	if ev.Type != triggers.EventImageUpdated || app == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	res, r := s.winner(app)
	if res == nil {
		return
	}
	alias := ev.Image
	for i := range r.Images {
		if r.Images[i].Image == ev.Image {
			alias = r.Images[i].Alias
		}
	}
	u := s.updates[res.key]
	if u == nil {
		u = &updates{}
		s.updates[res.key] = u
	}
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	if at.After(u.last) {
		u.last = at
	}
	for _, e := range u.list {
		if e.alias == alias && e.version == ev.To {
			e.apps[app.Key()] = true
			e.at = at
			s.signal()
			return
		}
	}
	u.list = append(u.list, &recentUpdate{alias: alias, image: ev.Image, version: ev.To, at: at,
		message: fmt.Sprintf("Updated from %s to %s.", ev.From, ev.To), apps: map[string]bool{app.Key(): true}})
	if len(u.list) > maxRecentUpdates {
		u.list = u.list[len(u.list)-maxRecentUpdates:]
	}
	s.signal()
}
