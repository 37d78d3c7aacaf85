package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/migrate"
)

// updateGolden rewrites the golden files of `crowsnest migrate`:
// go test -run 'TestMigrate' ./cmd/crowsnest/ -update
var updateGolden = flag.Bool("update", false, "rewrite testdata/migrate/*.txt and *.json from the current output")

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; run with -update if the change is meant):\n%s", path, diff)
	}
}

// exitCode is the exit code main gives err.
func exitCode(err error) int {
	var ec interface{ CommandExitCode() int }
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return ec.CommandExitCode()
	}
	return 1
}

func TestMigrateGolden(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		wantExit int
		// wantBreaks are texts the summary must name as stopping work.
		wantBreaks []string
	}{
		{
			// Annotations (semver, digest, newest-build, Helm, kustomize,
			// Git write-back, pull secrets), an ImageUpdater, the
			// argocd-image-updater-config with registries.conf, and
			// argocd-notifications-cm with a service type crowsnest lacks,
			// a template block for it, unknown keys; subscriptions on
			// Applications, an AppProject and global; sync windows.
			name: "mixed", dir: "testdata/migrate/mixed", wantExit: 1,
			wantBreaks: []string{
				"Application argocd/web notifications on-deployed -> discord",
				"Application team-a/worker argocd-image-updater.argoproj.io/worker.pull-secret",
				"ConfigMap argocd/argocd-image-updater-config git.commit-signing-key",
				// A named Git Secret without url.
				"Application team-a/worker write-back: nothing would be written: named Secret team-a/git-creds",
				// Two ImageUpdaters that would write one Application two ways.
				"Application argocd/batch-nightly ImageUpdater argocd/batch-tools spec.writeBackConfig.method",
			},
		},
		{name: "clean", dir: "testdata/migrate/clean", wantExit: 0},
		// ImageUpdaters asking for pull requests (GitHub, GitLab, labels,
		// an applicationRef's replacing the spec's) are carried over; the
		// argocd method's is ignored, as argocd-image-updater ignores it.
		{name: "pullrequest", dir: "testdata/migrate/pullrequest", wantExit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secrets := fixtureSecretValues(t, tt.dir)
			for _, format := range []string{"text", "json"} {
				out, stderr, err := execute(t, "migrate", "--from-dir", tt.dir, "-o", format)
				if got := exitCode(err); got != tt.wantExit {
					t.Fatalf("-o %s: exit code %d (%v), want %d\nstderr: %s", format, got, err, tt.wantExit, stderr)
				}
				ext := map[string]string{"text": ".txt", "json": ".json"}[format]
				golden(t, filepath.Join("testdata", "migrate", tt.name+ext), out)
				for _, s := range secrets {
					if strings.Contains(out, s) {
						t.Errorf("-o %s: the output holds a Secret value", format)
					}
				}
				if format != "json" {
					continue
				}
				var rep migrate.Report
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatal(err)
				}
				if rep.Summary.ExitCode != tt.wantExit {
					t.Errorf("summary.exitCode = %d, want %d", rep.Summary.ExitCode, tt.wantExit)
				}
				for _, want := range tt.wantBreaks {
					if !containsPrefix(rep.Summary.Breaks, want) {
						t.Errorf("summary.breaks = %q, want one starting %q", rep.Summary.Breaks, want)
					}
				}
			}
		})
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// fixtureSecretValues returns the values of every Secret in dir's
// manifests, which the report must never print.
func fixtureSecretValues(t *testing.T, dir string) []string {
	t.Helper()
	in := migrate.NewInputs("", "argocd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := in.AddManifests(data); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, s := range in.Secrets {
		for _, v := range s {
			out = append(out, string(v))
		}
	}
	return out
}

func TestMigrateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "no such folder", args: []string{"--from-dir", "testdata/migrate/no-such-folder"}},
		{name: "bad output", args: []string{"--from-dir", "testdata/migrate/clean", "-o", "yaml"}},
		{name: "unknown flag", args: []string{"--from-directory", "x"}},
		{name: "config that does not load", args: []string{"--from-dir", "testdata/migrate/clean", "--config", "testdata/migrate/no-such-config.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := execute(t, append([]string{"migrate"}, tt.args...)...)
			if got := exitCode(err); got != migrateExitUsage {
				t.Errorf("exit code %d (%v), want %d", got, err, migrateExitUsage)
			}
		})
	}
}

// docs/migration.md shows the mixed installation's report; it must be the
// golden file's text.
func TestMigrateDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migration.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/migrate/mixed.txt")
	if err != nil {
		t.Fatal(err)
	}
	const start = "<!-- migrate-example: cmd/crowsnest/testdata/migrate/mixed.txt -->\n```text\n"
	_, rest, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("docs/migration.md has no %q block", strings.TrimSpace(start))
	}
	got, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("docs/migration.md: the example block does not end")
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("docs/migration.md's example is not the golden report (-golden +docs); copy testdata/migrate/mixed.txt into it:\n%s", diff)
	}
}

// --config replaces the proposed config: one that does not read
// argocd-notifications-cm stops the notifications it holds, and the
// install passes the file as it is.
func TestMigrateWithConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "crowsnest.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "migrate", "--from-dir", "testdata/migrate/clean", "--config", cfg, "-o", "json")
	if got := exitCode(err); got != 1 {
		t.Fatalf("exit code %d (%v), want 1", got, err)
	}
	var rep migrate.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !containsPrefix(rep.Summary.Breaks, "--config "+cfg+": notifications.argocdConfigMap is not set") {
		t.Errorf("breaks = %q, want the missing argocdConfigMap named", rep.Summary.Breaks)
	}
	if rep.Install.Values != "" || !strings.HasSuffix(rep.Install.Commands[0], " --set-file config="+cfg) {
		t.Errorf("install = %+v, want the config file passed as it is", rep.Install)
	}
}
