package conformance

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/notification/expression/shared"
	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/templates"

	"github.com/crowsnest-dev/crowsnest/notify"

	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// sameShape reports where crowsnest's type lacks an exported field of
// Argo CD's (by name, recursively, with the same kind), so templates that
// read .Author, .Helm.HelmAppSpec.Parameters or .Kustomize.Images read
// the same on both. Protobuf bookkeeping (XXX_) is not a field templates
// read.
func sameShape(t *testing.T, path string, argo, ours reflect.Type) {
	t.Helper()
	for argo.Kind() == reflect.Pointer || argo.Kind() == reflect.Slice {
		if ours.Kind() != argo.Kind() {
			t.Errorf("%s: Argo CD's is a %s, crowsnest's a %s", path, argo.Kind(), ours.Kind())
			return
		}
		argo, ours = argo.Elem(), ours.Elem()
	}
	if argo.Kind() != reflect.Struct || argo == reflect.TypeFor[time.Time]() {
		if argo != ours && argo.Kind() != ours.Kind() {
			t.Errorf("%s: Argo CD's is %s, crowsnest's %s", path, argo, ours)
		}
		return
	}
	for i := range argo.NumField() {
		f := argo.Field(i)
		if !f.IsExported() || strings.HasPrefix(f.Name, "XXX_") {
			continue
		}
		of, ok := ours.FieldByName(f.Name)
		if !ok {
			t.Errorf("%s.%s: missing in crowsnest's %s", path, f.Name, ours)
			continue
		}
		sameShape(t, path+"."+f.Name, f.Type, of.Type)
	}
}

func TestCommitMetadataAndAppDetailShapes(t *testing.T) {
	sameShape(t, "CommitMetadata", reflect.TypeFor[shared.CommitMetadata](), reflect.TypeFor[render.CommitMetadata]())
	sameShape(t, "AppDetail", reflect.TypeFor[shared.AppDetail](), reflect.TypeFor[render.AppDetail]())
	for _, m := range []string{"GetParameterValueByName", "GetFileParameterPathByName"} {
		if _, ok := reflect.TypeFor[render.CustomHelmAppSpec]().MethodByName(m); !ok {
			t.Errorf("CustomHelmAppSpec.%s is missing", m)
		}
	}
}

// The templates of Argo CD's docs render the same with notifications-
// engine over Argo CD's types as with crowsnest over its own.
func TestCommitMetadataTemplatesMatchArgoCD(t *testing.T) {
	date := time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC)
	argoMeta := shared.CommitMetadata{Author: "Jane Dev <jane@example.com>", Message: "Deploy v2\n\nBody.", Date: date, Tags: []string{"v2.0.0", "release"}}
	argoDetail := shared.AppDetail{Type: "Helm", Helm: &shared.CustomHelmAppSpec{
		HelmAppSpec: apiclient.HelmAppSpec{
			ValueFiles:     []string{"values.yaml"},
			Parameters:     []*v1alpha1.HelmParameter{{Name: "image.tag", Value: "v1"}, {Name: "replicas", Value: "2"}},
			FileParameters: []*v1alpha1.HelmFileParameter{{Name: "cfg", Path: "files/cfg"}},
		},
		HelmParameterOverrides: []v1alpha1.HelmParameter{{Name: "image.tag", Value: "v2"}},
	}}
	ours := lookup{
		md: render.CommitMetadata{Author: argoMeta.Author, Message: argoMeta.Message, Date: date, Tags: argoMeta.Tags},
		d: render.AppDetail{Type: "Helm", Helm: &render.CustomHelmAppSpec{
			HelmAppSpec: render.HelmAppSpec{
				ValueFiles:     []string{"values.yaml"},
				Parameters:     []*render.HelmParameter{{Name: "image.tag", Value: "v1"}, {Name: "replicas", Value: "2"}},
				FileParameters: []*render.HelmFileParameter{{Name: "cfg", Path: "files/cfg"}},
			},
			HelmParameterOverrides: []render.HelmParameter{{Name: "image.tag", Value: "v2"}},
		}},
	}
	app := map[string]any{"status": map[string]any{"sync": map[string]any{"revision": "abc"}}}
	texts := []string{
		`Author: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`,
		`message: "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Message}}"`,
		`{{(call .repo.GetCommitMetadata .app.status.sync.revision).Date}} {{(call .repo.GetCommitMetadata .app.status.sync.revision).Tags}}`,
		`{{with call .repo.GetAppDetails}}{{.Type}} {{.Helm.GetParameterValueByName "image.tag"}} {{.Helm.GetParameterValueByName "replicas"}} {{.Helm.GetFileParameterPathByName "cfg"}} {{.Helm.HelmAppSpec.ValueFiles}}{{range .Helm.HelmAppSpec.Parameters}} {{.Name}}={{.Value}}{{end}}{{end}}`,
	}
	for _, text := range texts {
		argoVars := map[string]any{"app": app, "repo": map[string]any{
			"GetCommitMetadata": func(string) any { return argoMeta },
			"GetAppDetails":     func() any { return argoDetail },
		}}
		want := renderEngine(t, text, argoVars)
		got, err := render.Once(notify.Template{Name: "t", Message: text},
			map[string]any{"app": app, "repo": render.RepoHelpersFor(context.Background(), ours, app)})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got.Message != want {
			t.Errorf("%s:\ncrowsnest %q\nArgo CD   %q", text, got.Message, want)
		}
	}
}

type lookup struct {
	md render.CommitMetadata
	d  render.AppDetail
}

func (l lookup) CommitMetadata(context.Context, map[string]any, string) (render.CommitMetadata, error) {
	return l.md, nil
}

func (l lookup) AppDetails(context.Context, map[string]any) (render.AppDetail, error) {
	return l.d, nil
}

// renderEngine renders text as Argo CD's notification controller does.
func renderEngine(t *testing.T, text string, vars map[string]any) string {
	t.Helper()
	svc, err := templates.NewService(map[string]services.Notification{"t": {Message: text}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := svc.FormatNotification(vars, "t")
	if err != nil {
		t.Fatal(err)
	}
	return n.Message
}
