package testenv

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TrackSources reads, from inside the test process, every Go file of the
// module and its go.mod and go.sum. `go test` replays a cached result when
// the test binary and the files the test opened are unchanged; a test that
// builds another binary (the crowsnest command, in a subprocess that the
// cache does not see) calls this first, so a change to that binary's
// sources alone runs the test again.
func TrackSources() error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			_, err := os.ReadFile(path)
			return err
		}
		return nil
	})
}

// ModuleRoot is the nearest directory above the working directory that
// holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory; run from the crowsnest module")
		}
		dir = parent
	}
}
