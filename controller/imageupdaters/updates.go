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
	ms := s.matches(app)
	for _, m := range ms {
		if alias, ok := m.alias(ev.Image); ok {
			s.observe(m.res.key, app, ev, alias)
			return
		}
	}
	if len(ms) > 0 { // an image no resource names: the first's, by its name
		s.observe(ms[0].res.key, app, ev, ev.Image)
	}
}

// alias returns the alias of image in the match's rule; a useAnnotations
// rule's images are the Application's annotations'.
func (m *match) alias(image string) (string, bool) {
	imgs := m.r.spec.Images
	if m.r.UseAnnotations && m.ann != nil {
		imgs = m.ann.Images
	}
	for i := range imgs {
		if imgs[i].Name == image {
			return imgs[i].Alias, true
		}
	}
	return "", false
}

// observe records ev for the resource resKey; called with s.mu held.
func (s *Set) observe(resKey string, app *watcher.App, ev triggers.Event, alias string) {
	u := s.updates[resKey]
	if u == nil {
		u = &updates{}
		s.updates[resKey] = u
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
