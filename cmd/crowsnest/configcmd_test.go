package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the CLI in-process and returns stdout, stderr and the error
// main would turn into exit code 1.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func TestConfigValidate(t *testing.T) {
	const header = "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"
	tests := []struct {
		name     string
		content  string
		wantErr  bool
		wantPath string // the field path the error must name
	}{
		{name: "example config", content: readExample(t)},
		{name: "unknown key", content: header + "watch:\n  namespase: [argocd]\n", wantErr: true, wantPath: "watch.namespase"},
		{name: "wrong type", content: header + "controller:\n  workers: four\n", wantErr: true, wantPath: "controller.workers"},
		{name: "bad duration", content: header + "leaderElection:\n  leaseDuration: 15 parsecs\n", wantErr: true, wantPath: "leaderElection.leaseDuration"},
		{name: "missing required field", content: "kind: Config\n", wantErr: true, wantPath: "apiVersion"},
		{name: "missing lease namespace", content: header + "leaderElection:\n  enabled: true\n", wantErr: true, wantPath: "leaderElection.leaseNamespace"},
		{name: "invalid selector", content: header + "watch:\n  selector: 'team in (a'\n", wantErr: true, wantPath: "watch.selector"},
		{name: "broken trigger expression", content: header + "notifications:\n  triggers:\n    on-x:\n      - when: app.status ==\n        send: [on-deployed]\n  catalog: true\n", wantErr: true, wantPath: "notifications.triggers[on-x][0].when"},
		{name: "invalid namespace in a list", content: header + "watch:\n  namespaces: [argocd, Not_A_Namespace]\n", wantErr: true, wantPath: "watch.namespaces[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crowsnest.yaml")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, err := execute(t, "config", "validate", path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("config validate error = %v, wantErr %v\nstderr: %s", err, tt.wantErr, stderr)
			}
			if !tt.wantErr {
				if !strings.Contains(stdout, path+": valid") {
					t.Errorf("stdout = %q, want it to say the file is valid", stdout)
				}
				return
			}
			if !strings.Contains(stderr, tt.wantPath+":") {
				t.Errorf("stderr does not name %q:\n%s", tt.wantPath, stderr)
			}
		})
	}
}

// TestConfigValidateEveryProblemInOneRun: schema problems, sync windows,
// trigger expressions, template syntax, references and image policies are
// all reported by one run, each as FILE:LINE: FIELD: MESSAGE.
func TestConfigValidateEveryProblemInOneRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crowsnest.yaml")
	content := `apiVersion: crowsnest.dev/v1alpha1
kind: Config
controller:
  workers: four
syncWindows:
  - kind: allow
    schedule: "0 25 * * *"
    duration: 1h
    applications: ["*"]
notifications:
  triggers:
    on-x:
      - when: app.status ==
        send: [t1]
    on-y:
      - when: |
          apps.status
        send: [missing]
    on-z:
      - when: ""
        send: [t1]
  templates:
    t1:
      message: "{{ .app.metadata.name "
imagePolicies:
  - name: p
    match: {labelSelector: "a in (b"}
    images: [{image: nginx}]
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := execute(t, "config", "validate", path)
	if err == nil {
		t.Fatalf("config validate accepted a broken config:\n%s", stderr)
	}
	want := []string{
		path + ":4: controller.workers: expected an integer",
		path + ":7: syncWindows[0].schedule: invalid schedule",
		path + ":13: notifications.triggers[on-x][0].when: expression line 1, column 13: unexpected token EOF",
		path + ":16: notifications.triggers[on-y][0].when: expression line 1, column 1: unknown name apps",
		path + ":18: notifications.triggers[on-y][0].send: unknown template \"missing\"",
		path + ":20: notifications.triggers[on-z][0].when: required",
		path + ":24: notifications.templates[t1].message: invalid template: line 1: unclosed action",
		path + ":27: imagePolicies[0].match.labelSelector: invalid label selector",
	}
	for _, w := range want {
		if !strings.Contains(stderr, "\n  "+w) {
			t.Errorf("missing %q in:\n%s", w, stderr)
		}
	}
	// The empty expression is reported once, by the schema, not again by
	// the expression compiler.
	if strings.Count(stderr, "triggers[on-z]") != 1 {
		t.Errorf("notifications.triggers[on-z] reported more than once:\n%s", stderr)
	}
	if !strings.Contains(stderr, "invalid (8 problems)") {
		t.Errorf("want 8 problems:\n%s", stderr)
	}
}

func TestConfigValidateNeedsAFile(t *testing.T) {
	if _, _, err := execute(t, "config", "validate"); err == nil {
		t.Error("config validate without a file succeeded")
	}
	_, stderr, err := execute(t, "config", "validate", filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing file: err=%v stderr=%q, want an error naming the file", err, stderr)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, err := execute(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout, "crowsnest dev (commit ") {
		t.Errorf("version output = %q", stdout)
	}
}

func readExample(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "config", "crowsnest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
