package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// The media types and API version go-github (Argo CD's client) sends,
// per endpoint, so GitHub answers both clients alike.
const (
	githubMediaV3          = "application/vnd.github.v3+json"
	githubMediaDeployments = "application/vnd.github.ant-man-preview+json, application/vnd.github.flash-preview+json"
	githubMediaCommitPulls = "application/vnd.github.groot-preview+json"
	githubMediaComments    = "application/vnd.github.squirrel-girl-preview"
	githubMediaCheckRuns   = "application/vnd.github.antiope-preview+json"
	githubAPIVersion       = "2022-11-28"
)

const (
	// githubDescriptionMax is GitHub's limit on a status description.
	githubDescriptionMax = 140
	// githubCommentMax is GitHub's limit on a comment body.
	githubCommentMax = 65536
	// githubCommentTag marks a comment a commentTag updates (Argo CD's
	// marker, so comments it made are found too).
	githubCommentTag = "<!-- argocd-notifications %s -->"
	// githubCheckRunExternalID is the external_id of check runs, Argo
	// CD's.
	githubCheckRunExternalID = "argocd-notifications"
)

// githubSender does what a github block asks, in Argo CD's order:
// commit status, deployment, pull request comment, check run,
// repository dispatch. A recipient is not needed (the repository comes
// from the Application).
type githubSender struct {
	c    *svc.Client
	auth *githubAuth
	api  string
}

var _ notify.Service = (*githubSender)(nil)

func (g *githubSender) Send(ctx context.Context, n notify.Notification, _ notify.Destination) (notify.Receipt, error) {
	var b servicetypes.GitHubBlock
	ok, err := svc.DecodeBlock(n, "github", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	if !ok {
		return notify.Receipt{Skipped: true, Detail: "template has no github block"}, nil
	}
	if !acts(&b) {
		return notify.Receipt{Skipped: true, Detail: "github block has no status, deployment, pullRequestComment, checkRun or repositoryDispatch"}, nil
	}
	t, err := targetOf(&b)
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", g.c.Service, err))
	}
	var done []string
	steps := []struct {
		what string
		on   bool
		rev  bool
		run  func() (string, error)
	}{
		{"commit status", b.Status != nil, true, func() (string, error) { return g.status(ctx, t, b.Status, n.Message) }},
		{"deployment", b.Deployment != nil, true, func() (string, error) { return g.deployment(ctx, t, b.Deployment, n.Message) }},
		{"pull request comment", b.PullRequestComment != nil, true, func() (string, error) { return g.comment(ctx, t, b.PullRequestComment) }},
		{"check run", b.CheckRun != nil, true, func() (string, error) { return g.checkRun(ctx, t, b.CheckRun) }},
		{"repository dispatch", b.RepositoryDispatch != nil, false, func() (string, error) { return g.dispatch(ctx, t, b.RepositoryDispatch) }},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if s.rev {
			if err := t.needRevision(s.what); err != nil {
				return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", g.c.Service, err))
			}
		}
		id, err := s.run()
		if err != nil {
			// A retry sends every step again: statuses and check runs
			// add an entry, the deployment is found, a tagged comment
			// is updated.
			return notify.Receipt{}, fmt.Errorf("%s on %s: %w", s.what, t, err)
		}
		done = append(done, id)
	}
	return notify.Receipt{ID: strings.Join(done, "; ")}, nil
}

// status creates a commit status on the revision.
func (g *githubSender) status(ctx context.Context, t githubTarget, s *servicetypes.GitHubStatus, message string) (string, error) {
	resp, err := g.call(ctx, http.MethodPost, t.path("statuses", t.escapedRev()), nil, githubMediaV3, map[string]string{
		"state": s.State, "target_url": s.TargetURL, "context": s.Label,
		"description": truncRunes(message, githubDescriptionMax),
	})
	if err != nil {
		return "", err
	}
	return "status " + githubID(resp), nil
}

// deployment adds a deployment status to the revision's deployment to
// the environment, creating the deployment when GitHub lists none.
func (g *githubSender) deployment(ctx context.Context, t githubTarget, d *servicetypes.GitHubDeployment, message string) (string, error) {
	q := url.Values{}
	if t.rev != "" {
		q.Set("ref", t.rev)
	}
	if d.Environment != "" {
		q.Set("environment", d.Environment)
	}
	resp, err := g.call(ctx, http.MethodGet, t.path("deployments"), q, githubMediaV3, nil)
	if err != nil {
		return "", err
	}
	var list []struct {
		ID int64 `json:"id"`
	}
	if err := g.decode(resp, &list); err != nil {
		return "", err
	}
	var id int64
	if len(list) > 0 {
		id = list[0].ID
	} else {
		ref := d.Reference
		if ref == "" {
			ref = t.rev
		}
		autoMerge, transient := true, false
		if d.AutoMerge != nil {
			autoMerge = *d.AutoMerge
		}
		if d.TransientEnvironment != nil {
			transient = *d.TransientEnvironment
		}
		resp, err := g.call(ctx, http.MethodPost, t.path("deployments"), nil, githubMediaDeployments, map[string]any{
			"ref": ref, "environment": d.Environment, "required_contexts": d.RequiredContexts,
			"auto_merge": autoMerge, "transient_environment": transient,
		})
		if err != nil {
			return "", err
		}
		var created struct {
			ID int64 `json:"id"`
		}
		if err := g.decode(resp, &created); err != nil {
			return "", err
		}
		id = created.ID
	}
	if id == 0 {
		return "", errors.New("GitHub answered a deployment without an id")
	}
	resp, err = g.call(ctx, http.MethodPost, t.path("deployments", strconv.FormatInt(id, 10), "statuses"), nil, githubMediaDeployments, map[string]string{
		"state": d.State, "log_url": d.LogURL, "environment": d.Environment, "environment_url": d.EnvironmentURL,
		"description": truncRunes(message, githubDescriptionMax),
	})
	if err != nil {
		return "", fmt.Errorf("deployment %d: %w", id, err)
	}
	return fmt.Sprintf("deployment %d status %s", id, githubID(resp)), nil
}

// comment comments on every pull request GitHub lists for the revision;
// with a commentTag it updates the comment carrying the tag instead.
// Bodies are Argo CD's to the byte: the tag is appended twice (once by
// its templater, once by its sender).
func (g *githubSender) comment(ctx context.Context, t githubTarget, c *servicetypes.GitHubPullRequestComment) (string, error) {
	var tag, body string
	if c.CommentTag != "" {
		tag = fmt.Sprintf(githubCommentTag, c.CommentTag)
		body = truncRunes(c.Content+"\n"+tag, githubCommentMax) + "\n" + tag
	} else {
		body = truncRunes(c.Content, githubCommentMax)
	}
	resp, err := g.call(ctx, http.MethodGet, t.path("commits", t.escapedRev(), "pulls"), nil, githubMediaCommitPulls, nil)
	if err != nil {
		return "", err
	}
	var pulls []struct {
		Number int `json:"number"`
	}
	if err := g.decode(resp, &pulls); err != nil {
		return "", err
	}
	var done []string
	for _, pr := range pulls {
		issue := strconv.Itoa(pr.Number)
		if tag != "" {
			resp, err := g.call(ctx, http.MethodGet, t.path("issues", issue, "comments"), nil, githubMediaComments, nil)
			if err != nil {
				return "", fmt.Errorf("pull request #%d: %w", pr.Number, err)
			}
			var comments []struct {
				ID   int64  `json:"id"`
				Body string `json:"body"`
			}
			if err := g.decode(resp, &comments); err != nil {
				return "", err
			}
			updated := false
			for _, cm := range comments {
				if !strings.Contains(cm.Body, tag) {
					continue
				}
				id := strconv.FormatInt(cm.ID, 10)
				if _, err := g.call(ctx, http.MethodPatch, t.path("issues", "comments", id), nil, githubMediaV3, map[string]string{"body": body}); err != nil {
					return "", fmt.Errorf("pull request #%d comment %s: %w", pr.Number, id, err)
				}
				done = append(done, "comment "+id+" on #"+issue+" updated")
				updated = true
				break
			}
			if updated {
				continue
			}
		}
		resp, err := g.call(ctx, http.MethodPost, t.path("issues", issue, "comments"), nil, githubMediaV3, map[string]string{"body": body})
		if err != nil {
			return "", fmt.Errorf("pull request #%d: %w", pr.Number, err)
		}
		done = append(done, "comment "+githubID(resp)+" on #"+issue)
	}
	if len(done) == 0 {
		return "no pull request has the revision", nil
	}
	return strings.Join(done, ", "), nil
}

// checkRun creates a check run on the revision.
func (g *githubSender) checkRun(ctx context.Context, t githubTarget, c *servicetypes.GitHubCheckRun) (string, error) {
	status, conclusion := c.Status, c.Conclusion
	if conclusion != "" && status == "" {
		status = "completed"
	}
	if (status == "completed" || c.CompletedAt != "") && conclusion == "" {
		return "", notify.Permanent(errors.New("github.checkRun: conclusion is required when status is completed or completed_at is set"))
	}
	body := struct {
		Name        string     `json:"name"`
		HeadSHA     string     `json:"head_sha"`
		DetailsURL  string     `json:"details_url"`
		ExternalID  string     `json:"external_id"`
		Status      string     `json:"status,omitempty"`
		Conclusion  string     `json:"conclusion,omitempty"`
		StartedAt   *time.Time `json:"started_at,omitempty"`
		CompletedAt *time.Time `json:"completed_at,omitempty"`
		Output      *struct {
			Title   string `json:"title"`
			Summary string `json:"summary"`
			Text    string `json:"text"`
		} `json:"output,omitempty"`
	}{Name: c.Name, HeadSHA: t.rev, DetailsURL: c.DetailsURL, ExternalID: githubCheckRunExternalID, Status: status, Conclusion: conclusion}
	for _, ts := range []struct {
		key, v string
		out    **time.Time
	}{{"started_at", c.StartedAt, &body.StartedAt}, {"completed_at", c.CompletedAt, &body.CompletedAt}} {
		if ts.v == "" {
			continue
		}
		tm, err := time.Parse(time.RFC3339, ts.v)
		if err != nil {
			return "", notify.Permanent(fmt.Errorf("github.checkRun.%s: want an RFC 3339 time", ts.key))
		}
		*ts.out = &tm
	}
	if o := c.Output; o != nil {
		body.Output = &struct {
			Title   string `json:"title"`
			Summary string `json:"summary"`
			Text    string `json:"text"`
		}{o.Title, o.Summary, o.Text}
	}
	resp, err := g.call(ctx, http.MethodPost, t.path("check-runs"), nil, githubMediaCheckRuns, body)
	if err != nil {
		return "", err
	}
	return "check run " + githubID(resp), nil
}

// dispatch sends a repository_dispatch event. An empty client_payload
// is left out (Argo CD fails to encode it).
func (g *githubSender) dispatch(ctx context.Context, t githubTarget, d *servicetypes.GitHubRepositoryDispatch) (string, error) {
	body := map[string]any{"event_type": d.EventType}
	if p := strings.TrimSpace(d.ClientPayload); p != "" {
		if !json.Valid([]byte(p)) {
			return "", notify.Permanent(errors.New("github.repositoryDispatch.client_payload: not valid JSON"))
		}
		body["client_payload"] = json.RawMessage(p)
	}
	if _, err := g.call(ctx, http.MethodPost, t.path("dispatches"), nil, githubMediaV3, body); err != nil {
		return "", err
	}
	return "dispatch " + d.EventType, nil
}

// call makes one API request with the service's authorization and
// returns GitHub's answer. A 401 with an app's installation token renews
// the token and tries once more; GitHub's 403 rate limits wait like a
// 429.
func (g *githubSender) call(ctx context.Context, method, path string, q url.Values, accept string, body any) (*svc.Response, error) {
	rawURL := g.api + path
	if len(q) > 0 {
		rawURL += "?" + q.Encode()
	}
	var data []byte
	if body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // comments hold <!-- tags -->, as go-github sends them
		if err := enc.Encode(body); err != nil {
			return nil, notify.Permanent(fmt.Errorf("%s: encoding request: %w", g.c.Service, err))
		}
		data = buf.Bytes()
	}
	for attempt := 0; ; attempt++ {
		auth, err := g.auth.header(ctx)
		if err != nil {
			return nil, err
		}
		h := http.Header{"Authorization": {auth}, "Accept": {accept}, "X-GitHub-Api-Version": {githubAPIVersion}}
		if data != nil {
			h.Set("Content-Type", "application/json")
		}
		resp, err := g.c.Do(ctx, svc.Request{Method: method, URL: rawURL, Header: h, Body: data})
		if err != nil {
			if resp != nil && resp.Status == http.StatusUnauthorized && attempt == 0 && g.auth.renewable() {
				g.auth.forget(auth)
				continue
			}
			return nil, scrub(githubRateLimited(g.c, resp, err), strings.TrimPrefix(auth, "token "))
		}
		return resp, nil
	}
}

// decode reads the JSON answer of a request whose answer is needed (a
// list, a new deployment's id).
func (g *githubSender) decode(resp *svc.Response, out any) error {
	if err := resp.Decode(out); err != nil {
		return fmt.Errorf("%s: answer (HTTP %d) is not the JSON GitHub sends", g.c.Service, resp.Status)
	}
	return nil
}

// githubID is the id of what GitHub created, for the receipt ("?" when
// the answer has none: the request succeeded all the same).
func githubID(resp *svc.Response) string {
	var out struct {
		ID *int64 `json:"id"`
	}
	if resp.Decode(&out) != nil || out.ID == nil {
		return "?"
	}
	return strconv.FormatInt(*out.ID, 10)
}
