package imageupdate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
)

// OwnPrefix is crowsnest's own annotation prefix, for what
// argocd-image-updater's annotations cannot say.
const OwnPrefix = "crowsnest.dev/"

// Pull-request annotation keys after OwnPrefix. KeyPullRequest is "true"
// (or "false"); the others refine it.
const (
	KeyPullRequest          = "pull-request"
	KeyPullRequestForge     = "pull-request.forge"
	KeyPullRequestLabels    = "pull-request.labels"
	KeyPullRequestReviewers = "pull-request.reviewers"
	KeyPullRequestAssignees = "pull-request.assignees"
	KeyPullRequestDraft     = "pull-request.draft"
	KeyPullRequestAutoMerge = "pull-request.auto-merge"
)

// PullRequest proposes a Git write-back for review: the change is
// committed on a branch of crowsnest's and a pull request from it into
// the write-back branch is opened, or brought up to date.
type PullRequest struct {
	// Forge is the kind of forge the repository is on (config.ForgeKinds) when
	// the spec says it (argocd-image-updater's pullRequest.github or
	// .gitlab); "" leaves it to the config's git.forges and the
	// well-known hosts. The operator's git.forges entry for the host
	// wins.
	Forge string
	// Labels, Reviewers and Assignees are names on the forge.
	Labels, Reviewers, Assignees []string
	// Draft opens the pull request as a draft; AutoMerge asks the forge
	// to merge it once its checks and approvals are in.
	Draft, AutoMerge bool
	// ImageUpdaterHead names the head branch as argocd-image-updater
	// does ("image-updater-<target key>"), for ImageUpdater resources;
	// otherwise it is "crowsnest/<project>/<base>".
	ImageUpdaterHead bool
}

// maxPullRequestNames bounds each list: argocd-image-updater's labels
// allow 100, of at most 255 characters each.
const (
	maxPullRequestNames = 100
	maxPullRequestName  = 255
)

// readPullRequest reads the pull-request annotations into wb; fail reports
// a malformed one by its key after OwnPrefix.
func readPullRequest(ann map[string]string, wb *WriteBack, fail func(key, format string, args ...any)) {
	v, ok := ann[OwnPrefix+KeyPullRequest]
	if !ok {
		for _, k := range pullRequestKeys[1:] {
			if _, set := ann[OwnPrefix+k]; set {
				fail(k, "needs %s%s: \"true\"; ignored", OwnPrefix, KeyPullRequest)
			}
		}
		return
	}
	on, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		fail(KeyPullRequest, "%s: want true or false", quote(v))
		return
	}
	if !on {
		return
	}
	pr := &PullRequest{}
	if f, ok := ann[OwnPrefix+KeyPullRequestForge]; ok {
		pr.Forge = strings.TrimSpace(f)
		if !slices.Contains(config.ForgeKinds, pr.Forge) {
			fail(KeyPullRequestForge, "unknown forge %s: want one of %s", quote(f), strings.Join(config.ForgeKinds, ", "))
		}
	}
	for _, l := range []struct {
		key string
		out *[]string
	}{{KeyPullRequestLabels, &pr.Labels}, {KeyPullRequestReviewers, &pr.Reviewers}, {KeyPullRequestAssignees, &pr.Assignees}} {
		names, err := pullRequestNames(ann[OwnPrefix+l.key])
		if err != nil {
			fail(l.key, "%v", err)
		}
		*l.out = names
	}
	for _, b := range []struct {
		key string
		out *bool
	}{{KeyPullRequestDraft, &pr.Draft}, {KeyPullRequestAutoMerge, &pr.AutoMerge}} {
		if s, ok := ann[OwnPrefix+b.key]; ok {
			v, err := strconv.ParseBool(strings.TrimSpace(s))
			if err != nil {
				fail(b.key, "%s: want true or false", quote(s))
			}
			*b.out = v
		}
	}
	if wb.Method != MethodGit {
		fail(KeyPullRequest, "needs write-back-method git (a pull request proposes a commit)")
	}
	if wb.PushBranch != "" {
		// As argocd-image-updater: the pull request's branch is
		// crowsnest's, git-branch names only its base.
		fail(KeyPullRequest, "git-branch %q: a pull request takes only its base branch (e.g. \"main\"), not base:target", wb.Branch+":"+wb.PushBranch)
	}
	wb.PullRequest = pr
}

// readPullRequestErrs reads the pull-request annotations into wb and
// returns the errors that leave nothing written and those only ignored.
func readPullRequestErrs(ann map[string]string, wb *WriteBack) (errs, ignored []error) {
	readPullRequest(ann, wb, func(key, format string, args ...any) {
		err := &AnnotationError{Key: OwnPrefix + key, Msg: fmt.Sprintf(format, args...)}
		if err.Ignored() {
			ignored = append(ignored, err)
			return
		}
		errs = append(errs, err)
	})
	return errs, ignored
}

// pullRequestKeys are the pull-request annotation keys, KeyPullRequest
// first.
var pullRequestKeys = []string{KeyPullRequest, KeyPullRequestForge, KeyPullRequestLabels, KeyPullRequestReviewers,
	KeyPullRequestAssignees, KeyPullRequestDraft, KeyPullRequestAutoMerge}

// ownWriteBackKeys are crowsnest's own write-back annotation keys.
var ownWriteBackKeys = append(slices.Clone(pullRequestKeys), KeyPinDigest)

// pullRequestNames reads a comma-separated list of names: trimmed, empty
// entries and repeats left out (as argocd-image-updater's labels).
func pullRequestNames(list string) ([]string, error) {
	var out []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "" || slices.Contains(out, n):
			continue
		case len(n) > maxPullRequestName:
			return nil, fmt.Errorf("%q: longer than %d characters", n[:32]+"...", maxPullRequestName)
		case strings.ContainsAny(n, "\n\r\t"):
			return nil, fmt.Errorf("%q: a name has no line breaks or tabs", n)
		}
		out = append(out, n)
	}
	if len(out) > maxPullRequestNames {
		return nil, fmt.Errorf("%d names, more than %d", len(out), maxPullRequestNames)
	}
	return out, nil
}

// PolicyPullRequest is the config's pull request (an image policy's, or
// an ImageUpdater's as config/imageupdater reads it) in the model's terms,
// for PullRequestAnnotations.
func PolicyPullRequest(p *config.PolicyPullRequest) *PullRequest {
	return &PullRequest{Forge: p.Forge, Labels: p.Labels, Reviewers: p.Reviewers, Assignees: p.Assignees, Draft: p.Draft, AutoMerge: p.AutoMerge}
}

// PullRequestAnnotations are p as the annotations that say it, for the
// readers of crowsnest's image policies and ImageUpdater resources, which
// read their write-back settings through the annotations' reader.
func PullRequestAnnotations(p *PullRequest) map[string]string {
	out := map[string]string{OwnPrefix + KeyPullRequest: "true"}
	if p.Forge != "" {
		out[OwnPrefix+KeyPullRequestForge] = p.Forge
	}
	for k, l := range map[string][]string{KeyPullRequestLabels: p.Labels, KeyPullRequestReviewers: p.Reviewers, KeyPullRequestAssignees: p.Assignees} {
		if len(l) > 0 {
			out[OwnPrefix+k] = strings.Join(l, ",")
		}
	}
	if p.Draft {
		out[OwnPrefix+KeyPullRequestDraft] = "true"
	}
	if p.AutoMerge {
		out[OwnPrefix+KeyPullRequestAutoMerge] = "true"
	}
	return out
}

// unknownOwnKeys returns the keys under OwnPrefix that nothing reads.
func unknownOwnKeys(ann map[string]string) []string {
	var out []string
	for _, full := range slices.Sorted(maps.Keys(ann)) {
		key, ok := strings.CutPrefix(full, OwnPrefix)
		if ok && (strings.HasPrefix(key, KeyPullRequest) || strings.HasPrefix(key, "pin")) && !slices.Contains(ownWriteBackKeys, key) {
			out = append(out, key)
		}
	}
	return out
}
