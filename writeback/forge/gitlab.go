package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// GitLab is the merge-request API of gitlab.com and self-managed GitLab
// (REST v4). A Repo's Owner is the project's namespace, nested groups
// included ("group/subgroup"); Number is a merge request's IID.
type GitLab struct{ c *client }

var _ Forge = (*GitLab)(nil)

// NewGitLab returns the GitLab client that authenticates with token: a
// personal, project or group access token with the api scope (a project
// or group token at the Developer role at least).
func NewGitLab(token string, o Options) *GitLab {
	return &GitLab{c: newClient(o, headerToken{"PRIVATE-TOKEN", "", token}, nil)}
}

// gitlabDraftPrefix marks a draft: GitLab reads it from the title.
const gitlabDraftPrefix = "Draft: "

// gitlabPageSize is how many merge requests one search asks for: one
// page, as the search is by source and target branch.
const gitlabPageSize = 100

// gitlabPreparing are the merge statuses of a merge request GitLab is
// still preparing or checking: asked to merge then, it refuses (405), so
// auto-merge waits for another status, at most gitlabPrepareWait.
var gitlabPreparing = []string{"preparing", "unchecked", "checking", "approvals_syncing"}

// gitlabPrepareWait bounds that wait: GitLab prepares a new merge request
// in a second or two; a busy instance in tens of seconds.
const gitlabPrepareWait = 30 * time.Second

type gitlabMR struct {
	IID             int      `json:"iid"`
	WebURL          string   `json:"web_url"`
	State           string   `json:"state"`
	SourceBranch    string   `json:"source_branch"`
	TargetBranch    string   `json:"target_branch"`
	SourceProjectID int64    `json:"source_project_id"`
	TargetProjectID int64    `json:"target_project_id"`
	SHA             string   `json:"sha"`
	MergeCommitSHA  string   `json:"merge_commit_sha"`
	SquashCommitSHA string   `json:"squash_commit_sha"`
	Title           string   `json:"title"`
	Description     string   `json:"description"`
	Labels          []string `json:"labels"`
	Draft           bool     `json:"draft"`
	MergeStatus     string   `json:"detailed_merge_status"`
}

func (m *gitlabMR) pullRequest() *PullRequest {
	pr := &PullRequest{Number: m.IID, URL: m.WebURL, Head: m.SourceBranch, Base: m.TargetBranch, HeadSHA: m.SHA,
		State: Open, Title: m.Title, Body: m.Description, Labels: m.Labels}
	switch m.State {
	case "merged":
		// A merge commit, else the squash commit of a fast-forward
		// squash, else (a fast-forward merge) the head itself.
		pr.State, pr.MergeCommit = Merged, m.MergeCommitSHA
		if pr.MergeCommit == "" {
			pr.MergeCommit = m.SquashCommitSHA
		}
		if pr.MergeCommit == "" {
			pr.MergeCommit = m.SHA
		}
	case "closed":
		pr.State = Closed
	}
	return pr
}

// gitlabProject is the API path of r's project: its full path,
// URL-encoded, dots too, as GitLab's Go client sends it.
func gitlabProject(r Repo) string {
	return "/projects/" + strings.ReplaceAll(url.PathEscape(r.Owner+"/"+r.Name), ".", "%2E")
}

func gitlabMRPath(r Repo, iid int) string {
	return gitlabProject(r) + "/merge_requests/" + strconv.Itoa(iid)
}

// Find implements Forge: merge requests from a branch of the project
// itself (not a fork's) into base.
func (g *GitLab) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	q := url.Values{"state": {"opened"}, "source_branch": {head}, "target_branch": {base}, "per_page": {strconv.Itoa(gitlabPageSize)}}
	var mrs []gitlabMR
	if err := g.c.call(ctx, r, http.MethodGet, gitlabProject(r)+"/merge_requests?"+q.Encode(), nil, &mrs); err != nil {
		return nil, err
	}
	for i := range mrs {
		if m := &mrs[i]; m.SourceBranch == head && m.TargetBranch == base && m.State == "opened" && m.SourceProjectID == m.TargetProjectID {
			return m.pullRequest(), nil
		}
	}
	return nil, nil
}

// Get implements Forge.
func (g *GitLab) Get(ctx context.Context, r Repo, iid int) (*PullRequest, error) {
	m, err := g.get(ctx, r, iid)
	if err != nil {
		return nil, err
	}
	return m.pullRequest(), nil
}

func (g *GitLab) get(ctx context.Context, r Repo, iid int) (*gitlabMR, error) {
	var m gitlabMR
	if err := g.c.call(ctx, r, http.MethodGet, gitlabMRPath(r, iid), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Open implements Forge. Reviewers and assignees are user names looked
// up as GitLab user IDs first (GET /users?username=, one request each);
// a name without a user is left out, and once the merge request is open
// it is returned with a permanent error that names them. GitLab creates
// a label the project and its groups do not have.
func (g *GitLab) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	ids, missing, err := g.userIDs(ctx, r, slices.Concat(p.Assignees, p.Reviewers))
	if err != nil {
		return nil, err
	}
	in := struct {
		SourceBranch string  `json:"source_branch"`
		TargetBranch string  `json:"target_branch"`
		Title        string  `json:"title"`
		Description  string  `json:"description"`
		Labels       string  `json:"labels,omitempty"`
		AssigneeIDs  []int64 `json:"assignee_ids,omitempty"`
		ReviewerIDs  []int64 `json:"reviewer_ids,omitempty"`
	}{SourceBranch: p.Head, TargetBranch: p.Base, Title: p.Title, Description: p.Body, Labels: strings.Join(p.Labels, ",")}
	if p.Draft {
		in.Title = gitlabDraftPrefix + in.Title
	}
	for _, name := range p.Assignees {
		if id, ok := ids[name]; ok {
			in.AssigneeIDs = append(in.AssigneeIDs, id)
		}
	}
	for _, name := range p.Reviewers {
		if id, ok := ids[name]; ok {
			in.ReviewerIDs = append(in.ReviewerIDs, id)
		}
	}
	var out gitlabMR
	if err := g.c.call(ctx, r, http.MethodPost, gitlabProject(r)+"/merge_requests", in, &out); err != nil {
		return nil, err
	}
	pr := out.pullRequest()
	var errs []error
	if p.AutoMerge {
		if err := g.autoMerge(ctx, r, &out); err != nil {
			errs = append(errs, fmt.Errorf("auto-merge not set: %w", err))
		}
		pr = out.pullRequest()
	}
	if len(missing) > 0 {
		errs = append(errs, &PermanentError{fmt.Errorf("forge %s: no GitLab user %s: not assigned or asked to review", r, strings.Join(missing, ", "))})
	}
	if len(errs) > 0 {
		return pr, fmt.Errorf("merge request !%d opened: %w", pr.Number, errors.Join(errs...))
	}
	return pr, nil
}

type gitlabUser struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
}

// userIDs looks up names (once each): the IDs of those GitLab has, and
// the names it has no user for, in order.
func (g *GitLab) userIDs(ctx context.Context, r Repo, names []string) (map[string]int64, []string, error) {
	ids := map[string]int64{}
	var missing []string
	for _, name := range names {
		if _, ok := ids[name]; ok || slices.Contains(missing, name) {
			continue
		}
		var users []gitlabUser
		if err := g.c.call(ctx, r, http.MethodGet, "/users?"+url.Values{"username": {name}}.Encode(), nil, &users); err != nil {
			return nil, nil, err
		}
		i := slices.IndexFunc(users, func(u gitlabUser) bool { return strings.EqualFold(u.Username, name) })
		if i < 0 {
			missing = append(missing, name)
			continue
		}
		ids[name] = users[i].ID
	}
	return ids, missing, nil
}

// autoMerge asks GitLab to merge m once its pipeline and approvals are
// in (at once when nothing is required), for m's head commit only.
// auto_merge is GitLab 17.11's name, merge_when_pipeline_succeeds the
// earlier one: an older GitLab ignores the first, a newer one takes
// both. m is updated from the answer.
func (g *GitLab) autoMerge(ctx context.Context, r Repo, m *gitlabMR) error {
	if err := g.waitPrepared(ctx, r, m); err != nil {
		return err
	}
	in := struct {
		AutoMerge                 bool   `json:"auto_merge"`
		MergeWhenPipelineSucceeds bool   `json:"merge_when_pipeline_succeeds"`
		SHA                       string `json:"sha"`
	}{true, true, m.SHA}
	return g.c.call(ctx, r, http.MethodPut, gitlabMRPath(r, m.IID)+"/merge", in, m)
}

// waitPrepared waits, at most gitlabPrepareWait, while GitLab prepares
// m or checks whether it can be merged.
func (g *GitLab) waitPrepared(ctx context.Context, r Repo, m *gitlabMR) error {
	ctx, cancel := context.WithTimeout(ctx, gitlabPrepareWait)
	defer cancel()
	for attempt := 1; slices.Contains(gitlabPreparing, m.MergeStatus); attempt++ {
		if err := backoff.Sleep(ctx, backoff.Delay(250*time.Millisecond, 4*time.Second, attempt)); err != nil {
			return fmt.Errorf("forge %s: merge request !%d still %s: %w", r, m.IID, m.MergeStatus, err)
		}
		got, err := g.get(ctx, r, m.IID)
		if err != nil {
			return err
		}
		*m = *got
	}
	return nil
}

// Edit implements Forge. A draft stays a draft: its title keeps the
// prefix, read from the merge request first.
func (g *GitLab) Edit(ctx context.Context, r Repo, iid int, title, body string) (*PullRequest, error) {
	m, err := g.get(ctx, r, iid)
	if err != nil {
		return nil, err
	}
	if m.Draft && !strings.HasPrefix(title, gitlabDraftPrefix) {
		title = gitlabDraftPrefix + title
	}
	in := struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	}{title, body}
	var out gitlabMR
	if err := g.c.call(ctx, r, http.MethodPut, gitlabMRPath(r, iid), in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

// Close implements Forge: the comment is a note on the merge request.
func (g *GitLab) Close(ctx context.Context, r Repo, iid int, comment string) error {
	if comment != "" {
		in := struct {
			Body string `json:"body"`
		}{comment}
		if err := g.c.call(ctx, r, http.MethodPost, gitlabMRPath(r, iid)+"/notes", in, nil); err != nil {
			return err
		}
	}
	in := struct {
		StateEvent string `json:"state_event"`
	}{"close"}
	return g.c.call(ctx, r, http.MethodPut, gitlabMRPath(r, iid), in, nil)
}
