package watcher_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// logCount counts s in what was logged.
func logCount(logs *testenv.LogBuffer, s string) int { return strings.Count(logs.String(), s) }

// appDoc is the Application document "web" with the given lines under
// metadata (indented by two spaces) and spec.source.
func appDoc(metadata, source string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n" + metadata +
		"spec:\n  project: default\n  source: " + source + "\n  destination: {server: https://kubernetes.default.svc, namespace: web}\n"
}

const (
	goodSource = "{repoURL: https://git.example/apps.git, path: web}"
	imageList  = "    argocd-image-updater.argoproj.io/image-list: web=registry.example/web\n"
)

// Every Application that could not be read, or not wholly, is a problem
// naming the file and what is wrong; only the broken part is skipped.
// Other kinds and other groups' objects are no problem.
func TestFileSourceProblems(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// link and fifo are made in the folder besides files.
		link, fifo string
		// wantApps maps each Application read to its annotations.
		wantApps map[string]map[string]string
		// wantProblems are "file: reason" prefixes, in path order.
		wantProblems []string
	}{{
		name:     "annotation value that is not a string",
		files:    map[string]string{"web.yaml": appDoc("  annotations:\n"+imageList+"    argocd-image-updater.argoproj.io/force-update: true\n    replicas: 3\n", goodSource)},
		wantApps: map[string]map[string]string{"argocd/web": {"argocd-image-updater.argoproj.io/image-list": "web=registry.example/web"}},
		wantProblems: []string{
			`web.yaml: document 1: Application "web": annotation "argocd-image-updater.argoproj.io/force-update" is a bool, not a string; that annotation is ignored (quote the value: "true")`,
			`web.yaml: document 1: Application "web": annotation "replicas" is a number, not a string; that annotation is ignored (quote the value: "3")`,
		},
	}, {
		name:         "labels that are not a map",
		files:        map[string]string{"web.yaml": appDoc("  labels: [a, b]\n  annotations:\n"+imageList, goodSource)},
		wantApps:     map[string]map[string]string{"argocd/web": {"argocd-image-updater.argoproj.io/image-list": "web=registry.example/web"}},
		wantProblems: []string{`web.yaml: document 1: Application "web": metadata.labels is a list, not a map; every label of it is ignored`},
	}, {
		// The apiserver stores a null annotation as an empty string.
		name:     "null annotation is empty",
		files:    map[string]string{"web.yaml": appDoc("  annotations:\n"+imageList+"    note:\n", goodSource)},
		wantApps: map[string]map[string]string{"argocd/web": {"argocd-image-updater.argoproj.io/image-list": "web=registry.example/web", "note": ""}},
	}, {
		name:         "field of the wrong type",
		files:        map[string]string{"web.yaml": appDoc("", "a string")},
		wantProblems: []string{"web.yaml: reading Application argocd/web: spec.source is a string, not an object; the Application is skipped"},
	}, {
		name: "YAML that does not parse",
		files: map[string]string{
			"broken.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: [broken\n",
			"web.yaml":    appDoc("", goodSource),
		},
		wantApps:     map[string]map[string]string{"argocd/web": nil},
		wantProblems: []string{"broken.yaml: file skipped: document 1: error converting YAML to JSON"},
	}, {
		// A Helm template or values file beside the Applications.
		name: "YAML that does not parse and names no Argo CD object",
		files: map[string]string{
			"values.yaml": "image:\n  tag: {{ .Values.tag }\n",
			"web.yaml":    appDoc("", goodSource),
		},
		wantApps: map[string]map[string]string{"argocd/web": nil},
	}, {
		name:         "document without a name",
		files:        map[string]string{"apps.yaml": appDoc("", goodSource) + "---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {namespace: argocd}\n"},
		wantProblems: []string{"apps.yaml: file skipped: document 2: Application without metadata.name"},
	}, {
		name:         "name that is not a string",
		files:        map[string]string{"apps.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: 42}\n"},
		wantProblems: []string{"apps.yaml: file skipped: document 1: Application with metadata.name a number (42), not a string"},
	}, {
		name:         "Argo CD kind without apiVersion",
		files:        map[string]string{"web.yaml": "kind: Application\nmetadata: {name: web}\n"},
		wantProblems: []string{"web.yaml: document 1: Application without apiVersion is ignored"},
	}, {
		name:         "file too large",
		files:        map[string]string{"big.yaml": "# " + strings.Repeat("x", 8<<20) + "\n"},
		wantProblems: []string{"big.yaml: file skipped: file larger than 8388608 bytes"},
	}, {
		name:         "link to nowhere",
		link:         "gone.yaml",
		wantProblems: []string{"gone.yaml: file skipped: stat "},
	}, {
		// Reading it would block the folder's every read.
		name:         "named pipe",
		fifo:         "pipe.yaml",
		files:        map[string]string{"web.yaml": appDoc("", goodSource)},
		wantApps:     map[string]map[string]string{"argocd/web": nil},
		wantProblems: []string{"pipe.yaml: file skipped: not a regular file"},
	}, {
		name: "defined in two files",
		files: map[string]string{
			"a.yaml": appDoc("", "{repoURL: https://git.example/a.git}"),
			"b.yaml": appDoc("  annotations:\n"+imageList, goodSource),
		},
		wantApps:     map[string]map[string]string{"argocd/web": {"argocd-image-updater.argoproj.io/image-list": "web=registry.example/web"}},
		wantProblems: []string{"a.yaml: Application argocd/web is ignored here: b.yaml, later in name order, defines it too and wins"},
	}, {
		name:         "defined twice in one file",
		files:        map[string]string{"a.yaml": appDoc("", goodSource) + "---\n" + appDoc("  annotations:\n"+imageList, goodSource)},
		wantApps:     map[string]map[string]string{"argocd/web": {"argocd-image-updater.argoproj.io/image-list": "web=registry.example/web"}},
		wantProblems: []string{"a.yaml: Application argocd/web is ignored here: a later document of this file defines it too and wins"},
	}, {
		// What `kubectl get applications -o yaml` prints.
		name: "List of Applications",
		files: map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: web, namespace: team}, spec: {source: " + goodSource + "}}\n" +
			"- {apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: api, namespace: team}, spec: {source: " + goodSource + "}}\n"},
		wantApps: map[string]map[string]string{"team/web": nil, "team/api": nil},
	}, {
		name: "other kinds",
		files: map[string]string{"other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1}\n---\n" +
			"apiVersion: app.k8s.io/v1beta1\nkind: Application\nmetadata: {name: sig-apps, annotations: {a: 1}}\n---\n" +
			"apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: set}\n---\n" +
			"apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default}\n"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.link != "" {
				if err := os.Symlink("nowhere.yaml", filepath.Join(dir, tt.link)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fifo != "" {
				if err := syscall.Mkfifo(filepath.Join(dir, tt.fifo), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			src := &watcher.FileSource{Dir: dir, Log: slog.New(slog.DiscardHandler)}
			rec := newRecorder()
			startSource(t, src, rec)

			got := map[string]map[string]string{}
			for _, ev := range rec.appEvents() {
				got[ev.Key()] = ev.New.Annotations
			}
			if diff := cmp.Diff(tt.wantApps, got, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(watcher.App{})); diff != "" {
				t.Errorf("applications read (-want +got):\n%s", diff)
			}
			checkProblems(t, dir, tt.wantProblems, src.Problems())
		})
	}
}

// checkProblems compares problems, as "file: reason" with the file
// relative to dir, with want, where each is a prefix of its problem.
func checkProblems(t *testing.T, dir string, want []string, problems []watcher.FileProblem) {
	t.Helper()
	got := make([]string, 0, len(problems))
	for _, p := range problems {
		rel, err := filepath.Rel(dir, p.Path)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rel+": "+strings.ReplaceAll(p.Reason, dir+string(filepath.Separator), ""))
	}
	match := len(got) == len(want)
	for i := 0; match && i < len(got); i++ {
		match = strings.HasPrefix(got[i], want[i])
	}
	if !match {
		t.Errorf("problems:\n%s\nwant (prefixes):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// In a long-running process a problem is logged once when it appears, a
// broken edit keeps the Application as last read, and the fixed file
// clears the problem.
func TestFileSourceProblemClears(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write := func(content string) {
		t.Helper()
		// Write then rename, so no read sees a half-written file.
		if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	good := appDoc("  annotations:\n"+imageList, goodSource)
	write(good)
	var logs testenv.LogBuffer
	src := &watcher.FileSource{Dir: dir, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	rec := newRecorder()
	startSource(t, src, rec)
	rec.waitApp(t, isEvent(watcher.Added, "argocd/web"))
	if p := src.Problems(); len(p) != 0 {
		t.Fatalf("problems in a good folder: %v", p)
	}

	// A file that no longer parses, whatever it says, keeps the
	// Application as last read.
	write("{{ .Values.broken }}: [\n")
	testwait.For(t, "the unparsable file to be a problem", func() bool {
		p := src.Problems()
		return len(p) == 1 && strings.HasPrefix(p[0].Reason, "file skipped: document 1: ")
	})
	if _, ok := src.Application("argocd/web"); !ok {
		t.Error("a broken edit removed the Application")
	}
	// A field of the wrong type: the same.
	write(appDoc("  annotations:\n"+imageList, "a string"))
	testwait.For(t, "the wrong field to be a problem", func() bool {
		p := src.Problems()
		return len(p) == 1 && strings.Contains(p[0].Reason, "spec.source")
	})
	if _, ok := src.Application("argocd/web"); !ok {
		t.Error("a broken edit removed the Application")
	}
	// An annotation that is not a string: the rest of the edit is read.
	write(appDoc("  annotations:\n"+imageList+"    argocd-image-updater.argoproj.io/force-update: true\n", "{repoURL: https://git.example/moved.git, path: web}"))
	ev := rec.waitApp(t, func(ev watcher.AppEvent) bool {
		return ev.Type == watcher.Updated && ev.New.Sources[0].RepoURL == "https://git.example/moved.git"
	})
	if _, ok := ev.New.Annotations["argocd-image-updater.argoproj.io/image-list"]; !ok {
		t.Errorf("the good annotation was lost: %v", ev.New.Annotations)
	}
	testwait.For(t, "the annotation problem", func() bool {
		p := src.Problems()
		return len(p) == 1 && strings.Contains(p[0].Reason, "force-update")
	})
	// Quoted, it is read and the problem is gone.
	write(appDoc("  annotations:\n"+imageList+"    argocd-image-updater.argoproj.io/force-update: \"true\"\n", goodSource))
	rec.waitApp(t, func(ev watcher.AppEvent) bool {
		return ev.Type == watcher.Updated && ev.New.Annotations["argocd-image-updater.argoproj.io/force-update"] == "true"
	})
	testwait.For(t, "the problems to clear", func() bool { return len(src.Problems()) == 0 })
	for _, deleted := range rec.eventsFor("argocd/web") {
		if deleted.Type == watcher.Deleted {
			t.Error("a broken edit deleted the Application")
		}
	}

	// Each problem was logged once however often the folder was read,
	// and each was logged resolved.
	testwait.For(t, "the resolved log lines", func() bool { return logCount(&logs, "application file problem resolved") >= 3 })
	if n, m := logCount(&logs, `msg="application file problem" `), logCount(&logs, "application file problem resolved"); n != 3 || m != 3 {
		t.Errorf("%d problem and %d resolved log lines, want 3 of each:\n%s", n, m, logs.String())
	}
}
