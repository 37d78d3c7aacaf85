package collect

import (
	"errors"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// Outcome is what writing one batch did for one Application.
type Outcome struct {
	// Key is the Application's namespace/name.
	Key string
	// Changes are what it asked to write.
	Changes []gitwb.Change
	// Results are what each commit of the batch that names it (one per
	// repository and branch) did for it, in the writer's order. None
	// means the writer said nothing of it: it failed with ErrNoResult.
	Results []Result
}

// Result is what one commit of a batch (one repository and branch) did
// for one Application: a failure, its updates written, or nothing (they
// were already there).
type Result struct {
	// Repo is the repository (gitwb.RepoID, no credentials), Branch the
	// branch and Commit the commit that wrote Updates.
	Repo, Branch, Commit string
	Updates              []gitwb.Update
	// Err is why the Application's changes there were not written.
	// Refused says every one was refused for writing outside what the
	// Application renders from: retrying cannot change the answer.
	Err     error
	Refused bool
	// PullRequest is the pull request that proposes the Application's
	// changes (a pull-request write-back), PullRequestAction what the
	// write did to it (gitwb.PullRequestOpened, ...); Commit is then the
	// head's commit, on the pull request's branch, not deployed.
	PullRequest       *forge.PullRequest
	PullRequestAction string
}

// Proposed reports whether the batch proposed the Application's changes
// in a pull request (and failed none).
func (o *Outcome) Proposed() bool {
	for i := range o.Results {
		if o.Results[i].Err == nil && o.Results[i].PullRequest != nil {
			return !o.Failed()
		}
	}
	return false
}

// Failed reports whether a commit of the batch failed the Application.
func (o *Outcome) Failed() bool {
	for i := range o.Results {
		if o.Results[i].Err != nil {
			return true
		}
	}
	return false
}

// Written reports whether a commit of the batch wrote the Application's
// updates.
func (o *Outcome) Written() bool {
	for i := range o.Results {
		if o.Results[i].Err == nil && len(o.Results[i].Updates) > 0 {
			return true
		}
	}
	return false
}

// attribute adds one writer's result to the outcomes of the Applications
// it names (res.Keys): each hears of its own failure or its own updates,
// never another's. Results are attributed by the Application's key, which
// the batch put on every change and the writer carries into Result.Keys,
// Update.Key and ChangeError.Key: never by the bare name (two namespaces
// may both hold a "web" writing to one repository) nor by comparing
// repository URLs (a change's URL may carry credentials the result's has
// not; gitwb.RepoID is the one identity when URLs must be compared).
func attribute(res *gitwb.Result, outcomes map[string]*Outcome) {
	failed := map[string]error{}
	for _, f := range res.Failed {
		failed[f.Key] = errors.Join(failed[f.Key], f.Err)
	}
	updates := map[string][]gitwb.Update{}
	for i := range res.Updates {
		u := &res.Updates[i]
		updates[u.Key] = append(updates[u.Key], *u)
	}
	repo := gitwb.RepoID(res.RepoURL)
	for _, k := range res.Keys {
		o := outcomes[k]
		if o == nil {
			continue
		}
		r := Result{Repo: repo, Branch: res.Branch}
		switch {
		case res.Err != nil:
			r.Err = res.Err
		case failed[k] != nil:
			r.Err, r.Refused = failed[k], onlyRefused(res.Failed, k)
		case len(updates[k]) > 0:
			r.Commit, r.Updates = res.CommitSHA, updates[k]
		}
		if r.Err == nil && res.PullRequest != nil {
			r.PullRequest, r.PullRequestAction = res.PullRequest, res.PullRequestAction
		}
		o.Results = append(o.Results, r)
	}
}

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
