package giteaenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// pinnedVersion is the Gitea release the tests run unless GITEA_VERSION
// says otherwise; hack/gitea/build.sh pins the same one.
const pinnedVersion = "v1.27.3"

// Environment variables the package reads.
const (
	// VersionEnv picks the Gitea release, as it does for hack/gitea/build.sh.
	VersionEnv = "GITEA_VERSION"
	// BinDirEnv names a folder holding a gitea binary and its options/ and
	// templates/ folders, used instead of the cached build.
	BinDirEnv = "CROWSNEST_GITEA_BIN"
	// BuildEnv set to 0 stops the package from building Gitea: a test
	// that needs it is skipped when it is not built (failed under CI).
	BuildEnv = "CROWSNEST_GITEA_BUILD"
)

// ErrNotBuilt is BinDir's error when Gitea is not built and BuildEnv says
// not to build it.
var ErrNotBuilt = errors.New("gitea is not built")

// Version is the Gitea release the tests run: GITEA_VERSION from the
// environment, else the pinned one.
func Version() string {
	if v := os.Getenv(VersionEnv); v != "" {
		return v
	}
	return pinnedVersion
}

// BinDir builds (first run) or finds the cached Gitea of Version and
// returns its folder. Under BuildEnv=0 it only looks, and returns an error
// wrapping ErrNotBuilt when there is nothing to find.
func BinDir() (string, error) {
	binOnce.Do(func() { binDir, binErr = findBinDir() })
	return binDir, binErr
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func findBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		return "", err
	}
	args := []string{filepath.Join(root, "hack", "gitea", "build.sh")}
	noBuild := os.Getenv(BuildEnv) == "0"
	if noBuild {
		args = append(args, "--cached")
	}
	cmd := exec.Command("bash", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if noBuild && errors.As(err, &ee) && ee.ExitCode() == 3 {
			return "", fmt.Errorf("%w and %s=0 says not to build it (%s)", ErrNotBuilt, BuildEnv, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("hack/gitea/build.sh: %w\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	// The cache folder is named by the version it holds.
	if !strings.HasPrefix(filepath.Base(dir), Version()+"-") {
		return "", fmt.Errorf("hack/gitea/build.sh built %s, not Gitea %s", dir, Version())
	}
	return dir, nil
}

// inCI reports whether the tests run in CI (CI=true), where a Gitea that
// is not built fails the tests that need it instead of skipping them.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}
