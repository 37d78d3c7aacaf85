package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// AzureDevOps is the pull-request API of Azure DevOps Services and of
// Azure DevOps Server (Git REST API 7.1,
// https://learn.microsoft.com/en-us/rest/api/azure/devops/git/pull-requests?view=azure-devops-rest-7.1).
// A Repo's API is the organization's or collection's URL
// ("https://dev.azure.com/ORG", "https://ORG.visualstudio.com",
// "https://HOST/tfs/COLLECTION"), its Owner the project and its Name the
// repository (AzureDevOpsRepo reads them from a clone URL): the
// organization sits in the API URL, where a server's collection sits too.
//
// What it makes of a Proposal: Labels are sent by name, and Azure DevOps
// creates one a project does not have yet. Reviewers are identity IDs
// (GUIDs, as the profile, the Graph API or a pull request's JSON show
// them): the API takes nothing else, and finding a name means the
// Identities API on another host (vssps.dev.azure.com) on Services,
// which a Repo cannot name; a reviewer that is not an ID fails the
// proposal before anything is opened. Assignees are left out: Azure
// DevOps pull requests have none. Draft opens a draft. AutoMerge sets
// auto-complete on behalf of the pull request's creator, who is the
// token's owner, read from the pull request just opened rather than
// asked of connectionData (one request fewer, the same identity).
// Bodies longer than the 4,000 characters Azure DevOps keeps are cut.
type AzureDevOps struct{ c *client }

// bodyLimit is Azure DevOps' limit on a pull request's description.
func (*AzureDevOps) bodyLimit() int { return 4000 }

var _ Forge = (*AzureDevOps)(nil)

// NewAzureDevOps returns the Azure DevOps client that authenticates with
// a personal access token (HTTP Basic with an empty user name) whose
// scope lets it read and write code (Code: Read & write).
func NewAzureDevOps(pat string, o Options) *AzureDevOps {
	return &AzureDevOps{c: newClient(o, basicAuth{"", pat}, nil)}
}

// Azure DevOps constants: the API version asked for (7.1, which Services
// and Azure DevOps Server after 2022 answer; Azure DevOps Server 2022
// answers 7.0 at most, with the same shapes for all crowsnest sends),
// and the longest description a pull request keeps, in UTF-16 code units
// as .NET counts.
const (
	azureAPIVersion     = "7.1"
	azureMaxDescription = 4000
)

// azureID is an identity ID as Azure DevOps writes it; azureOrg an
// organization's name, which a clone URL may put in a host name.
var (
	azureID  = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	azureOrg = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)
)

// AzureDevOpsRepo maps an Azure DevOps clone URL to its Repo:
// https://dev.azure.com/ORG/PROJECT/_git/REPO (with "ORG@" before the
// host or not, and https://dev.azure.com/ORG/_git/REPO for a repository
// named as its project), https://ORG.visualstudio.com/[DefaultCollection/]PROJECT/_git/REPO,
// git@ssh.dev.azure.com:v3/ORG/PROJECT/REPO, ORG@vs-ssh.visualstudio.com:v3/ORG/PROJECT/REPO,
// and an Azure DevOps Server's https://HOST/[PATH/]COLLECTION/PROJECT/_git/REPO.
func AzureDevOpsRepo(repoURL string) (Repo, error) {
	u, ok := repourl.Parse(repoURL)
	if ok {
		if r, ok := azureRepo(u); ok {
			return r, nil
		}
	}
	return Repo{}, fmt.Errorf("%s is not an Azure DevOps repository URL (dev.azure.com/ORG/PROJECT/_git/REPO)", textredact.URL(repoURL))
}

func azureRepo(u repourl.URL) (Repo, bool) {
	seg, ok := u.Segments()
	if !ok {
		return Repo{}, false
	}
	host := strings.ToLower(u.Host)
	if u.Scheme == "ssh" {
		// v3/ORG/PROJECT/REPO
		if len(seg) != 4 || seg[0] != "v3" || !azureOrg.MatchString(seg[1]) {
			return Repo{}, false
		}
		switch host {
		case "ssh.dev.azure.com":
			return Repo{API: "https://dev.azure.com/" + url.PathEscape(seg[1]), Owner: seg[2], Name: seg[3]}, true
		case "vs-ssh.visualstudio.com":
			return Repo{API: "https://" + seg[1] + ".visualstudio.com", Owner: seg[2], Name: seg[3]}, true
		}
		return Repo{}, false
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return Repo{}, false
	}
	at := len(seg) - 2
	if at < 0 || seg[at] != "_git" {
		return Repo{}, false
	}
	before, name := seg[:at], seg[at+1]
	base := u.Scheme + "://" + u.Host
	switch {
	case host == "dev.azure.com" && len(before) == 1:
		return Repo{API: base + "/" + url.PathEscape(before[0]), Owner: name, Name: name}, true
	case host == "dev.azure.com" && len(before) == 2:
		return Repo{API: base + "/" + url.PathEscape(before[0]), Owner: before[1], Name: name}, true
	case strings.HasSuffix(host, ".visualstudio.com") && len(before) > 0 && strings.EqualFold(before[0], "DefaultCollection"):
		base += "/" + before[0]
		before = before[1:]
		fallthrough
	case strings.HasSuffix(host, ".visualstudio.com"):
		switch len(before) {
		case 0:
			return Repo{API: base, Owner: name, Name: name}, true
		case 1:
			return Repo{API: base, Owner: before[0], Name: name}, true
		}
		return Repo{}, false
	case host != "dev.azure.com" && len(before) >= 2:
		// A server: everything before the project is the collection.
		escaped := make([]string, len(before)-1)
		for i, s := range before[:len(before)-1] {
			escaped[i] = url.PathEscape(s)
		}
		return Repo{API: base + "/" + strings.Join(escaped, "/"), Owner: before[len(before)-1], Name: name}, true
	}
	return Repo{}, false
}

type azureIdentity struct {
	ID string `json:"id"`
}

type azureCommit struct {
	CommitID string `json:"commitId"`
}

type azureLabel struct {
	Name   string `json:"name"`
	Active *bool  `json:"active,omitempty"`
}

type azurePull struct {
	PullRequestID   int            `json:"pullRequestId"`
	Status          string         `json:"status"` // active, abandoned, completed
	Title           string         `json:"title"`
	Description     string         `json:"description"`
	SourceRefName   string         `json:"sourceRefName"`
	TargetRefName   string         `json:"targetRefName"`
	CreatedBy       azureIdentity  `json:"createdBy"`
	LastMergeSource *azureCommit   `json:"lastMergeSourceCommit"`
	LastMergeCommit *azureCommit   `json:"lastMergeCommit"`
	Labels          []azureLabel   `json:"labels"`
	ForkSource      map[string]any `json:"forkSource"`
}

func (p *azurePull) pullRequest(r Repo) *PullRequest {
	pr := &PullRequest{Number: p.PullRequestID, URL: azureWebPath(r, p.PullRequestID),
		Head: strings.TrimPrefix(p.SourceRefName, "refs/heads/"), Base: strings.TrimPrefix(p.TargetRefName, "refs/heads/"),
		State: Open, Title: p.Title, Body: p.Description}
	if p.LastMergeSource != nil {
		pr.HeadSHA = p.LastMergeSource.CommitID
	}
	switch p.Status {
	case "completed":
		pr.State = Merged
		if p.LastMergeCommit != nil {
			pr.MergeCommit = p.LastMergeCommit.CommitID
		}
	case "abandoned":
		pr.State = Closed
	}
	for _, l := range p.Labels {
		if l.Active == nil || *l.Active {
			pr.Labels = append(pr.Labels, l.Name)
		}
	}
	return pr
}

// azureWebPath is the page of pull request number, for people.
func azureWebPath(r Repo, number int) string {
	return r.API + "/" + url.PathEscape(r.Owner) + "/_git/" + url.PathEscape(r.Name) + "/pullrequest/" + strconv.Itoa(number)
}

// azureRepoPath is r's path under its API.
func azureRepoPath(r Repo) string {
	return "/" + url.PathEscape(r.Owner) + "/_apis/git/repositories/" + url.PathEscape(r.Name)
}

func azurePullPath(r Repo, number int) string {
	return azureRepoPath(r) + "/pullrequests/" + strconv.Itoa(number) + "?api-version=" + azureAPIVersion
}

// azureDescription is body cut to what Azure DevOps keeps, an ellipsis
// at the end saying so.
func azureDescription(body string) string {
	if len(utf16.Encode([]rune(body))) <= azureMaxDescription {
		return body
	}
	units := 0
	for i, c := range body {
		if units += utf16.RuneLen(c); units > azureMaxDescription-1 {
			return body[:i] + "…"
		}
	}
	return body
}

// Find implements Forge: Azure DevOps searches by source, target and
// status itself. The list cuts descriptions to 400 characters, so the
// pull request found is read whole.
func (a *AzureDevOps) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	q := url.Values{"searchCriteria.sourceRefName": {"refs/heads/" + head}, "searchCriteria.targetRefName": {"refs/heads/" + base},
		"searchCriteria.status": {"active"}, "api-version": {azureAPIVersion}}
	var list struct {
		Value []azurePull `json:"value"`
	}
	if err := a.c.call(ctx, r, http.MethodGet, azureRepoPath(r)+"/pullrequests?"+q.Encode(), nil, &list); err != nil {
		return nil, err
	}
	for i := range list.Value {
		// A pull request from a fork's branch of the same name is not
		// ours.
		if p := &list.Value[i]; p.ForkSource == nil && p.Status == "active" &&
			p.SourceRefName == "refs/heads/"+head && p.TargetRefName == "refs/heads/"+base {
			return a.Get(ctx, r, p.PullRequestID)
		}
	}
	return nil, nil
}

// Get implements Forge.
func (a *AzureDevOps) Get(ctx context.Context, r Repo, number int) (*PullRequest, error) {
	var p azurePull
	if err := a.c.call(ctx, r, http.MethodGet, azurePullPath(r, number), nil, &p); err != nil {
		return nil, err
	}
	return p.pullRequest(r), nil
}

// Open implements Forge; see AzureDevOps for what it makes of p.
func (a *AzureDevOps) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	in := struct {
		SourceRefName string          `json:"sourceRefName"`
		TargetRefName string          `json:"targetRefName"`
		Title         string          `json:"title"`
		Description   string          `json:"description"`
		IsDraft       bool            `json:"isDraft,omitempty"`
		Labels        []azureLabel    `json:"labels,omitempty"`
		Reviewers     []azureIdentity `json:"reviewers,omitempty"`
	}{SourceRefName: "refs/heads/" + p.Head, TargetRefName: "refs/heads/" + p.Base, Title: p.Title, Description: azureDescription(p.Body), IsDraft: p.Draft}
	for _, l := range p.Labels {
		in.Labels = append(in.Labels, azureLabel{Name: l})
	}
	if err := a.Check(r, p); err != nil {
		return nil, err
	}
	for _, id := range p.Reviewers {
		in.Reviewers = append(in.Reviewers, azureIdentity{ID: id})
	}
	var out azurePull
	if err := a.c.call(ctx, r, http.MethodPost, azureRepoPath(r)+"/pullrequests?api-version="+azureAPIVersion, in, &out); err != nil {
		return nil, err
	}
	pr := out.pullRequest(r)
	if p.AutoMerge {
		am := struct {
			AutoCompleteSetBy azureIdentity `json:"autoCompleteSetBy"`
		}{out.CreatedBy}
		if err := a.c.call(ctx, r, http.MethodPatch, azurePullPath(r, out.PullRequestID), am, nil); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, auto-complete not set: %w", pr.Number, err)
		}
	}
	return pr, nil
}

// Edit implements Forge.
func (a *AzureDevOps) Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error) {
	in := struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	}{title, azureDescription(body)}
	var out azurePull
	if err := a.c.call(ctx, r, http.MethodPatch, azurePullPath(r, number), in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(r), nil
}

// Close implements Forge: the comment is a thread of its own, closed so
// that it asks nobody for an answer, then the pull request is abandoned.
func (a *AzureDevOps) Close(ctx context.Context, r Repo, number int, comment string) error {
	if comment != "" {
		type azureComment struct {
			ParentCommentID int    `json:"parentCommentId"`
			Content         string `json:"content"`
			CommentType     string `json:"commentType"`
		}
		in := struct {
			Comments []azureComment `json:"comments"`
			Status   string         `json:"status"`
		}{[]azureComment{{0, comment, "text"}}, "closed"}
		path := azureRepoPath(r) + "/pullRequests/" + strconv.Itoa(number) + "/threads?api-version=" + azureAPIVersion
		if err := a.c.call(ctx, r, http.MethodPost, path, in, nil); err != nil {
			return err
		}
	}
	in := struct {
		Status string `json:"status"`
	}{"abandoned"}
	return a.c.call(ctx, r, http.MethodPatch, azurePullPath(r, number), in, nil)
}

// Check implements ProposalChecker: reviewers are identity IDs.
func (a *AzureDevOps) Check(r Repo, p Proposal) error {
	for _, id := range p.Reviewers {
		if !azureID.MatchString(id) {
			return &PermanentError{fmt.Errorf("forge %s: reviewer %q: Azure DevOps takes identity IDs (GUIDs), not names", r, id)}
		}
	}
	return nil
}
