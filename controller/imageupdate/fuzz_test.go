package imageupdate

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// FuzzCompilePolicies compiles a config-driven image policy from arbitrary
// fields: every error names its field path under imagePolicies[0], and a
// policy that compiles matches Applications and yields image policies
// selection accepts.
func FuzzCompilePolicies(f *testing.F) {
	f.Add("shop-*", "team=web", "ghcr.io/org/web", "semver", "~1.2", "regexp:^v", "*-debug", "", "linux/amd64", "git", "kustomization:../x", "main:up-{{.SHA256}}")
	f.Add("[", "a in (b", "nginx:1.0", "digest", "", "any", "", "(?P<version>.*)", "linux", "git:secret:ns/n", "helmvalues:/v.yaml", "")
	f.Add("{a,b}", "", "registry:5000/a/b", "alphabetical", "latest", "regexp:(", "regexp:[", `build-(?P<version>\d+)`, "Windows/AMD64/10", "argocd", "", "")
	f.Add("*", "!x", "nginx@sha256:0123", "newest-build", ">=1 <2", "", "[", "", "", "kube", "helmvalues:$values/../..", "a:b:c")
	f.Fuzz(func(t *testing.T, glob, selector, image, strategy, constraint, allow, ignore, extract, platform, method, target, branch string) {
		ps, err := CompilePolicies([]config.ImagePolicy{{
			Name:  "fuzz",
			Match: config.PolicyMatch{Applications: []string{glob}, Projects: []string{glob}, LabelSelector: selector},
			Images: []config.PolicyImage{{
				Alias: "web", Image: image, Strategy: strategy, Constraint: constraint, AllowTags: allow,
				IgnoreTags: strings.Split(ignore, ","), Extract: extract, Platforms: []string{platform},
			}},
			WriteBack: config.PolicyWriteBack{Method: method, Target: target, Branch: branch},
		}})
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "imagePolicies[0].") {
					t.Fatalf("error %q does not name its field", line)
				}
			}
			return
		}
		apps := []watcher.App{{Name: glob, Project: glob}, {Name: "x", Labels: map[string]string{"team": "web"}}}
		for i := range apps {
			spec, _ := ps.Match(&apps[i])
			if spec == nil {
				continue
			}
			for i := range spec.Images {
				if _, err := policy.Compile(spec.Images[i].Ref.Repo(), spec.Images[i].Policy); err != nil {
					t.Fatalf("matched image %q has a policy that does not compile: %v", spec.Images[i].Alias, err)
				}
			}
		}
	})
}
