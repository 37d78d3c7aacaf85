package controller

import (
	"maps"
	"slices"

	"github.com/crowsnest-dev/crowsnest/registry"
)

// repoInterests records which repositories each Application uses and how
// to poll them, indexed both ways, so that a change of one Application
// merges only the repositories it used or uses. Merging every
// Application's interests at each change cost O(N²) on a cold start: more
// than half of crowsnest's CPU with 10,000 Applications, measured by the
// benchmark (bench/).
type repoInterests struct {
	byKey  map[string]map[string]registry.Interest // app key -> repository -> interest
	users  map[string]map[string]bool              // repository -> app keys using it
	merged map[string]registry.Interest            // repository -> its users' interests merged
}

// set records the repositories key uses (none: key is gone). It returns
// the union of all interests, for the poller, when that changed.
func (ri *repoInterests) set(key string, repos map[string]registry.Interest) (map[string]registry.Interest, bool) {
	if ri.byKey == nil {
		ri.byKey = map[string]map[string]registry.Interest{}
		ri.users = map[string]map[string]bool{}
		ri.merged = map[string]registry.Interest{}
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
	update := func(repo string, in registry.Interest) {
		if prev, ok := ri.merged[repo]; !ok || !sameInterest(prev, in) {
			ri.merged[repo] = in
			changed = true
		}
	}
	for repo := range old {
		if _, still := repos[repo]; still {
			continue
		}
		delete(ri.users[repo], key)
		if len(ri.users[repo]) == 0 {
			delete(ri.users, repo)
			delete(ri.merged, repo)
			changed = true
			continue
		}
		update(repo, ri.merge(repo))
	}
	for repo, in := range repos {
		if ri.users[repo] == nil {
			ri.users[repo] = map[string]bool{}
		}
		ri.users[repo][key] = true
		prev, known := ri.merged[repo]
		_, had := old[repo]
		switch {
		case !known:
			update(repo, in)
		case !had && (in.Client == nil || prev.Client == nil || in.Client == prev.Client):
			// A new user only adds to the merge (the usual cold start):
			// no need to look at the others.
			update(repo, prev.Merge(in))
		default:
			update(repo, ri.merge(repo))
		}
	}
	if !changed {
		return nil, false
	}
	return maps.Clone(ri.merged), true
}

// merge joins the interests of repo's users as if merged in key order
// (Interest.Merge keeps the first pull-secret client): intervals and
// tracked digests merge in any order, the client is the lowest key's.
func (ri *repoInterests) merge(repo string) registry.Interest {
	var (
		in        registry.Interest
		clientKey string
		first     = true
	)
	for k := range ri.users[repo] {
		x := ri.byKey[k][repo]
		c := x.Client
		x.Client = nil
		if first {
			in, first = x, false
		} else {
			in = in.Merge(x)
		}
		if c != nil && (in.Client == nil || k < clientKey) {
			in.Client, clientKey = c, k
		}
	}
	return in
}

// keysOf returns the keys of the Applications using repo, sorted.
func (ri *repoInterests) keysOf(repo string) []string {
	return slices.Sorted(maps.Keys(ri.users[repo]))
}
