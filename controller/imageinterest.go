package controller

import (
	"context"
	"slices"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// The repositories in use, told to the registry poller, and the poller's
// changes turned back into Applications to reconcile.

// interests says how the poller watches spec's repositories: through the
// client each image's selection reads them with (its pull secret's, or
// the shared one), each a target of its own, so a pull secret that fails
// stops only its own images' polls; and tracking the mutable tag's digest
// for the digest strategy.
func (r *ImageReconciler) interests(spec *imageupdate.Spec) map[registry.Target]registry.Interest {
	out := make(map[registry.Target]registry.Interest, len(spec.Images))
	for i := range spec.Images {
		img := &spec.Images[i]
		t := registry.Target{Repo: img.Ref.Repo()}
		if c := r.clientFor(img); c != r.Registry {
			t.Client = c
		}
		in := out[t]
		if policy.Strategy(img.Policy.Strategy) == policy.StrategyDigest && img.Policy.Constraint != "" &&
			!slices.Contains(in.TrackDigests, img.Policy.Constraint) {
			in.TrackDigests = append(in.TrackDigests, img.Policy.Constraint)
			slices.Sort(in.TrackDigests)
		}
		out[t] = in
	}
	return out
}

// setRepos records the repositories key uses, and how to poll them, and
// hands the union of all to the poller.
func (r *ImageReconciler) setRepos(key string, repos map[registry.Target]registry.Interest) {
	r.mu.Lock()
	interests, changed := r.repos.set(key, repos)
	if changed {
		r.interestsMade++
	}
	made := r.interestsMade
	r.mu.Unlock()
	if !changed || r.Poller == nil {
		return
	}
	// Workers hand their snapshots over in any order: one older than
	// what the poller has would take a newer repository away from it.
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	if made > r.interestsGiven {
		r.Poller.SetInterests(interests)
		r.interestsGiven = made
	}
}

// RepoChanged enqueues every Application that reads the repository
// through the client that saw the change; it is the poller's Listener.
// The others' clients are polled on their own and report for them.
func (r *ImageReconciler) RepoChanged(_ context.Context, ch registry.RepoChange) {
	t := registry.Target{Repo: ch.Repo, Client: ch.Client}
	if t.Client == r.Registry {
		t.Client = nil
	}
	r.mu.Lock()
	keys := r.repos.keysOf(t)
	r.mu.Unlock()
	r.Log.Info("repository changed", "repository", ch.Repo, "pull_secret", t.Client != nil, "added", ch.Added, "apps", len(keys))
	for _, k := range keys {
		r.Queue.Enqueue(k)
	}
}
