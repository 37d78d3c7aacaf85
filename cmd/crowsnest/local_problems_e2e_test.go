package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// Honest exit codes in --once: every Application file that could not be
// read, or not wholly, is a warning naming the file and the reason and
// fails the pass, and the closing error names it too. Only what is broken
// is skipped: the rest of the folder, and of the Application, is still
// read and updated. Objects of other kinds are no problem.
func TestE2ELocalModeOnceFileProblems(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.2.0")
	source := "{repoURL: https://git.example.invalid/web.git, path: deploy}"
	good := localApp("web", web, "", source)
	updated := `"reason":"ImagesUpdated","message":"` + web + `: 1.0.0 -> 1.2.0 (patched the Application)"`

	tests := []struct {
		name  string
		files map[string]string
		// link is a link to nowhere made in the folder besides files.
		link string
		// wantProblem is the start of "file: reason" as the closing error
		// names it; none for a pass that succeeds.
		wantProblem string
	}{{
		name: "no problem",
		files: map[string]string{"web.yaml": good, "other.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default, namespace: ci}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {replicas: 3}\n"},
	}, {
		name:        "YAML that does not parse",
		files:       map[string]string{"web.yaml": good, "broken.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: [broken\n"},
		wantProblem: "broken.yaml: file skipped: document 1: error converting YAML to JSON",
	}, {
		name:        "document without a name",
		files:       map[string]string{"web.yaml": good, "api.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {namespace: ci}\n"},
		wantProblem: "api.yaml: file skipped: document 1: Application without metadata.name",
	}, {
		name:        "file that cannot be read",
		files:       map[string]string{"web.yaml": good},
		link:        "api.yaml",
		wantProblem: "api.yaml: file skipped: stat ",
	}, {
		// Unquoted, a YAML bool or number is not a string, which a real
		// apiserver refuses; only that annotation is left out.
		name:        "annotation value that is not a string",
		files:       map[string]string{"web.yaml": localApp("web", web, "    argocd-image-updater.argoproj.io/force-update: true", source)},
		wantProblem: `web.yaml: document 1: Application "web": annotation "argocd-image-updater.argoproj.io/force-update" is a bool, not a string; that annotation is ignored (quote the value: "true")`,
	}, {
		name:        "field of the wrong type",
		files:       map[string]string{"web.yaml": good, "api.yaml": localApp("api", web, "", "a string")},
		wantProblem: "api.yaml: reading Application ci/api: spec.source is a string, not an object; the Application is skipped",
	}, {
		name:        "Application defined twice",
		files:       map[string]string{"web.yaml": good, "old-web.yaml": localApp("web", web, "", "{repoURL: https://git.example.invalid/old.git, path: deploy}")},
		wantProblem: "old-web.yaml: Application ci/web is ignored here: web.yaml, later in name order, defines it too and wins",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, filepath.Join(dir, name), content)
			}
			if tt.link != "" {
				if err := os.Symlink("nowhere.yaml", filepath.Join(dir, tt.link)); err != nil {
					t.Fatal(err)
				}
			}
			log, err := runOnce(t, dir)
			if !strings.Contains(log, updated) {
				t.Errorf("web was not updated:\n%s", log)
			}
			if tt.wantProblem == "" {
				if err != nil {
					t.Fatalf("run --once: %v\n%s", err, log)
				}
				return
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("run --once: %v, want exit code 1\n%s", err, log)
			}
			file, _, _ := strings.Cut(tt.wantProblem, ":")
			if want := `"level":"WARN","msg":"application file problem","path":"` + filepath.Join(dir, file) + `"`; !strings.Contains(log, want) {
				t.Errorf("no warning naming %s:\n%s", file, log)
			}
			_, closing, _ := strings.Cut(log, "\ncrowsnest: ")
			closing = strings.ReplaceAll(closing, dir+string(filepath.Separator), "")
			if !strings.Contains(closing, "one pass finished with 1 failure(s); see the warnings above; application files: "+tt.wantProblem) {
				t.Errorf("closing error does not name the problem %q:\n%s", tt.wantProblem, log)
			}
		})
	}
}
