package imageupdater

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

const updaterFull = `
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata:
  name: shop
  namespace: team-a
spec:
  commonUpdateSettings:
    updateStrategy: semver
    allowTags: regexp:^v?[0-9.]+$
    pullSecret: pullsecret:team-a/regcred
  writeBackConfig:
    method: git
    gitConfig:
      branch: main
  applicationRefs:
  - namePattern: "shop-*"
    commonUpdateSettings:
      ignoreTags: ["*-rc*"]
    images:
    - alias: web
      imageName: ghcr.io/acme/web:1.x
      manifestTargets:
        helm:
          name: web.image.repository
          tag: web.image.tag
    - alias: api
      imageName: localhost:5000/acme/api
      commonUpdateSettings:
        updateStrategy: newest-build
        platforms: [linux/amd64]
      manifestTargets:
        kustomize:
          name: acme/api
  - namePattern: shop-prod
    labelSelectors:
      matchLabels: {tier: prod}
    writeBackConfig:
      method: argocd
    images:
    - alias: web
      imageName: ghcr.io/acme/web:~1.2
  - namePattern: "legacy-?"
    useAnnotations: true
`

func TestImageUpdaterRules(t *testing.T) {
	u, err := Parse([]byte(updaterFull))
	if err != nil {
		t.Fatal(err)
	}
	rules, problems := u.Rules()
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := []Rule{
		{
			Path: "spec.applicationRefs[1]", Namespace: "team-a", NamePattern: "shop-prod", LabelSelector: "tier=prod",
			WriteBack:       config.PolicyWriteBack{Method: "argocd", Branch: "main"},
			WriteBackFields: map[string]string{"method": "spec.applicationRefs[1].writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch"},
			Images: []RuleImage{{
				Path:        "spec.applicationRefs[1].images[0]",
				PolicyImage: config.PolicyImage{Alias: "web", Image: "ghcr.io/acme/web", Constraint: "~1.2", Strategy: "semver", AllowTags: "regexp:^v?[0-9.]+$", PullSecret: "pullsecret:team-a/regcred"},
				Fields: map[string]string{
					"image": "spec.applicationRefs[1].images[0].imageName", "constraint": "spec.applicationRefs[1].images[0].imageName",
					"strategy": "spec.commonUpdateSettings.updateStrategy", "allowTags": "spec.commonUpdateSettings.allowTags",
					"pullSecret": "spec.commonUpdateSettings.pullSecret",
				},
			}},
		},
		// "legacy-?" has more literal characters than "shop-*".
		{Path: "spec.applicationRefs[2]", Namespace: "team-a", NamePattern: "legacy-?", UseAnnotations: true},
		{
			Path: "spec.applicationRefs[0]", Namespace: "team-a", NamePattern: "shop-*",
			WriteBack:       config.PolicyWriteBack{Method: "git", Branch: "main"},
			WriteBackFields: map[string]string{"method": "spec.writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch"},
			Images: []RuleImage{
				{
					Path: "spec.applicationRefs[0].images[0]",
					PolicyImage: func() config.PolicyImage {
						p := config.PolicyImage{Alias: "web", Image: "ghcr.io/acme/web", Constraint: "1.x", Strategy: "semver", AllowTags: "regexp:^v?[0-9.]+$",
							IgnoreTags: []string{"*-rc*"}, PullSecret: "pullsecret:team-a/regcred"}
						p.Helm.ImageName, p.Helm.ImageTag = "web.image.repository", "web.image.tag"
						return p
					}(),
					Fields: map[string]string{
						"image": "spec.applicationRefs[0].images[0].imageName", "constraint": "spec.applicationRefs[0].images[0].imageName",
						"strategy": "spec.commonUpdateSettings.updateStrategy", "allowTags": "spec.commonUpdateSettings.allowTags",
						"pullSecret": "spec.commonUpdateSettings.pullSecret", "ignoreTags": "spec.applicationRefs[0].commonUpdateSettings.ignoreTags",
						"helm.imageName": "spec.applicationRefs[0].images[0].manifestTargets.helm.name",
						"helm.imageTag":  "spec.applicationRefs[0].images[0].manifestTargets.helm.tag",
					},
				},
				{
					Path: "spec.applicationRefs[0].images[1]",
					PolicyImage: config.PolicyImage{Alias: "api", Image: "localhost:5000/acme/api", Strategy: "newest-build", AllowTags: "regexp:^v?[0-9.]+$",
						IgnoreTags: []string{"*-rc*"}, PullSecret: "pullsecret:team-a/regcred", Platforms: []string{"linux/amd64"}, KustomizeImageName: "acme/api"},
					Fields: map[string]string{
						"image": "spec.applicationRefs[0].images[1].imageName", "strategy": "spec.applicationRefs[0].images[1].commonUpdateSettings.updateStrategy",
						"allowTags": "spec.commonUpdateSettings.allowTags", "pullSecret": "spec.commonUpdateSettings.pullSecret",
						"ignoreTags": "spec.applicationRefs[0].commonUpdateSettings.ignoreTags", "platforms": "spec.applicationRefs[0].images[1].commonUpdateSettings.platforms",
						"kustomizeImageName": "spec.applicationRefs[0].images[1].manifestTargets.kustomize.name",
					},
				},
			},
		},
	}
	opts := []cmp.Option{cmpopts.IgnoreUnexported(Rule{}), cmpopts.EquateEmpty()}
	if d := cmp.Diff(want, rules, opts...); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}

	matches := []struct {
		ns, name string
		labels   map[string]string
		want     string
	}{
		{"team-a", "shop-prod", map[string]string{"tier": "prod"}, "spec.applicationRefs[1]"},
		{"team-a", "shop-prod", nil, "spec.applicationRefs[0]"},
		{"team-a", "shop-dev", nil, "spec.applicationRefs[0]"},
		{"team-a", "legacy-1", nil, "spec.applicationRefs[2]"},
		{"team-a", "legacy-10", nil, ""},
		{"team-b", "shop-dev", nil, ""}, // another namespace: never
	}
	for _, m := range matches {
		got := ""
		for i := range rules {
			if rules[i].Matches(m.ns, m.name, m.labels) {
				got = rules[i].Path
				break
			}
		}
		if got != m.want {
			t.Errorf("%s/%s %v: matched %q, want %q", m.ns, m.name, m.labels, got, m.want)
		}
	}

	p := rules[2].ImagePolicy("team-a/shop")
	if p.Name != "team-a/shop" || p.Match.Applications[0] != "shop-*" || len(p.Images) != 2 || p.WriteBack.Method != "git" {
		t.Errorf("ImagePolicy = %+v", p)
	}
}

func TestImageUpdaterProblems(t *testing.T) {
	tests := []struct {
		name string
		spec string
		// want are the problems' paths; rules the refs kept (paths) and
		// their images' aliases.
		want  []string
		rules map[string][]string
	}{
		{
			name: "no refs",
			spec: `{}`,
			want: []string{"spec.applicationRefs: required"},
		},
		{
			// The engine's image reader reads the strategy, the constraint
			// and the tag filters (controller/imageupdaters tests them):
			// an unknown strategy is semver with a warning there, as in
			// argocd-image-updater, and a constraint is taken whole.
			name: "strategy, constraint and tag filters pass to the image reader as written",
			spec: `
commonUpdateSettings: {updateStrategy: newest}
applicationRefs:
- namePattern: a
  images:
  - {alias: x, imageName: "nginx:>=1.0.3 <1.0.8"}
  - {alias: yy, imageName: "redis:>=1.0, <2.0 || 3.x", commonUpdateSettings: {updateStrategy: digest, ignoreTags: ["regexp:^v[0-9]{1,3}$"]}}`,
			rules: map[string][]string{"spec.applicationRefs[0]": {"x", "yy"}},
		},
		{
			name: "broken image fields",
			spec: `
applicationRefs:
- namePattern: a
  images:
  - {alias: "x.y", imageName: nginx}
  - {alias: ok, imageName: "nginx@sha256:abc"}
  - {alias: ok2, imageName: nginx, commonUpdateSettings: {allowTags: "regexp:(("}}
  - {alias: ok3, imageName: nginx, commonUpdateSettings: {allowTags: "v1"}}
  - {alias: ok4, imageName: nginx, commonUpdateSettings: {pullSecret: "hunter2"}}
  - {alias: ok5, imageName: nginx, manifestTargets: {plugin: {name: IMG}}}
  - {alias: ok6, imageName: nginx, manifestTargets: {helm: {name: a}, kustomize: {name: b}}}
  - {alias: ok7, imageName: nginx, imagesVerification: {cosignKey: {secretName: other/k, key: cosign.pub}}}
  - {alias: ok8, imageName: ""}
  - {alias: ok9, imageName: nginx, commonUpdateSettings: {allowTags: "regexp:` + strings.Repeat("a", 1025) + `"}}
  - {alias: good, imageName: nginx, imagesVerification: {enabled: false}}
  - {alias: good, imageName: redis}`,
			want: []string{
				"spec.applicationRefs[0].images[0].alias:",
				"spec.applicationRefs[0].images[1].imageName:",
				"spec.applicationRefs[0].images[4].commonUpdateSettings.pullSecret:",
				"spec.applicationRefs[0].images[5].manifestTargets.plugin:",
				"spec.applicationRefs[0].images[6].manifestTargets:",
				"spec.applicationRefs[0].images[7].imagesVerification.cosignKey.secretName: \"other/k\": only Secrets of the ImageUpdater's own namespace",
				"spec.applicationRefs[0].images[8].imageName: required",
				"spec.applicationRefs[0].images[9].commonUpdateSettings.allowTags: 1032 bytes, over the 1024-byte limit; the image ok9 is not updated",
				"spec.applicationRefs[0].images[11].alias:",
			},
			rules: map[string][]string{"spec.applicationRefs[0]": {"ok2", "ok3", "good"}},
		},
		{
			name: "broken refs are left out, the others stay",
			spec: `
writeBackConfig: {method: "git:ssh"}
applicationRefs:
- namePattern: "a["
  writeBackConfig: {method: argocd}
  images: [{alias: x, imageName: nginx}]
- namePattern: b
  labelSelectors: {matchExpressions: [{key: tier, operator: Bogus}]}
  writeBackConfig: {method: argocd}
  images: [{alias: x, imageName: nginx}]
- namePattern: c
  images: [{alias: x, imageName: nginx}]
- namePattern: d
  writeBackConfig: {method: git, gitConfig: {pullRequest: {github: {}}}}
  images: [{alias: x, imageName: nginx}]
- namePattern: e
  writeBackConfig: {method: git, gitConfig: {writeBackTarget: "values.yaml"}}
  images: [{alias: x, imageName: nginx}]
- namePattern: f
  writeBackConfig: {method: argocd}
- namePattern: f
  writeBackConfig: {method: argocd}
  images: [{alias: x, imageName: nginx}]
- namePattern: g
  useAnnotations: true
- namePattern: "` + strings.Repeat("h", 1025) + `"
  useAnnotations: true`,
			want: []string{
				"spec.applicationRefs[0].namePattern: invalid glob",
				"spec.applicationRefs[1].labelSelectors:",
				"spec.writeBackConfig.method: unsupported value",
				"spec.applicationRefs[4].writeBackConfig.gitConfig.writeBackTarget:",
				"spec.applicationRefs[5].images: required unless useAnnotations",
				"spec.applicationRefs[6].namePattern:",
				"spec.applicationRefs[8].namePattern: 1025 bytes, over the 1024-byte limit",
			},
			// d opens pull requests (TestImageUpdaterPullRequest).
			rules: map[string][]string{"spec.applicationRefs[3]": {"x"}, "spec.applicationRefs[7]": nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "kind: ImageUpdater\nmetadata: {name: u, namespace: n}\nspec:\n" + indent(strings.TrimPrefix(tt.spec, "\n"), "  ") + "\n"
			u, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			rules, problems := u.Rules()
			if len(problems) != len(tt.want) {
				t.Errorf("got %d problems, want %d:\n%v", len(problems), len(tt.want), problems)
			}
			for i := range min(len(problems), len(tt.want)) {
				if !strings.HasPrefix(problems[i].Error(), tt.want[i]) {
					t.Errorf("problem %d = %q, want prefix %q", i, problems[i].Error(), tt.want[i])
				}
				if strings.Contains(problems[i].Error(), "hunter2") {
					t.Errorf("problem %d repeats a value that may be a secret: %q", i, problems[i].Error())
				}
			}
			got := map[string][]string{}
			for _, r := range rules {
				var aliases []string
				for _, img := range r.Images {
					aliases = append(aliases, img.Alias)
				}
				got[r.Path] = aliases
			}
			if d := cmp.Diff(tt.rules, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("rules kept (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseImageUpdater(t *testing.T) {
	tests := []struct {
		name, doc, wantErr string
	}{
		{"json", `{"apiVersion":"argocd-image-updater.argoproj.io/v1alpha1","kind":"ImageUpdater","metadata":{"name":"u"},"spec":{"applicationRefs":[{"namePattern":"a","useAnnotations":true}]},"status":{"applicationsMatched":1}}`, ""},
		{"misspelt field", "kind: ImageUpdater\nspec:\n  applicationRefs:\n  - namePatern: a\n", "namePatern"},
		{"a field in a pull request provider", "kind: ImageUpdater\nspec:\n  writeBackConfig: {gitConfig: {pullRequest: {github: {apiURL: x}}}}\n", "apiURL"},
		{"a pull request provider crowsnest does not know", "kind: ImageUpdater\nspec:\n  writeBackConfig: {gitConfig: {pullRequest: {bitbucket: {}}}}\n", "bitbucket"},
		{"other kind", "kind: Application\n", "kind is"},
		{"other group", "apiVersion: argoproj.io/v1alpha1\n", "apiVersion is"},
		{"not yaml", "spec: [", "reading ImageUpdater"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzImageUpdater: any object reads without panicking, and every problem
// names a field of the spec.
func FuzzImageUpdater(f *testing.F) {
	f.Add([]byte(updaterFull))
	f.Add([]byte(`{"kind":"ImageUpdater","spec":{"applicationRefs":[{"namePattern":"[","images":[{"alias":"a","imageName":":"}]}]}}`))
	f.Add([]byte("spec:\n  applicationRefs:\n  - namePattern: a\n    labelSelectors: {matchExpressions: [{key: k, operator: In}]}\n"))
	f.Add([]byte("spec:\n  writeBackConfig: {method: git, gitConfig: {branch: main, pullRequest: {github: {}, labels: [\" x \", \"a,b\", x]}}}\n" +
		"  applicationRefs:\n  - {namePattern: a, images: [{alias: x, imageName: n}], writeBackConfig: {gitConfig: {branch: \"a:b\", pullRequest: {gitlab: {}}}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := Parse(data)
		if err != nil {
			return
		}
		rules, problems := u.Rules()
		for _, p := range problems {
			if !strings.HasPrefix(p.Path, "spec.") {
				t.Errorf("problem without a spec field: %v", p)
			}
		}
		for i := range rules {
			_ = rules[i].Matches("ns", "name", map[string]string{"a": "b"})
		}
	})
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix)
}

// refWithImages is an applicationRef named name listing n images, each
// with allowTags set to allow.
func refWithImages(name string, n int, allow string) AppRef {
	ref := AppRef{NamePattern: name}
	for i := range n {
		img := Image{Alias: fmt.Sprintf("i%d", i), ImageName: fmt.Sprintf("ghcr.io/org/img%d", i)}
		if allow != "" {
			img.CommonUpdateSettings = &UpdateSettings{AllowTags: &allow}
		}
		ref.Images = append(ref.Images, img)
	}
	return ref
}

// The image cap is checked on the images as listed, before any is read:
// an applicationRef past it is one problem, whatever its images hold
// (thousands of broken ones used to be read, and reported, one by one).
func TestImageUpdaterImageCap(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		refs []AppRef
		// want are the problems; rules the refs kept and their image
		// counts.
		want  []string
		rules map[string]int
	}{
		{
			name:  "at the cap",
			refs:  []AppRef{refWithImages("a", MaxImages, "")},
			rules: map[string]int{"spec.applicationRefs[0]": MaxImages},
		},
		{
			name: "5000 broken images are one problem",
			refs: []AppRef{refWithImages("a", 5000, "regexp:((")},
			want: []string{"spec.applicationRefs[0].images: 5000 images with the applicationRefs before (5000 here): " +
				"more than the 200 one ImageUpdater may list; this applicationRef is left out unread"},
		},
		{
			name: "the ref that passes the cap is left out, and so is every later one that lists images; the others stay",
			refs: []AppRef{refWithImages("a", 150, ""), refWithImages("b", 51, "regexp:(("), refWithImages("c", 1, ""),
				{NamePattern: "d", UseAnnotations: &yes}},
			want: []string{
				"spec.applicationRefs[1].images: 201 images with the applicationRefs before (51 here): " +
					"more than the 200 one ImageUpdater may list; this applicationRef is left out unread",
				"spec.applicationRefs[2].images: 202 images with the applicationRefs before (1 here): " +
					"more than the 200 one ImageUpdater may list; this applicationRef is left out unread",
			},
			rules: map[string]int{"spec.applicationRefs[0]": 150, "spec.applicationRefs[3]": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &Resource{Metadata: metav1.ObjectMeta{Name: "u", Namespace: "n"}, Spec: Spec{ApplicationRefs: tt.refs}}
			rules, problems := u.Rules()
			var got []string
			for _, p := range problems {
				got = append(got, p.Error())
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			kept := map[string]int{}
			for _, r := range rules {
				kept[r.Path] = len(r.Images)
			}
			if d := cmp.Diff(tt.rules, kept, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("rules kept (-want +got):\n%s", d)
			}
		})
	}
}

// config/imageupdater refuses an allowTags pattern past the same limit as
// the policy compiler, before compiling it.
func TestPatternLimitIsPolicys(t *testing.T) {
	if maxPatternBytes != policy.MaxPatternBytes {
		t.Errorf("maxPatternBytes = %d, policy.MaxPatternBytes = %d", maxPatternBytes, policy.MaxPatternBytes)
	}
}
