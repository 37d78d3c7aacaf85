package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// GitHub's REST API cannot ask for auto-merge: the GraphQL API's
// enablePullRequestAutoMerge mutation does, with a merge method the
// repository allows (read first: a squash-only repository refuses
// MERGE) and the head commit crowsnest proposed, so that a later push to
// the branch is not merged unseen.
const (
	githubMergeMethodsQuery = `query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) { autoMergeAllowed mergeCommitAllowed squashMergeAllowed rebaseMergeAllowed }
}`
	githubEnableAutoMerge = `mutation($id: ID!, $method: PullRequestMergeMethod!, $head: GitObjectID) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method, expectedHeadOid: $head}) { clientMutationId }
}`
)

// githubMergeNow are GitHub's refusals of auto-merge for a pull request
// that nothing holds back (no required check or review is pending, or
// the branch has no protection): it can be merged at once, as Gitea
// does with the same request.
var githubMergeNow = []string{"clean status", "unstable status", "protected branch rules not configured"}

// githubGraphQLURL is the GraphQL endpoint beside a REST API root:
// https://api.github.com/graphql, or https://HOST/api/graphql on GitHub
// Enterprise Server.
func githubGraphQLURL(api string) string {
	if base, ok := strings.CutSuffix(api, "/api/v3"); ok {
		return base + "/api/graphql"
	}
	return api + "/graphql"
}

// githubGraphQLError is a GraphQL answer's errors (HTTP 200).
type githubGraphQLError struct {
	repo     string
	messages []string
}

func (e *githubGraphQLError) Error() string {
	return fmt.Sprintf("forge %s: GraphQL: %s", e.repo, strings.Join(e.messages, "; "))
}

// says reports whether a message contains one of phrases (any case).
func (e *githubGraphQLError) says(phrases []string) bool {
	for _, m := range e.messages {
		for _, p := range phrases {
			if strings.Contains(strings.ToLower(m), p) {
				return true
			}
		}
	}
	return false
}

// graphQL posts query with vars and decodes the answer's data into out.
// Errors in the answer are permanent, but RATE_LIMITED, which is waited
// out as a REST rate limit is.
func (g *GitHub) graphQL(ctx context.Context, r Repo, query string, vars map[string]any, out any) error {
	in := struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}{query, vars}
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	err := g.c.send(ctx, request{target: r.String(), method: http.MethodPost, path: "/graphql", url: githubGraphQLURL(r.API),
		in: in, out: &answer, cred: g.c.cred})
	if err != nil {
		return err
	}
	if len(answer.Errors) > 0 {
		gqlErr := &githubGraphQLError{repo: r.String()}
		limited := false
		for _, e := range answer.Errors {
			gqlErr.messages = append(gqlErr.messages, e.Message)
			limited = limited || e.Type == "RATE_LIMITED"
		}
		if limited {
			return fmt.Errorf("%w: %w", &RateLimitError{Repo: r.String(), RetryAfter: defaultRateLimitWait}, gqlErr)
		}
		return &PermanentError{gqlErr}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer.Data, out); err != nil {
		return fmt.Errorf("forge %s: GraphQL: reading the answer: %w", r, err)
	}
	return nil
}

// autoMerge asks GitHub to merge pr (node ID id) once its required
// checks and reviews are in, or merges it now when nothing holds it.
func (g *GitHub) autoMerge(ctx context.Context, r Repo, pr *PullRequest, id string) error {
	var repo struct {
		Repository struct {
			AutoMergeAllowed, MergeCommitAllowed, SquashMergeAllowed, RebaseMergeAllowed bool
		}
	}
	if err := g.graphQL(ctx, r, githubMergeMethodsQuery, map[string]any{"owner": r.Owner, "name": r.Name}, &repo); err != nil {
		return err
	}
	allowed := repo.Repository
	var method string
	switch {
	case allowed.MergeCommitAllowed:
		method = "MERGE"
	case allowed.SquashMergeAllowed:
		method = "SQUASH"
	case allowed.RebaseMergeAllowed:
		method = "REBASE"
	default:
		return &PermanentError{fmt.Errorf("forge %s: the repository allows no merge method", r)}
	}
	if !allowed.AutoMergeAllowed {
		return &PermanentError{fmt.Errorf("forge %s: the repository does not allow auto-merge (its setting \"Allow auto-merge\")", r)}
	}
	err := g.graphQL(ctx, r, githubEnableAutoMerge, map[string]any{"id": id, "method": method, "head": pr.HeadSHA}, nil)
	var gqlErr *githubGraphQLError
	if err == nil || !errors.As(err, &gqlErr) || !gqlErr.says(githubMergeNow) {
		return err
	}
	in := struct {
		MergeMethod string `json:"merge_method"`
		SHA         string `json:"sha"`
	}{strings.ToLower(method), pr.HeadSHA}
	var out struct {
		SHA string `json:"sha"`
	}
	if err := g.c.call(ctx, r, http.MethodPut, githubPullPath(r, pr.Number)+"/merge", in, &out); err != nil {
		return err
	}
	pr.State, pr.MergeCommit = Merged, out.SHA
	return nil
}
