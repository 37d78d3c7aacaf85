package imageupdate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func TestPullRequestAnnotations(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{Prefix + KeyImageList: "web=nginx", Prefix + KeyWriteBack: "git", Prefix + KeyGitBranch: "main"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	own := func(k string) string { return OwnPrefix + k }
	spec, errs := FromAnnotations(base(own(KeyPullRequest), "true", own(KeyPullRequestForge), "gitea",
		own(KeyPullRequestLabels), " image-update, automated,,image-update", own(KeyPullRequestReviewers), "alice",
		own(KeyPullRequestAssignees), "bob,carol", own(KeyPullRequestDraft), "true", own(KeyPullRequestAutoMerge), "false"))
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errors.Join(errs...))
	}
	want := &PullRequest{Forge: "gitea", Labels: []string{"image-update", "automated"}, Reviewers: []string{"alice"},
		Assignees: []string{"bob", "carol"}, Draft: true}
	if diff := cmp.Diff(want, spec.WriteBack.PullRequest); diff != "" {
		t.Errorf("pull request (-want +got):\n%s", diff)
	}
	if spec.WriteBack.Method != MethodGit || spec.WriteBack.Branch != "main" {
		t.Errorf("write-back = %+v, want git to main", spec.WriteBack)
	}
	// The policy and ImageUpdater readers say it through the same keys.
	again, errs := FromAnnotations(mergeMaps(base(), PullRequestAnnotations(want)))
	if len(errs) > 0 || !again.WriteBack.Same(spec.WriteBack) {
		t.Errorf("PullRequestAnnotations does not read back: %+v, %v", again.WriteBack.PullRequest, errs)
	}

	off, errs := FromAnnotations(base(own(KeyPullRequest), "false"))
	if len(errs) > 0 || off.WriteBack.PullRequest != nil {
		t.Errorf("pull-request false: %+v, %v", off.WriteBack.PullRequest, errs)
	}

	for _, tt := range []struct {
		name    string
		in      map[string]string
		key     string
		msg     string
		noWrite bool
	}{
		{"not a bool", base(own(KeyPullRequest), "yes"), KeyPullRequest, `"yes": want true or false`, true},
		{"argocd method", mergeMaps(base(own(KeyPullRequest), "true"), map[string]string{Prefix + KeyWriteBack: "argocd"}), KeyPullRequest, "needs write-back-method git", true},
		{"base:target", mergeMaps(base(own(KeyPullRequest), "true"), map[string]string{Prefix + KeyGitBranch: "main:upd-{{.SHA256}}"}), KeyPullRequest, "not base:target", true},
		{"unknown forge", base(own(KeyPullRequest), "true", own(KeyPullRequestForge), "sourcehut"), KeyPullRequestForge, `unknown forge "sourcehut"`, true},
		{"bad draft", base(own(KeyPullRequest), "true", own(KeyPullRequestDraft), "maybe"), KeyPullRequestDraft, "want true or false", true},
		{"too long a label", base(own(KeyPullRequest), "true", own(KeyPullRequestLabels), strings.Repeat("x", 256)), KeyPullRequestLabels, "longer than 255", true},
		{"settings without pull-request", base(own(KeyPullRequestLabels), "x"), KeyPullRequestLabels, "needs crowsnest.dev/pull-request", false},
		{"typo", base(own(KeyPullRequest), "true", own("pull-request.lables"), "x"), "pull-request.lables", "unknown key", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := FromAnnotations(tt.in)
			if !slices.ContainsFunc(errs, func(err error) bool {
				var ae *AnnotationError
				return errors.As(err, &ae) && ae.Key == OwnPrefix+tt.key && strings.Contains(ae.Msg, tt.msg)
			}) {
				t.Errorf("no error naming %s%s with %q; got %v", OwnPrefix, tt.key, tt.msg, errors.Join(errs...))
			}
			if got := spec.WriteBack.Method == ""; got != tt.noWrite {
				t.Errorf("nothing written = %v, want %v (a pull request asked for and unreadable must not become a push)", got, tt.noWrite)
			}
		})
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// The config and the annotations name the forges writeback/forge resolves.
func TestForgeKindsAreTheResolvers(t *testing.T) {
	if diff := cmp.Diff(forge.Kinds, config.ForgeKinds); diff != "" {
		t.Errorf("config.ForgeKinds (-forge.Kinds +config):\n%s", diff)
	}
}
