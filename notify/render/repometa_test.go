package render_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// fixedRepo answers from fixed values, what notify/pipeline's Repo
// does from Git (tested against a real Git server in controller's
// notifyrepo_test.go, with Argo CD's credentials).
type fixedRepo struct {
	md     render.CommitMetadata
	detail render.AppDetail
	err    error
	shas   []string
}

func (f *fixedRepo) CommitMetadata(_ context.Context, _ map[string]any, sha string) (render.CommitMetadata, error) {
	f.shas = append(f.shas, sha)
	return f.md, f.err
}

func (f *fixedRepo) AppDetails(context.Context, map[string]any) (render.AppDetail, error) {
	return f.detail, f.err
}

// TestCommitMetadataArgoDocTemplates renders the templates of Argo CD's
// notification docs that call repo.GetCommitMetadata and GetAppDetails,
// unchanged.
func TestCommitMetadataArgoDocTemplates(t *testing.T) {
	repo := &fixedRepo{
		md: render.CommitMetadata{Author: "Jane Dev <jane@example.com>", Message: "Deploy v2\n\nBody.",
			Date: time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC), Tags: []string{"v2.0.0"}},
		detail: render.AppDetail{Type: "Helm", Helm: &render.CustomHelmAppSpec{
			HelmAppSpec:            render.HelmAppSpec{Parameters: []*render.HelmParameter{{Name: "image.tag", Value: "v1"}, {Name: "replicas", Value: "2"}}},
			HelmParameterOverrides: []render.HelmParameter{{Name: "image.tag", Value: "v2"}},
		}},
	}
	vars := appVars()
	vars["repo"] = render.RepoHelpersFor(context.Background(), repo, vars["app"].(map[string]any))
	tests := []struct{ name, text, want string }{
		// docs/operator-manual/notifications/templates.md
		{"templates.md", `Author: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`, "Author: Jane Dev <jane@example.com>"},
		// services/alertmanager.md
		{"alertmanager.md", `message: "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Message}}"`, "message: \"Deploy v2\n\nBody.\""},
		{"date and tags", `{{(call .repo.GetCommitMetadata .app.status.sync.revision).Date.Format "2006-01-02"}} {{range (call .repo.GetCommitMetadata .app.status.sync.revision).Tags}}{{.}}{{end}}`, "2026-11-20 v2.0.0"},
		// functions.md
		{"app details", `{{(call .repo.GetAppDetails).Type}} {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "image.tag"}} {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "replicas"}}`, "Helm v2 2"},
		{"query escape", `{{call .repo.QueryEscape "a b/c"}}`, "a+b%2Fc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRender(t, tt.text, vars, tt.want, "")
		})
	}
	if repo.shas[0] != "abc123" {
		t.Errorf("asked for %v, want the sync revision abc123", repo.shas)
	}
}

func TestCommitMetadataRenderErrors(t *testing.T) {
	app := appVars()["app"].(map[string]any)
	tests := []struct {
		name    string
		repo    render.RepoLookup
		text    string
		wantErr string
	}{
		{"no lookup", nil, `{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`, "repo.GetCommitMetadata: no access to the Application's repository"},
		{"no lookup details", nil, `{{(call .repo.GetAppDetails).Type}}`, "repo.GetAppDetails: no access"},
		{"lookup fails", &fixedRepo{err: errors.New("git server refused the credentials")}, `{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`, "repo.GetCommitMetadata abc123: git server refused the credentials"},
		{"no revision", &fixedRepo{}, `{{(call .repo.GetCommitMetadata .app.status.operationState.syncResult.revision).Author}}`, "repo.GetCommitMetadata: no commit SHA given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := appVars()
			if tt.repo != nil {
				vars["repo"] = render.RepoHelpersFor(context.Background(), tt.repo, app)
			}
			checkRender(t, tt.text, vars, "", tt.wantErr)
		})
	}
}

func TestAppDetailsFromSource(t *testing.T) {
	values := []byte("image:\n  repository: ghcr.io/x/web\n  tag: v1\nreplicas: 2\nargs: [a, b]\nbig: 1000000\n")
	tests := []struct {
		name    string
		source  string
		files   render.SourceFiles
		want    render.AppDetail
		wantErr string
	}{
		{
			name:   "helm chart found by Chart.yaml",
			source: `{"repoURL":"u","path":"chart","helm":null}`,
			files: render.SourceFiles{Found: true, Names: []string{"Chart.yaml", "prod-values.yaml", "values.yaml"},
				Files: map[string][]byte{"values.yaml": values}},
			want: render.AppDetail{Type: "Helm", Helm: &render.CustomHelmAppSpec{HelmAppSpec: render.HelmAppSpec{
				ValueFiles: []string{"prod-values.yaml", "values.yaml"}, Values: string(values),
				Parameters: []*render.HelmParameter{
					{Name: "args[0]", Value: "a"}, {Name: "args[1]", Value: "b"}, {Name: "big", Value: "1e+06"},
					{Name: "image.repository", Value: "ghcr.io/x/web"}, {Name: "image.tag", Value: "v1"}, {Name: "replicas", Value: "2"},
				},
			}}},
		},
		{
			name:   "explicit helm with overrides, value files and file parameters",
			source: `{"repoURL":"u","path":"chart","helm":{"valueFiles":["envs/prod.yaml","https://x/v.yaml","$ref/v.yaml"],"parameters":[{"name":"image.tag","value":"v9","forceString":true}],"fileParameters":[{"name":"cfg","path":"files/cfg.txt"}]}}`,
			files: render.SourceFiles{Found: true, Names: []string{"values.yaml"},
				Files: map[string][]byte{"values.yaml": []byte("image:\n  tag: v1\nreplicas: 2\n"), "/chart/envs/prod.yaml": []byte("replicas: 5\n")}},
			want: render.AppDetail{Type: "Helm", Helm: &render.CustomHelmAppSpec{
				HelmAppSpec: render.HelmAppSpec{
					ValueFiles: []string{"values.yaml"}, Values: "image:\n  tag: v1\nreplicas: 2\n",
					Parameters:     []*render.HelmParameter{{Name: "image.tag", Value: "v1"}, {Name: "replicas", Value: "5"}},
					FileParameters: []*render.HelmFileParameter{{Name: "cfg", Path: "files/cfg.txt"}},
				},
				HelmParameterOverrides: []render.HelmParameter{{Name: "image.tag", Value: "v9", ForceString: true}},
			}},
		},
		{
			name:   "kustomize wins over Chart.yaml",
			source: `{"repoURL":"u","path":"k","kustomize":{"images":["ghcr.io/x/web=ghcr.io/x/web:v3","redis:7"]}}`,
			files: render.SourceFiles{Found: true, Names: []string{"Chart.yaml", "kustomization.yaml"},
				Files: map[string][]byte{"kustomization.yaml": []byte("images:\n- name: ghcr.io/x/web\n  newTag: v2\n- name: nginx\n  newName: mirror/nginx\n  digest: sha256:abc\n")}},
			want: render.AppDetail{Type: "Kustomize", Kustomize: &render.KustomizeAppSpec{Images: []string{"ghcr.io/x/web:v3", "mirror/nginx@sha256:abc", "redis:7"}}},
		},
		{
			name:   "kustomization found",
			source: `{"repoURL":"u","path":"k"}`,
			files:  render.SourceFiles{Found: true, Names: []string{"Chart.yaml", "Kustomization"}, Files: map[string][]byte{"Kustomization": []byte("resources: [a.yaml]\n")}},
			want:   render.AppDetail{Type: "Kustomize", Kustomize: &render.KustomizeAppSpec{}},
		},
		{
			name:   "plain manifests",
			source: `{"repoURL":"u","path":"m"}`,
			files:  render.SourceFiles{Found: true, Names: []string{"deploy.yaml"}},
			want:   render.AppDetail{Type: "Directory", Directory: &render.DirectoryAppSpec{}},
		},
		{
			name:   "chart from a Helm repository",
			source: `{"repoURL":"https://charts.example.com","chart":"web","helm":{"parameters":[{"name":"a","value":"b"}]}}`,
			want:   render.AppDetail{Type: "Helm", Helm: &render.CustomHelmAppSpec{HelmParameterOverrides: []render.HelmParameter{{Name: "a", Value: "b"}}}},
		},
		{name: "missing path", source: `{"repoURL":"u","path":"gone"}`, wantErr: `path "gone" not found`},
		{name: "two types", source: `{"repoURL":"u","helm":{},"kustomize":{}}`, wantErr: "multiple application sources defined: Kustomize,Helm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src map[string]any
			if err := json.Unmarshal([]byte(tt.source), &src); err != nil {
				t.Fatal(err)
			}
			got, err := render.BuildAppDetail(src, tt.files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
