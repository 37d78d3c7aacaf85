package triggers

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

func TestNilSafety(t *testing.T) {
	app := loadApp(t, "created")
	tests := []struct {
		expr    string
		want    bool
		wantErr bool
	}{
		{expr: "app.status.operationState.phase in ['Error', 'Failed']", want: false},
		{expr: "app.status.operationState.syncResult.revision == nil", want: true},
		{expr: "prev == nil", want: true},
		{expr: "prev.status.health.status != app.status.health.status", want: true},
		{expr: "app.spec.sources[0].repoURL == nil", want: true},
		{expr: "event.type == 'image-updated'", want: false},
		{expr: "context.argocdUrl == nil", want: true}, // no context configured
		{expr: "strings.HasPrefix(app.status.operationState.message, 'x')", want: false},
		{expr: "strings.ToUpper(app.metadata.name) == 'SHOP'", want: true},
		{expr: "repo.FullNameByRepoURL(app.spec.source.repoURL) == 'example/shop-deploy'", want: true},
		{expr: "repo.RepoURLToHTTPS(app.spec.source.repoURL) == 'https://github.com/example/shop-deploy'", want: true},
		{expr: "time.Now().Sub(time.Parse(app.metadata.creationTimestamp)).Hours() > 24", want: true},
		{expr: "time.Parse(app.status.operationState.startedAt).Year() > 2000", wantErr: true},
		{expr: "app.metadata.name", wantErr: true}, // not a boolean
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			tr, err := CompileTrigger("t", []config.Condition{{When: tt.expr, Send: []string{"x"}}})
			if err != nil {
				t.Fatal(err)
			}
			r := Evaluate(tr, NewEnv(app, nil, nil, nil, fixedNow))[0]
			if (r.Err != nil) != tt.wantErr || r.Triggered != tt.want {
				t.Errorf("Triggered %v, Err %v; want %v, error %v", r.Triggered, r.Err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	n := &config.Notifications{
		Triggers: map[string][]config.Condition{
			"on-x": {
				{When: "true", Send: []string{"t"}},
				{When: "app.status.health.status ==", Send: []string{"t"}},
				{When: "true", OncePer: "nosuchvar.x", Send: []string{"missing"}},
			},
		},
		Templates:       map[string]config.Template{"t": {Message: "m"}},
		DefaultTriggers: []string{"on-y"},
	}
	_, err := Compile(n)
	if err == nil {
		t.Fatal("Compile succeeded, want errors")
	}
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Trigger != "on-x" || ce.Condition != 1 || ce.Field != "when" || ce.Column != 27 {
		t.Errorf("first error %+v, want on-x[1].when at column 27", ce)
	}
	for _, frag := range []string{
		"trigger on-x[1].when: line 1, column 27: unexpected token EOF",
		"trigger on-x[2].oncePer: line 1, column 1: unknown name nosuchvar",
		`trigger on-x[2].send: unknown template "missing"`,
		`defaultTriggers: unknown trigger "on-y"`,
	} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error lacks %q:\n%v", frag, err)
		}
	}
}
