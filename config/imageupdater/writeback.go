package imageupdater

import (
	"cmp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// WriteBackConfig says how changes are written; applicationRef fields
// override the spec's one by one.
type WriteBackConfig struct {
	Method    *string    `json:"method,omitempty"`
	GitConfig *GitConfig `json:"gitConfig,omitempty"`
}

// GitConfig holds the Git write-back settings.
type GitConfig struct {
	Repository      *string      `json:"repository,omitempty"`
	Branch          *string      `json:"branch,omitempty"`
	WriteBackTarget *string      `json:"writeBackTarget,omitempty"`
	PullRequest     *PullRequest `json:"pullRequest,omitempty"`
}

// PullRequest proposes each commit of a git write-back in a pull request
// (GitHub) or merge request (GitLab) into the branch instead of pushing it
// there. Exactly one provider is set, as the CRD's validation rule says.
type PullRequest struct {
	GitHub *PullRequestGitHub `json:"github,omitempty"`
	GitLab *PullRequestGitLab `json:"gitlab,omitempty"`
	// Labels go on each pull request (argocd-image-updater main; the CRD
	// allows 100 of 1 to 255 characters).
	Labels []string `json:"labels,omitempty"`
}

// PullRequestGitHub asks for a GitHub pull request. It is empty in
// argocd-image-updater's API (the repository URL and the credentials say
// the rest): a field in it is unknown, and reported as any unknown field is.
type PullRequestGitHub struct{}

// PullRequestGitLab asks for a GitLab merge request; empty, as
// PullRequestGitHub.
type PullRequestGitLab struct{}

// mergeWriteBack merges the spec's and the applicationRef's write-back
// settings as argocd-image-updater's mergeWBCSettings does: field by
// field, but an applicationRef's pullRequest replaces the spec's whole (a
// provider is one choice: merged, github there and gitlab here would be
// two). ok is false when the applicationRef must be left out because
// nothing could be written as asked, as argocd-image-updater leaves it out
// when newWBCFromSettings fails. But where a git method asks for a pull
// request, the applicationRef is kept and noWrite names the pullRequest:
// left out, its Applications would go to a broader applicationRef, which
// might push where a review was asked for.
func mergeWriteBack(rp string, global, ref *WriteBackConfig, errs *problems) (wb config.PolicyWriteBack, fields map[string]string, ok bool, noWrite string) {
	fields = map[string]string{}
	var pr *PullRequest
	for _, l := range []struct {
		path string
		c    *WriteBackConfig
	}{{"spec.writeBackConfig", global}, {fieldpath.Join(rp, "writeBackConfig"), ref}} {
		if l.c == nil {
			continue
		}
		if l.c.Method != nil {
			wb.Method, fields["method"] = strings.TrimSpace(*l.c.Method), fieldpath.Join(l.path, "method")
		}
		g := l.c.GitConfig
		if g == nil {
			continue
		}
		gp := fieldpath.Join(l.path, "gitConfig")
		if g.Repository != nil {
			wb.Repository, fields["repository"] = strings.TrimSpace(*g.Repository), fieldpath.Join(gp, "repository")
		}
		if g.Branch != nil {
			wb.Branch, fields["branch"] = strings.TrimSpace(*g.Branch), fieldpath.Join(gp, "branch")
		}
		if g.WriteBackTarget != nil {
			wb.Target, fields["target"] = strings.TrimSpace(*g.WriteBackTarget), fieldpath.Join(gp, "writeBackTarget")
		}
		if g.PullRequest != nil {
			pr, fields["pullRequest"] = g.PullRequest, fieldpath.Join(gp, "pullRequest")
		}
	}
	m := wb.Method
	isGit := m == "git" || strings.HasPrefix(m, "git:")
	methodOK := true
	switch {
	case m == "" || m == "argocd":
	case m == "git" || m == "git:repocreds" || strings.HasPrefix(m, "git:secret:"):
	default:
		errs.invalid(fields["method"], "unsupported value %q, want argocd, git, git:repocreds or git:secret:<namespace>/<name>; nothing is written for this applicationRef", m)
		methodOK = false
	}
	ok = methodOK
	if t := wb.Target; t != "" && isGit && !strings.HasPrefix(t, "kustomization") && !strings.HasPrefix(t, "helmvalues") {
		errs.invalid(fields["target"], "%q: want kustomization[:<path>] or helmvalues[:<path>] (crowsnest does not write other parameter files); nothing is written for this applicationRef", t)
		ok = false
	}
	switch {
	case pr == nil:
	case !isGit:
		if methodOK {
			// newWBCFromSettings returns before it reads gitConfig.
			errs.ignored(fields["pullRequest"], "a pull request needs a git method, and the method is argocd (%s), which patches the Application: ignored, as argocd-image-updater ignores it",
				cmp.Or(fields["method"], "the default"))
		}
	default:
		if methodOK {
			p, prOK := pullRequest(pr, wb.Branch, fields, errs)
			wb.PullRequest, ok = p, ok && prOK
		}
		if !ok {
			wb.PullRequest, ok, noWrite = nil, true, fields["pullRequest"]
		}
	}
	return wb, fields, ok, noWrite
}

// maxLabelBytes is imageupdate's bound on a pull request's label (the
// CRD's 255 characters, in bytes).
const maxLabelBytes = 255

// pullRequest reads the pullRequest of a git method as
// newWBCFromSettings does: the branch is the base only, exactly one
// provider, and the labels trimmed, empty ones and repeats left out
// (sanitizePRLabels). ok is false when nothing can be written as asked.
func pullRequest(pr *PullRequest, branch string, fields map[string]string, errs *problems) (*config.PolicyPullRequest, bool) {
	ok := true
	if strings.Contains(branch, ":") {
		errs.invalid(fields["branch"], "%q: a pull request takes only its base branch (e.g. \"main\"), not <base>:<target>, as in argocd-image-updater; nothing is written for this applicationRef", branch)
		ok = false
	}
	out := &config.PolicyPullRequest{}
	switch {
	case pr.GitHub != nil && pr.GitLab != nil:
		errs.invalid(fields["pullRequest"], "both github and gitlab are set, want exactly one; nothing is written for this applicationRef")
		ok = false
	case pr.GitHub != nil:
		out.Forge = "github"
	case pr.GitLab != nil:
		out.Forge = "gitlab"
	default:
		errs.invalid(fields["pullRequest"], "neither github nor gitlab is set, want exactly one; nothing is written for this applicationRef")
		ok = false
	}
	if pr.Labels == nil {
		return out, ok
	}
	lp := fieldpath.Join(fields["pullRequest"], "labels")
	fields["pullRequest.labels"] = lp
	seen := map[string]bool{}
	for j, l := range pr.Labels {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || seen[l]:
		case len(l) > maxLabelBytes:
			errs.invalid(fieldpath.Index(lp, j), "%q: longer than %d bytes; the label is left out", l[:32]+"...", maxLabelBytes)
		case strings.ContainsAny(l, ",\t\r\n"):
			// The labels reach the writer as one comma-separated list.
			errs.invalid(fieldpath.Index(lp, j), "%q: crowsnest takes no ',', tab or line break in a label; the label is left out", l)
		default:
			seen[l] = true
			out.Labels = append(out.Labels, l)
		}
	}
	return out, ok
}
