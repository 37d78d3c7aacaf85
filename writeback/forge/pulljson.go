package forge

import "net/url"

// pullJSON is a pull request as GitHub's REST API writes it, and Gitea's,
// which copies it in what crowsnest reads.
type pullJSON struct {
	Number  int    `json:"number"`
	NodeID  string `json:"node_id"` // GitHub's GraphQL ID
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	// Merged is sent for one pull request, MergedAt in lists too.
	Merged      bool        `json:"merged"`
	MergedAt    *string     `json:"merged_at"`
	MergeCommit string      `json:"merge_commit_sha"`
	Title       string      `json:"title"`
	Body        string      `json:"body"`
	Head        branchJSON  `json:"head"`
	Base        branchJSON  `json:"base"`
	Labels      []labelJSON `json:"labels"`
}

type branchJSON struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

type labelJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func (p *pullJSON) pullRequest() *PullRequest {
	pr := &PullRequest{Number: p.Number, URL: p.HTMLURL, Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA,
		State: Open, Title: p.Title, Body: p.Body}
	switch {
	case p.Merged || p.MergedAt != nil:
		// merge_commit_sha is GitHub's test merge until the pull
		// request is merged: read only then.
		pr.State, pr.MergeCommit = Merged, p.MergeCommit
	case p.State == "closed":
		pr.State = Closed
	}
	for _, l := range p.Labels {
		pr.Labels = append(pr.Labels, l.Name)
	}
	return pr
}

// findOpen returns the open pull request from head into base among
// pulls, nil when there is none.
func findOpen(pulls []pullJSON, head, base string) *PullRequest {
	for i := range pulls {
		if p := &pulls[i]; p.Head.Ref == head && p.Base.Ref == base && p.State == "open" {
			return p.pullRequest()
		}
	}
	return nil
}

// reposPath is the API path of r on GitHub and Gitea.
func reposPath(r Repo) string {
	return "/repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name)
}
