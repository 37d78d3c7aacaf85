package lint_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sleepOK marks a time.Sleep in a test that waits for nothing it then
// asserts on: a poll loop's interval, an injected fault's duration, a
// slow destination's answer.
const sleepOK = "// sleep-ok:"

// sleepsOwnedElsewhere lists test files whose sleeps are not marked yet
// because others were editing them when the check came in; each entry is
// a path from the module root. Remove an entry once its sleeps are marked.
var sleepsOwnedElsewhere = []string{}

// TestNoUnexplainedSleepsInTests fails for every time.Sleep in a test file
// of the module without a sleep-ok comment on its line: a fixed sleep
// standing in for "it did not happen" passes without checking anything
// on a slow machine, and one standing in for "it happened" fails there.
func TestNoUnexplainedSleepsInTests(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	err := walkGoFiles(root, func(path, rel string) error {
		if !strings.HasSuffix(path, "_test.go") || slices.Contains(sleepsOwnedElsewhere, rel) {
			return nil
		}
		lines, err := unexplainedSleeps(path)
		for _, n := range lines {
			found = append(found, rel+":"+n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: time.Sleep without %q: wait for what the test asserts (a poll, a counter, the next event in order), or say why the sleep is fine", f, sleepOK+" <why>")
	}
}

// unexplainedSleeps returns the numbers of the lines of a Go file that
// call time.Sleep without a sleep-ok comment.
func unexplainedSleeps(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		code, _, _ := strings.Cut(line, "//")
		if strings.Contains(code, "time."+"Sleep(") && !strings.Contains(line, sleepOK) {
			out = append(out, strconv.Itoa(n))
		}
	}
	return out, sc.Err()
}

// walkGoFiles calls fn with the path, and the path from root with '/', of
// every .go file below root, skipping hidden folders, testdata and vendor.
func walkGoFiles(root string, fn func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel))
	})
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
