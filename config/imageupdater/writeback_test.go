package imageupdater

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crowsnest-dev/crowsnest/config"
)

// wantProblem is a problem by its field, a part of its message and
// whether it only says the field is ignored.
type wantProblem struct {
	path, msg string
	ignored   bool
}

// gitConfig.pullRequest read as argocd-image-updater reads it
// (pkg/argocd/argocd.go: mergeWBCSettings, newWBCFromSettings,
// countPullRequestProviders, sanitizePRLabels).
func TestImageUpdaterPullRequest(t *testing.T) {
	const (
		specPR = "spec.writeBackConfig.gitConfig.pullRequest"
		refPR  = "spec.applicationRefs[0].writeBackConfig.gitConfig.pullRequest"
	)
	tests := []struct {
		name string
		// specWB and refWB are the spec's and the applicationRef's
		// writeBackConfig (YAML flow, "" for none).
		specWB, refWB string
		want          config.PolicyWriteBack // when kept
		fields        map[string]string      // when kept
		problems      []wantProblem
		// noWrite is Rule.NoWrite: the applicationRef keeps its
		// Applications and writes nothing, where argocd-image-updater's
		// newWBCFromSettings fails and it goes on to the next applicationRef.
		noWrite string
		// dropped: the applicationRef is left out, as there.
		dropped bool
	}{
		{
			name:   "github",
			specWB: `{method: "git:secret:git-creds", gitConfig: {branch: main, pullRequest: {github: {}}}}`,
			want:   config.PolicyWriteBack{Method: "git:secret:git-creds", Branch: "main", PullRequest: &config.PolicyPullRequest{Forge: "github"}},
			fields: map[string]string{"method": "spec.writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch", "pullRequest": specPR},
		},
		{
			name:   "gitlab",
			specWB: `{method: git, gitConfig: {pullRequest: {gitlab: {}}}}`,
			want:   config.PolicyWriteBack{Method: "git", PullRequest: &config.PolicyPullRequest{Forge: "gitlab"}},
			fields: map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": specPR},
		},
		{
			name:   "labels trimmed, empty ones and repeats left out, in order",
			specWB: `{method: git, gitConfig: {pullRequest: {github: {}, labels: [" deps ", "", automated, deps, "  ", "image update"]}}}`,
			want:   config.PolicyWriteBack{Method: "git", PullRequest: &config.PolicyPullRequest{Forge: "github", Labels: []string{"deps", "automated", "image update"}}},
			fields: map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": specPR, "pullRequest.labels": specPR + ".labels"},
		},
		{
			name:   "a label crowsnest cannot carry is left out, the pull request stays",
			specWB: `{method: git, gitConfig: {pullRequest: {github: {}, labels: [deps, "a,b", "tab\there", "` + strings.Repeat("x", 256) + `"]}}}`,
			want:   config.PolicyWriteBack{Method: "git", PullRequest: &config.PolicyPullRequest{Forge: "github", Labels: []string{"deps"}}},
			fields: map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": specPR, "pullRequest.labels": specPR + ".labels"},
			problems: []wantProblem{
				{path: specPR + ".labels[1]", msg: `"a,b": crowsnest takes no ','`},
				{path: specPR + ".labels[2]", msg: "tab or line break"},
				{path: specPR + ".labels[3]", msg: "longer than 255 bytes; the label is left out"},
			},
		},
		{
			name:   "the applicationRef's pullRequest replaces the spec's whole",
			specWB: `{method: git, gitConfig: {branch: main, pullRequest: {github: {}, labels: [deps]}}}`,
			refWB:  `{gitConfig: {pullRequest: {gitlab: {}}}}`,
			want:   config.PolicyWriteBack{Method: "git", Branch: "main", PullRequest: &config.PolicyPullRequest{Forge: "gitlab"}},
			fields: map[string]string{"method": "spec.writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch", "pullRequest": refPR},
		},
		{
			name:   "the spec's pullRequest is inherited",
			specWB: `{method: git, gitConfig: {pullRequest: {github: {}, labels: [deps]}}}`,
			refWB:  `{gitConfig: {branch: release}}`,
			want:   config.PolicyWriteBack{Method: "git", Branch: "release", PullRequest: &config.PolicyPullRequest{Forge: "github", Labels: []string{"deps"}}},
			fields: map[string]string{
				"method": "spec.writeBackConfig.method", "branch": "spec.applicationRefs[0].writeBackConfig.gitConfig.branch",
				"pullRequest": specPR, "pullRequest.labels": specPR + ".labels",
			},
		},
		{
			name:     "two providers",
			specWB:   `{method: git, gitConfig: {pullRequest: {github: {}, gitlab: {}}}}`,
			want:     config.PolicyWriteBack{Method: "git"},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": specPR},
			problems: []wantProblem{{path: specPR, msg: "both github and gitlab are set, want exactly one; nothing is written for this applicationRef"}},
			noWrite:  specPR,
		},
		{
			name:     "no provider",
			refWB:    `{method: git, gitConfig: {pullRequest: {}}}`,
			want:     config.PolicyWriteBack{Method: "git"},
			fields:   map[string]string{"method": "spec.applicationRefs[0].writeBackConfig.method", "pullRequest": refPR},
			problems: []wantProblem{{path: refPR, msg: "neither github nor gitlab is set, want exactly one"}},
			noWrite:  refPR,
		},
		{
			name:     "a spec pullRequest with two providers is no problem when the applicationRef's replaces it",
			specWB:   `{method: git, gitConfig: {pullRequest: {github: {}, gitlab: {}}}}`,
			refWB:    `{gitConfig: {pullRequest: {github: {}}}}`,
			want:     config.PolicyWriteBack{Method: "git", PullRequest: &config.PolicyPullRequest{Forge: "github"}},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": refPR},
			problems: nil,
		},
		{
			name:     "a <base>:<target> branch is refused, naming the branch",
			specWB:   `{method: git, gitConfig: {branch: "main:image-updater-{{.SHA256}}"}}`,
			refWB:    `{gitConfig: {pullRequest: {github: {}}}}`,
			want:     config.PolicyWriteBack{Method: "git", Branch: "main:image-updater-{{.SHA256}}"},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch", "pullRequest": refPR},
			problems: []wantProblem{{path: "spec.writeBackConfig.gitConfig.branch", msg: `"main:image-updater-{{.SHA256}}": a pull request takes only its base branch`}},
			noWrite:  refPR,
		},
		{
			name:     "method argocd: ignored, visibly",
			specWB:   `{method: argocd, gitConfig: {branch: "main:x", pullRequest: {github: {}, gitlab: {}}}}`,
			want:     config.PolicyWriteBack{Method: "argocd", Branch: "main:x"},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "branch": "spec.writeBackConfig.gitConfig.branch", "pullRequest": specPR},
			problems: []wantProblem{{path: specPR, msg: "a pull request needs a git method, and the method is argocd (spec.writeBackConfig.method)", ignored: true}},
		},
		{
			name:     "no method is argocd: ignored, visibly",
			refWB:    `{gitConfig: {pullRequest: {gitlab: {}}}}`,
			want:     config.PolicyWriteBack{},
			fields:   map[string]string{"pullRequest": refPR},
			problems: []wantProblem{{path: refPR, msg: "the method is argocd (the default)", ignored: true}},
		},
		{
			name:     "an unknown git method is the problem; the pull request asked for keeps the applicationRef writing nothing",
			specWB:   `{method: "git:ssh", gitConfig: {pullRequest: {}}}`,
			want:     config.PolicyWriteBack{Method: "git:ssh"},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "pullRequest": specPR},
			problems: []wantProblem{{path: "spec.writeBackConfig.method", msg: `unsupported value "git:ssh"`}},
			noWrite:  specPR,
		},
		{
			name:     "so does a writeBackTarget crowsnest does not write",
			specWB:   `{method: git, gitConfig: {writeBackTarget: values.yaml, pullRequest: {github: {}}}}`,
			want:     config.PolicyWriteBack{Method: "git", Target: "values.yaml"},
			fields:   map[string]string{"method": "spec.writeBackConfig.method", "target": "spec.writeBackConfig.gitConfig.writeBackTarget", "pullRequest": specPR},
			problems: []wantProblem{{path: "spec.writeBackConfig.gitConfig.writeBackTarget", msg: `"values.yaml": want kustomization`}},
			noWrite:  specPR,
		},
		{
			name:     "an unknown method that is not git drops the applicationRef, as before",
			specWB:   `{method: svn, gitConfig: {pullRequest: {github: {}}}}`,
			problems: []wantProblem{{path: "spec.writeBackConfig.method", msg: `unsupported value "svn"`}},
			dropped:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "kind: ImageUpdater\nmetadata: {name: u, namespace: n}\nspec:\n"
			if tt.specWB != "" {
				doc += "  writeBackConfig: " + tt.specWB + "\n"
			}
			doc += "  applicationRefs:\n  - namePattern: a\n    images: [{alias: x, imageName: nginx}]\n"
			if tt.refWB != "" {
				doc += "    writeBackConfig: " + tt.refWB + "\n"
			}
			u, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			rules, problems := u.Rules()
			if len(problems) != len(tt.problems) {
				t.Errorf("got %d problems, want %d: %v", len(problems), len(tt.problems), problems)
			}
			for i := range min(len(problems), len(tt.problems)) {
				p, w := problems[i], tt.problems[i]
				if p.Path != w.path || !strings.Contains(p.Msg, w.msg) || p.Ignored != w.ignored {
					t.Errorf("problem %d = %q (ignored %v), want %s: ...%s... (ignored %v)", i, p.Error(), p.Ignored, w.path, w.msg, w.ignored)
				}
			}
			if tt.dropped {
				if len(rules) != 0 {
					t.Errorf("applicationRef kept with write-back %+v, want it left out", rules[0].WriteBack)
				}
				return
			}
			if len(rules) != 1 {
				t.Fatalf("%d rules, want the applicationRef kept", len(rules))
			}
			if d := cmp.Diff(tt.want, rules[0].WriteBack, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("write-back (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.fields, rules[0].WriteBackFields, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			if rules[0].NoWrite != tt.noWrite {
				t.Errorf("NoWrite = %q, want %q", rules[0].NoWrite, tt.noWrite)
			}
		})
	}
}
