package imageupdater

import (
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
	Repository      *string         `json:"repository,omitempty"`
	Branch          *string         `json:"branch,omitempty"`
	WriteBackTarget *string         `json:"writeBackTarget,omitempty"`
	PullRequest     *map[string]any `json:"pullRequest,omitempty"`
}

// mergeWriteBack merges the spec's and the applicationRef's write-back
// settings field by field; ok is false when the applicationRef must be left
// out (nothing could be written as asked); noWrite, when set, is the field
// that keeps the applicationRef but forbids writing (a pull request).
func mergeWriteBack(rp string, global, ref *WriteBackConfig, errs *problems) (wb config.PolicyWriteBack, fields map[string]string, ok bool, noWrite string) {
	fields = map[string]string{}
	var pr string
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
			pr = fieldpath.Join(gp, "pullRequest")
		}
	}
	ok = true
	m := wb.Method
	isGit := m == "git" || strings.HasPrefix(m, "git:")
	switch {
	case m == "" || m == "argocd":
	case m == "git" || m == "git:repocreds" || strings.HasPrefix(m, "git:secret:"):
	default:
		errs.invalid(fields["method"], "unsupported value %q, want argocd, git, git:repocreds or git:secret:<namespace>/<name>; nothing is written for this applicationRef", m)
		ok = false
	}
	if pr != "" && isGit {
		// Pushing where argocd-image-updater would open a pull request
		// would skip the review the resource asks for. The
		// applicationRef still selects its Applications (argocd-image-
		// updater takes them): dropping it would hand them to a broader
		// applicationRef that pushes.
		errs.invalid(pr, "crowsnest does not open pull requests; nothing is written for the Applications this applicationRef selects")
		noWrite = pr
	}
	if t := wb.Target; t != "" && isGit && !strings.HasPrefix(t, "kustomization") && !strings.HasPrefix(t, "helmvalues") {
		errs.invalid(fields["target"], "%q: want kustomization[:<path>] or helmvalues[:<path>] (crowsnest does not write other parameter files); nothing is written for this applicationRef", t)
		ok = false
	}
	return wb, fields, ok, noWrite
}
