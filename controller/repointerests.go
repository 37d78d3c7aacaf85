package controller

import (
	"maps"
	"slices"

	"github.com/crowsnest-dev/crowsnest/registry"
)

// repoInterests records which repositories each Application uses, through
// which client (registry.Target: the shared one, or its pull secret's),
// and how to poll them, indexed both ways, so that a change of one
// Application merges only the targets it used or uses. Merging every
// Application's interests at each change cost O(N²) on a cold start: more
// than half of crowsnest's CPU with 10,000 Applications, measured by the
// benchmark (bench/).
type repoInterests struct {
	byKey  map[string]map[registry.Target]registry.Interest // app key -> target -> interest
	users  map[registry.Target]map[string]bool              // target -> app keys using it
	merged map[registry.Target]registry.Interest            // target -> its users' interests merged
}

// set records the targets key uses (none: key is gone). It returns the
// union of all interests, for the poller, when that changed.
func (ri *repoInterests) set(key string, repos map[registry.Target]registry.Interest) (map[registry.Target]registry.Interest, bool) {
	if ri.byKey == nil {
		ri.byKey = map[string]map[registry.Target]registry.Interest{}
		ri.users = map[registry.Target]map[string]bool{}
		ri.merged = map[registry.Target]registry.Interest{}
	}
	old := ri.byKey[key]
	if maps.EqualFunc(old, repos, sameInterest) {
		return nil, false
	}
	if len(repos) == 0 {
		delete(ri.byKey, key)
	} else {
		ri.byKey[key] = repos
	}
	changed := false
	update := func(t registry.Target, in registry.Interest) {
		if prev, ok := ri.merged[t]; !ok || !sameInterest(prev, in) {
			ri.merged[t] = in
			changed = true
		}
	}
	for t := range old {
		if _, still := repos[t]; still {
			continue
		}
		delete(ri.users[t], key)
		if len(ri.users[t]) == 0 {
			delete(ri.users, t)
			delete(ri.merged, t)
			changed = true
			continue
		}
		update(t, ri.merge(t))
	}
	for t, in := range repos {
		if ri.users[t] == nil {
			ri.users[t] = map[string]bool{}
		}
		ri.users[t][key] = true
		prev, known := ri.merged[t]
		_, had := old[t]
		switch {
		case !known:
			update(t, in)
		case !had:
			// A new user only adds to the merge (the usual cold start):
			// no need to look at the others.
			update(t, prev.Merge(in))
		default:
			update(t, ri.merge(t))
		}
	}
	if !changed {
		return nil, false
	}
	return maps.Clone(ri.merged), true
}

// merge joins the interests of t's users (intervals and tracked digests
// merge in any order).
func (ri *repoInterests) merge(t registry.Target) registry.Interest {
	var in registry.Interest
	for k := range ri.users[t] {
		in = in.Merge(ri.byKey[k][t])
	}
	return in
}

// keysOf returns the keys of the Applications that read t, sorted.
func (ri *repoInterests) keysOf(t registry.Target) []string {
	return slices.Sorted(maps.Keys(ri.users[t]))
}

func sameInterest(a, b registry.Interest) bool {
	return a.Interval == b.Interval && slices.Equal(a.TrackDigests, b.TrackDigests)
}
