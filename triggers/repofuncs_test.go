package triggers

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
)

// commitMeta and helmSpec have the shapes notify's CommitMetadata and
// CustomHelmAppSpec have (triggers does not import notify).
type commitMeta struct {
	Message, Author string
	Date            time.Time
	Tags            []string
}

type helmSpec struct{ Overrides map[string]string }

func (h helmSpec) GetParameterValueByName(n string) string { return h.Overrides[n] }

type appDetail struct {
	Type string
	Helm *helmSpec
}

// Conditions calling repo.GetCommitMetadata and repo.GetAppDetails, as
// Argo CD's expressions do, compile (config validate) and evaluate with
// what NewRepoFuncs answers; without it they are evaluation errors.
func TestCommitMetadataInConditions(t *testing.T) {
	app := loadApp(t, "healthy")
	var asked []any
	repo := NewRepoFuncs(func(sha any) (any, error) {
		asked = append(asked, sha)
		return commitMeta{Author: "Jane <jane@example.com>", Message: "Deploy [skip notify]", Tags: []string{"v1"}}, nil
	}, func() (any, error) {
		return appDetail{Type: "Helm", Helm: &helmSpec{Overrides: map[string]string{"image.tag": "v2"}}}, nil
	})
	tests := []struct {
		expr string
		want bool
	}{
		{"repo.GetCommitMetadata(app.status.sync.revision).Author contains 'jane@example.com'", true},
		{"!(repo.GetCommitMetadata(app.status.sync.revision).Message contains '[skip notify]')", false},
		{"'v1' in repo.GetCommitMetadata(app.status.sync.revision).Tags", true},
		{"repo.GetAppDetails().Type == 'Helm' && repo.GetAppDetails().Helm.GetParameterValueByName('image.tag') == 'v2'", true},
		{"repo.QueryEscape('a b') == 'a+b'", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			tr, err := CompileTrigger("t", []config.Condition{{When: tt.expr, Send: []string{"x"}}})
			if err != nil {
				t.Fatal(err)
			}
			env := NewEnv(app, nil, nil, nil, fixedNow)
			env.Repo = repo
			r := Evaluate(tr, env)[0]
			if r.Err != nil || r.Triggered != tt.want {
				t.Errorf("triggered %v err %v, want %v", r.Triggered, r.Err, tt.want)
			}
			r = Evaluate(tr, NewEnv(app, nil, nil, nil, fixedNow))[0]
			if tt.expr[0:4] == "repo" && strings.Contains(tt.expr, "Get") && (r.Err == nil || !strings.Contains(r.Err.Error(), "repo.Get")) {
				t.Errorf("without access: err %v, want one naming the function", r.Err)
			}
		})
	}
	if len(asked) == 0 || asked[0] != "9f2c1e7d4b3a59e8c0d6f1a2b3c4d5e6f7a8b9c0" {
		t.Errorf("asked for %v", asked)
	}
}
