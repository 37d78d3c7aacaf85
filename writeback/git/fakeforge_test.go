package git

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
)

// fakeForge is a forge's pull-request API as one repository on it sees
// it, for the writer's pull-request mode end to end: a recording server
// (testnotify.Recorder) that keeps its pull requests between requests and
// answers each in the forge's dialect, with the shapes of the forge's
// published API (the ones writeback/forge's tests check request by
// request). Like the forge, it reads a pull request's head commit from
// the Git server and refuses to open one whose head branch is not there
// or that is open already. Faults answer chosen requests instead of the
// forge (a 429, a 5xx), which then has done nothing.
type fakeForge struct {
	*testnotify.Recorder
	t    *testing.T
	git  *testgit.Server
	repo string // the repository on git
	// path is the repository's API path ("/api/v3/repos/team/apps"),
	// matched against requests' escaped paths.
	path    string
	dialect func(*fakeForge, testnotify.Request) testnotify.Answer

	mu     sync.Mutex
	n      int                       // requests so far
	faults map[int]testnotify.Answer // by request number, from 1
	// doneAnyway are the faults answered after the request was done
	// (a forge that opens the pull request and answers 5xx).
	doneAnyway map[int]bool
	pulls      []*fakePull // pull request number i+1
}

// fakePull is a pull request the fake forge keeps.
type fakePull struct {
	number, version         int
	head, base, title, body string
}

func newFakeForge(t *testing.T, git *testgit.Server, repo, path string, dialect func(*fakeForge, testnotify.Request) testnotify.Answer) *fakeForge {
	t.Helper()
	f := &fakeForge{t: t, git: git, repo: repo, path: path, dialect: dialect, faults: map[int]testnotify.Answer{}}
	f.Recorder = testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: f.answer})
	return f
}

func (f *fakeForge) answer(r testnotify.Request) testnotify.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if a, ok := f.faults[f.n]; ok {
		if f.doneAnyway[f.n] {
			f.dialect(f, r)
		}
		return a
	}
	return f.dialect(f, r)
}

// failNextDone is failNext for a request the forge does all the same.
func (f *fakeForge) failNextDone(k int, a testnotify.Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[f.n+k] = a
	if f.doneAnyway == nil {
		f.doneAnyway = map[int]bool{}
	}
	f.doneAnyway[f.n+k] = true
}

// failNext answers the k-th request from now (1: the next) with a
// instead of the forge.
func (f *fakeForge) failNext(k int, a testnotify.Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[f.n+k] = a
}

// opened is how many pull requests were opened.
func (f *fakeForge) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pulls)
}

// calls are the requests so far as "METHOD escaped-path".
func (f *fakeForge) calls() []string {
	var out []string
	for _, r := range f.Requests() {
		out = append(out, r.Method+" "+r.EscapedPath)
	}
	return out
}

// find returns the open pull request from head into base, nil for none.
func (f *fakeForge) find(head, base string) *fakePull {
	for _, p := range f.pulls {
		if p.head == head && p.base == base {
			return p
		}
	}
	return nil
}

// open opens a pull request, or refuses as a forge does (false): its head
// branch is not on the Git server, or one from head into base is open.
func (f *fakeForge) open(head, base, title, body string) (*fakePull, bool) {
	if f.sha(head) == "" || f.sha(base) == "" || f.find(head, base) != nil {
		return nil, false
	}
	p := &fakePull{number: len(f.pulls) + 1, head: head, base: base, title: title, body: body}
	f.pulls = append(f.pulls, p)
	return p, true
}

// pull returns the pull request an API path ending in "/NUMBER" names.
func (f *fakeForge) pull(path, prefix string) *fakePull {
	n, err := strconv.Atoi(strings.TrimPrefix(path, prefix+"/"))
	if err != nil || !strings.HasPrefix(path, prefix+"/") || n < 1 || n > len(f.pulls) {
		return nil
	}
	return f.pulls[n-1]
}

// sha is the commit branch points at on the Git server, "" when the
// branch is not there.
func (f *fakeForge) sha(branch string) string {
	return f.git.Head(f.t, f.repo, branch)
}

// jsonAnswer answers status with v as JSON.
func jsonAnswer(status int, v any) testnotify.Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return testnotify.Answer{Status: http.StatusInternalServerError, Body: err.Error()}
	}
	return testnotify.Answer{Status: status, Header: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

// decode reads a request's JSON body into v, reporting whether it could.
func decode(r testnotify.Request, v any) bool {
	return json.Unmarshal([]byte(r.Body), v) == nil
}

var notFound = jsonAnswer(http.StatusNotFound, map[string]string{"message": "Not Found"})

// onePull answers a request for the pull request a path under pulls
// names: GET reads it; edit (the forge's method) replaces its title and
// its body (the field bodyField) and answers it.
func (f *fakeForge) onePull(r testnotify.Request, pulls, edit, bodyField string, view func(*fakePull) obj) testnotify.Answer {
	p := f.pull(r.EscapedPath, pulls)
	var in map[string]any
	switch {
	case p == nil:
		return notFound
	case r.Method == http.MethodGet:
		return jsonAnswer(http.StatusOK, view(p))
	case r.Method != edit:
		return notFound
	case !decode(r, &in):
		return jsonAnswer(http.StatusBadRequest, obj{"message": "invalid JSON"})
	}
	p.title, _ = in["title"].(string)
	p.body, _ = in[bodyField].(string)
	return jsonAnswer(http.StatusOK, view(p))
}

type obj = map[string]any

// githubAPI answers as GitHub's REST API v3 does
// (https://docs.github.com/en/rest/pulls/pulls): list with state, head
// (OWNER:BRANCH) and base; create; update.
func githubAPI(f *fakeForge, r testnotify.Request) testnotify.Answer {
	pulls := f.path + "/pulls"
	view := func(p *fakePull) obj {
		return obj{"number": p.number, "node_id": "PR_kwDO" + strconv.Itoa(p.number), "state": "open", "title": p.title, "body": p.body,
			"html_url": "https://ghe.example.com/team/apps/pull/" + strconv.Itoa(p.number), "merged": false, "merged_at": nil, "labels": []obj{},
			"head": obj{"ref": p.head, "sha": f.sha(p.head), "label": "team:" + p.head}, "base": obj{"ref": p.base, "sha": f.sha(p.base)}}
	}
	q, _ := url.ParseQuery(r.Query)
	switch {
	case r.Method == http.MethodGet && r.EscapedPath == pulls:
		list := []obj{}
		owner, head, _ := strings.Cut(q.Get("head"), ":")
		if p := f.find(head, q.Get("base")); p != nil && owner == "team" && q.Get("state") == "open" {
			list = append(list, view(p))
		}
		return jsonAnswer(http.StatusOK, list)
	case r.Method == http.MethodPost && r.EscapedPath == pulls:
		var in struct{ Title, Head, Base, Body string }
		if !decode(r, &in) {
			return jsonAnswer(http.StatusBadRequest, obj{"message": "Problems parsing JSON"})
		}
		p, ok := f.open(in.Head, in.Base, in.Title, in.Body)
		if !ok {
			return jsonAnswer(http.StatusUnprocessableEntity, obj{"message": "Validation Failed"})
		}
		return jsonAnswer(http.StatusCreated, view(p))
	}
	return f.onePull(r, pulls, http.MethodPatch, "body", view)
}

// gitlabAPI answers as GitLab's REST API v4 does
// (https://docs.gitlab.com/api/merge_requests/): list with state,
// source_branch and target_branch; create; get; update.
func gitlabAPI(f *fakeForge, r testnotify.Request) testnotify.Answer {
	mrs := f.path + "/merge_requests"
	view := func(p *fakePull) obj {
		return obj{"id": 100 + p.number, "iid": p.number, "project_id": 7, "state": "opened", "title": p.title, "description": p.body,
			"source_branch": p.head, "target_branch": p.base, "source_project_id": 7, "target_project_id": 7,
			"sha": f.sha(p.head), "labels": []string{}, "draft": false, "detailed_merge_status": "mergeable",
			"web_url": "https://gitlab.example.com/team/apps/-/merge_requests/" + strconv.Itoa(p.number)}
	}
	q, _ := url.ParseQuery(r.Query)
	switch {
	case r.Method == http.MethodGet && r.EscapedPath == mrs:
		list := []obj{}
		if p := f.find(q.Get("source_branch"), q.Get("target_branch")); p != nil && q.Get("state") == "opened" {
			list = append(list, view(p))
		}
		return jsonAnswer(http.StatusOK, list)
	case r.Method == http.MethodPost && r.EscapedPath == mrs:
		var in struct {
			Source      string `json:"source_branch"`
			Target      string `json:"target_branch"`
			Title       string `json:"title"`
			Description string `json:"description"`
		}
		if !decode(r, &in) {
			return jsonAnswer(http.StatusBadRequest, obj{"error": "invalid JSON"})
		}
		p, ok := f.open(in.Source, in.Target, in.Title, in.Description)
		if !ok {
			return jsonAnswer(http.StatusConflict, obj{"message": []string{"Another open merge request already exists for this source branch"}})
		}
		return jsonAnswer(http.StatusCreated, view(p))
	}
	return f.onePull(r, mrs, http.MethodPut, "description", view)
}

// bbql is the query crowsnest's Find sends Bitbucket Cloud.
var bbql = regexp.MustCompile(`^source\.branch\.name="([^"]*)" AND destination\.branch\.name="([^"]*)" AND state="OPEN"$`)

// bitbucketCloudAPI answers as Bitbucket Cloud's REST API 2.0 does
// (https://developer.atlassian.com/cloud/bitbucket/rest/api-group-pullrequests/):
// list filtered with q; create; get; update; a commit by its
// abbreviation, as a pull request names its commits.
func bitbucketCloudAPI(f *fakeForge, r testnotify.Request) testnotify.Answer {
	pulls := f.path + "/pullrequests"
	endpoint := func(branch string) obj {
		sha := f.sha(branch)
		return obj{"branch": obj{"name": branch}, "commit": obj{"type": "commit", "hash": sha[:min(len(sha), 12)]},
			"repository": obj{"type": "repository", "full_name": "team/apps"}}
	}
	view := func(p *fakePull) obj {
		return obj{"type": "pullrequest", "id": p.number, "state": "OPEN", "title": p.title, "description": p.body,
			"summary": obj{"type": "rendered", "raw": p.body, "markup": "markdown"}, "draft": false, "reviewers": []obj{},
			"source": endpoint(p.head), "destination": endpoint(p.base),
			"links": obj{"html": obj{"href": "https://bitbucket.org/team/apps/pull-requests/" + strconv.Itoa(p.number)}}}
	}
	q, _ := url.ParseQuery(r.Query)
	switch {
	case r.Method == http.MethodGet && r.EscapedPath == pulls:
		list := []obj{}
		if m := bbql.FindStringSubmatch(q.Get("q")); m != nil {
			if p := f.find(m[1], m[2]); p != nil {
				list = append(list, view(p))
			}
		}
		return jsonAnswer(http.StatusOK, obj{"pagelen": 50, "page": 1, "size": len(list), "values": list})
	case r.Method == http.MethodPost && r.EscapedPath == pulls:
		var in struct {
			Title, Description  string
			Source, Destination struct{ Branch struct{ Name string } }
		}
		if !decode(r, &in) {
			return jsonAnswer(http.StatusBadRequest, obj{"type": "error", "error": obj{"message": "Bad request"}})
		}
		p, ok := f.open(in.Source.Branch.Name, in.Destination.Branch.Name, in.Title, in.Description)
		if !ok {
			return jsonAnswer(http.StatusBadRequest, obj{"type": "error", "error": obj{"message": "There are no changes to be pulled"}})
		}
		return jsonAnswer(http.StatusCreated, view(p))
	case r.Method == http.MethodGet && strings.HasPrefix(r.EscapedPath, f.path+"/commit/"):
		short := strings.TrimPrefix(r.EscapedPath, f.path+"/commit/")
		for _, p := range f.pulls {
			for _, sha := range []string{f.sha(p.head), f.sha(p.base)} {
				if len(short) >= 12 && strings.HasPrefix(sha, short) && q.Get("fields") == "hash" {
					return jsonAnswer(http.StatusOK, obj{"hash": sha})
				}
			}
		}
		return notFound
	}
	return f.onePull(r, pulls, http.MethodPut, "description", view)
}

// bitbucketServerAPI answers as Bitbucket Data Center's REST API does
// (https://developer.atlassian.com/server/bitbucket/rest/v906/api-group-pull-requests/):
// outgoing pull requests at a branch; create; get; update at the version
// read, which the update moves on.
func bitbucketServerAPI(f *fakeForge, r testnotify.Request) testnotify.Answer {
	pulls := f.path + "/pull-requests"
	ref := func(branch string) obj {
		return obj{"id": "refs/heads/" + branch, "displayId": branch, "latestCommit": f.sha(branch),
			"repository": obj{"slug": "apps", "project": obj{"key": "TEAM"}}}
	}
	view := func(p *fakePull) obj {
		return obj{"id": p.number, "version": p.version, "state": "OPEN", "open": true, "closed": false, "title": p.title, "description": p.body,
			"fromRef": ref(p.head), "toRef": ref(p.base), "reviewers": []obj{},
			"links": obj{"self": []obj{{"href": "https://bitbucket.example.com/projects/TEAM/repos/apps/pull-requests/" + strconv.Itoa(p.number)}}}}
	}
	q, _ := url.ParseQuery(r.Query)
	switch {
	case r.Method == http.MethodGet && r.EscapedPath == pulls:
		list := []obj{}
		for _, p := range f.pulls {
			if "refs/heads/"+p.head == q.Get("at") && q.Get("direction") == "OUTGOING" && q.Get("state") == "OPEN" {
				list = append(list, view(p))
			}
		}
		return jsonAnswer(http.StatusOK, obj{"size": len(list), "limit": 50, "start": 0, "isLastPage": true, "values": list})
	case r.Method == http.MethodPost && r.EscapedPath == pulls:
		var in struct {
			Title, Description string
			FromRef, ToRef     struct{ ID string }
		}
		if !decode(r, &in) {
			return jsonAnswer(http.StatusBadRequest, obj{"errors": []obj{{"message": "invalid JSON"}}})
		}
		p, ok := f.open(strings.TrimPrefix(in.FromRef.ID, "refs/heads/"), strings.TrimPrefix(in.ToRef.ID, "refs/heads/"), in.Title, in.Description)
		if !ok {
			return jsonAnswer(http.StatusConflict, obj{"errors": []obj{{"exceptionName": "com.atlassian.bitbucket.pull.DuplicatePullRequestException"}}})
		}
		return jsonAnswer(http.StatusCreated, view(p))
	}
	p := f.pull(r.EscapedPath, pulls)
	switch {
	case p == nil:
		return notFound
	case r.Method == http.MethodGet:
		return jsonAnswer(http.StatusOK, view(p))
	case r.Method == http.MethodPut:
		var in struct {
			Version            *int
			Title, Description string
		}
		if !decode(r, &in) || in.Version == nil || *in.Version != p.version {
			return jsonAnswer(http.StatusConflict, obj{"errors": []obj{{"exceptionName": "com.atlassian.bitbucket.pull.PullRequestOutOfDateException"}}})
		}
		p.title, p.body = in.Title, in.Description
		p.version++
		return jsonAnswer(http.StatusOK, view(p))
	}
	return notFound
}

// azureAPI answers as Azure DevOps' Git REST API 7.1 does
// (https://learn.microsoft.com/en-us/rest/api/azure/devops/git/pull-requests?view=azure-devops-rest-7.1):
// list with searchCriteria; create; get; update. Every request names
// the API version.
func azureAPI(f *fakeForge, r testnotify.Request) testnotify.Answer {
	pulls := f.path + "/pullrequests"
	view := func(p *fakePull) obj {
		return obj{"pullRequestId": p.number, "codeReviewId": p.number, "status": "active", "title": p.title, "description": p.body,
			"sourceRefName": "refs/heads/" + p.head, "targetRefName": "refs/heads/" + p.base, "isDraft": false, "mergeStatus": "succeeded",
			"createdBy":             obj{"id": "d6245f20-2af8-44f4-9451-8107cb2767db", "displayName": "crowsnest bot"},
			"lastMergeSourceCommit": obj{"commitId": f.sha(p.head)}, "lastMergeTargetCommit": obj{"commitId": f.sha(p.base)},
			"repository": obj{"name": "apps", "project": obj{"name": "ops"}}}
	}
	q, _ := url.ParseQuery(r.Query)
	if q.Get("api-version") != "7.1" {
		return jsonAnswer(http.StatusBadRequest, obj{"message": "No api-version was supplied"})
	}
	switch {
	case r.Method == http.MethodGet && r.EscapedPath == pulls:
		list := []obj{}
		head, _ := strings.CutPrefix(q.Get("searchCriteria.sourceRefName"), "refs/heads/")
		base, _ := strings.CutPrefix(q.Get("searchCriteria.targetRefName"), "refs/heads/")
		if p := f.find(head, base); p != nil && q.Get("searchCriteria.status") == "active" {
			list = append(list, view(p))
		}
		return jsonAnswer(http.StatusOK, obj{"value": list, "count": len(list)})
	case r.Method == http.MethodPost && r.EscapedPath == pulls:
		var in struct{ SourceRefName, TargetRefName, Title, Description string }
		if !decode(r, &in) {
			return jsonAnswer(http.StatusBadRequest, obj{"message": "invalid JSON"})
		}
		p, ok := f.open(strings.TrimPrefix(in.SourceRefName, "refs/heads/"), strings.TrimPrefix(in.TargetRefName, "refs/heads/"), in.Title, in.Description)
		if !ok {
			return jsonAnswer(http.StatusConflict, obj{"message": "TF401179: An active pull request for the source and target branch already exists."})
		}
		return jsonAnswer(http.StatusCreated, view(p))
	}
	return f.onePull(r, pulls, http.MethodPatch, "description", view)
}
