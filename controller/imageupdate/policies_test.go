package imageupdate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

func TestPoliciesMatchAndPrecedence(t *testing.T) {
	ps, err := CompilePolicies([]config.ImagePolicy{
		{Name: "payments-web", Match: config.PolicyMatch{Applications: []string{"shop-*"}, Projects: []string{"payments"}},
			Images:    []config.PolicyImage{{Alias: "web", Image: "ghcr.io/org/web", Constraint: "~1.2"}},
			WriteBack: config.PolicyWriteBack{Method: "git", Target: "kustomization"}},
		{Name: "labelled", Match: config.PolicyMatch{LabelSelector: "crowsnest.dev/auto=true"},
			Images: []config.PolicyImage{{Image: "nginx", Strategy: "alphabetical", AllowTags: "regexp:^build-", Extract: `build-(?P<version>\d+)`, ExtractOrder: "numeric"}}},
		{Name: "shadowed", Match: config.PolicyMatch{Applications: []string{"shop-eu"}},
			Images: []config.PolicyImage{{Image: "redis"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		app        watcher.App
		wantPolicy string
		wantImages []string
	}{
		{"name and project must both match", watcher.App{Name: "shop-eu", Project: "payments"}, "payments-web", []string{"web"}},
		{"first match in file order wins", watcher.App{Name: "shop-eu", Project: "payments", Labels: map[string]string{"crowsnest.dev/auto": "true"}}, "payments-web", []string{"web"}},
		{"label selector", watcher.App{Name: "blog", Labels: map[string]string{"crowsnest.dev/auto": "true"}}, "labelled", []string{"nginx"}},
		{"a later policy when the first does not match", watcher.App{Name: "shop-eu", Project: "default"}, "shadowed", []string{"redis"}},
		{"nothing matches", watcher.App{Name: "blog"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, name := ps.Match(&tt.app)
			if name != tt.wantPolicy {
				t.Fatalf("policy = %q, want %q", name, tt.wantPolicy)
			}
			var aliases []string
			if spec != nil {
				for i := range spec.Images {
					aliases = append(aliases, spec.Images[i].Alias)
				}
			}
			if diff := cmp.Diff(tt.wantImages, aliases); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
	spec, _ := ps.Match(&watcher.App{Name: "shop-x", Project: "payments"})
	if spec.WriteBack.Method != MethodGit || spec.WriteBack.Target.Kind != TargetKustomization || spec.Source != "image policy payments-web" {
		t.Errorf("write-back = %+v, source %q", spec.WriteBack, spec.Source)
	}
}

func TestPolicyErrorsNameTheField(t *testing.T) {
	_, err := CompilePolicies([]config.ImagePolicy{{
		Name:  "bad",
		Match: config.PolicyMatch{Applications: []string{"*"}},
		Images: []config.PolicyImage{
			{Image: "nginx", Constraint: ">>1"},
			{Image: "redis:7", AllowTags: "regexp:("},
			{Image: "UPPER/Case"},
			{Image: "busybox", PullSecret: "vault:x", IgnoreTags: []string{"ok", "regexp:["}},
		},
		WriteBack: config.PolicyWriteBack{Method: "git", Target: "jsonnet", Branch: "release..1"},
	}})
	if err == nil {
		t.Fatal("a broken policy compiled")
	}
	for _, want := range []string{
		"imagePolicies[0].images[0].constraint:",
		"imagePolicies[0].images[1].image: \"redis:7\": name the repository only",
		"imagePolicies[0].images[1].allowTags:",
		"imagePolicies[0].images[2].image:",
		"imagePolicies[0].images[3].pullSecret:",
		"imagePolicies[0].images[3].ignoreTags[1]",
		"imagePolicies[0].writeBack.target: unknown target",
		`imagePolicies[0].writeBack.branch: invalid branch name "release..1": contains ".."`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// An image policy spans namespaces, so its git:secret: names the
// Secret's namespace; the annotations' namespace-less form is refused.
func TestPolicyGitSecretNamesItsNamespace(t *testing.T) {
	_, err := CompilePolicies([]config.ImagePolicy{{Name: "p", Match: config.PolicyMatch{Applications: []string{"*"}},
		WriteBack: config.PolicyWriteBack{Method: "git:secret:git-creds"}}})
	if err == nil || !strings.Contains(err.Error(), "imagePolicies[0].writeBack.method:") {
		t.Fatalf("error = %v, want one naming imagePolicies[0].writeBack.method", err)
	}
	if _, err := CompilePolicies([]config.ImagePolicy{{Name: "p", Match: config.PolicyMatch{Applications: []string{"*"}},
		WriteBack: config.PolicyWriteBack{Method: "git:secret:argocd/git-creds"}}}); err != nil {
		t.Errorf("git:secret:<namespace>/<name> refused: %v", err)
	}
}

// A verify block with a problem fails the policy, naming the field: an
// image is never updated with verification silently off.
func TestPolicyVerifyErrorsNameTheField(t *testing.T) {
	_, err := CompilePolicies([]config.ImagePolicy{{
		Name:  "signed",
		Match: config.PolicyMatch{Applications: []string{"*"}},
		Images: []config.PolicyImage{
			{Image: "nginx", Verify: &config.PolicyVerify{}},
			{Image: "redis", Verify: &config.PolicyVerify{Cosign: &config.PolicyCosign{}}},
			{Image: "busybox", Verify: &config.PolicyVerify{Cosign: &config.PolicyCosign{PublicKeys: []string{"awskms:///alias/release"}}}},
			{Image: "alpine", Verify: &config.PolicyVerify{Cosign: &config.PolicyCosign{PublicKeys: []string{"-----BEGIN PUBLIC KEY-----\nbm9wZQ==\n-----END PUBLIC KEY-----\n"}}}},
		},
	}})
	if err == nil {
		t.Fatal("a broken verify block compiled")
	}
	for _, want := range []string{
		"imagePolicies[0].images[0].verify.cosign: required",
		"imagePolicies[0].images[1].verify.cosign.publicKeys: required",
		`imagePolicies[0].images[2].verify.cosign.publicKeys[0]: "awskms://": key service references are not supported`,
		"imagePolicies[0].images[3].verify.cosign.publicKeys[0]: parsing public key",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
