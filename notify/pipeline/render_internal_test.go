package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
)

// A send's templates are merged as Argo CD merges them, the blocks of
// package services' types (github:, teams:, ...) included: a later
// template's block replaces an earlier one's, and one without a block
// keeps the earlier block. (The merge once dropped every block, so the
// daemon's GitHub messages were all skipped as "template has no github
// block".)
func TestRenderMergesServiceBlocks(t *testing.T) {
	nc, err := config.ParseArgoCDConfigMap(map[string]string{
		"service.github":     "token: $gh-token\n",
		"template.first":     "message: first\ngithub:\n  revisionPath: r1\n  status:\n    state: pending\n",
		"template.second":    "message: second\ngithub:\n  revisionPath: r2\n  status:\n    state: success\n",
		"template.no-github": "message: third\n",
	}, map[string][]byte{"gh-token": []byte("t")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := compile(nc)
	if err != nil {
		t.Fatal(err)
	}
	app := map[string]any{"spec": map[string]any{"source": map[string]any{"repoURL": "https://github.com/org/app"}}}
	tests := []struct {
		name      string
		templates []string
		wantMsg   string
		wantRev   string // the github block's revisionPath; "" for no block
	}{
		{"one", []string{"first"}, "first", "r1"},
		{"a later block replaces", []string{"first", "second"}, "second", "r2"},
		{"a later template without one keeps it", []string{"second", "no-github"}, "third", "r2"},
		{"none", []string{"no-github"}, "third", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := c.render(tt.templates, "github", TemplateVars(app, nil, nil, "github"))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Message, Rev string
			}
			got.Message = n.Message
			if raw, ok := n.Blocks["github"]; ok {
				var b struct {
					RevisionPath string `json:"revisionPath"`
				}
				if err := json.Unmarshal(raw, &b); err != nil {
					t.Fatal(err)
				}
				got.Rev = b.RevisionPath
			}
			want := struct{ Message, Rev string }{tt.wantMsg, tt.wantRev}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("merged (-want +got):\n%s", d)
			}
		})
	}
}
