package journal_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// The file journal survives its process, replaces its file whole, and
// starts over from a file it cannot read rather than failing every write.
func TestFileWriteJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "intents.json")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := journal.Intent{Method: "git", At: at, Changes: []journal.Change{{Image: "team/web", From: "1.0.0", To: "1.1.0"}}}

	j := &journal.File{Path: path}
	if all, err := j.LoadAll(t.Context()); err != nil || len(all) != 0 {
		t.Fatalf("LoadAll of a missing file: %v, %v; want an empty journal", all, err)
	}
	for _, key := range []string{"shop/web", "shop/api"} {
		if err := j.Save(t.Context(), key, &in); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Save(t.Context(), "shop/api", nil); err != nil {
		t.Fatal(err)
	}
	all, err := (&journal.File{Path: path}).LoadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]journal.Intent{"shop/web": in}, all); diff != "" {
		t.Errorf("journal read by the next process (-want +got):\n%s", diff)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "state", "*.json.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := &journal.File{Path: path}
	if all, err := broken.LoadAll(t.Context()); err != nil || len(all) != 0 {
		t.Fatalf("LoadAll of a broken file: %v, %v; want an empty journal", all, err)
	}
	if err := broken.Save(t.Context(), "shop/web", &in); err != nil {
		t.Fatal(err)
	}
	if all, err := (&journal.File{Path: path}).LoadAll(t.Context()); err != nil || len(all) != 1 {
		t.Errorf("journal after a save over a broken file: %v, %v; want shop/web", all, err)
	}
	if a, b := journal.FileName(dir, "apps"), journal.FileName(dir, "other"); a == b || filepath.Dir(a) != dir {
		t.Errorf("journal files %q and %q: want one per folder, in %s", a, b, dir)
	}
}
