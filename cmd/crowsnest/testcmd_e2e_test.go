package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/testcmd"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// runTest runs `crowsnest test ARGS...` and returns stdout, stderr and the
// exit code.
func runTest(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, append([]string{"test"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestTestCommandE2E(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	push := func(tag string, hours int, platform string) {
		reg.Push(t, "team/app:"+tag, testreg.Image(t, base.Add(time.Duration(hours)*time.Hour), platform))
	}
	push("1.0.0", 0, "linux/amd64")
	push("1.1.0", 1, "linux/amd64")
	push("1.2.0-rc.1", 2, "linux/amd64")
	push("2.0.0", 3, "linux/amd64")
	push("v1.1.5", 4, "linux/arm64") // newest 1.x, but only for arm64
	push("build-9", 5, "linux/amd64")
	push("build-10", 6, "linux/amd64")
	push("nightly", 7, "linux/amd64")
	image := reg.Host() + "/team/app"

	t.Run("semver with a constraint and a current tag", func(t *testing.T) {
		out, errOut, code := runTest(t, nil, image+":1.0.0", "--constraint", "^1")
		t.Logf("output:\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		for _, want := range []string{
			"current:  1.0.0", "strategy: semver", "tags:     8",
			"1.2.0-rc.1", "prerelease not named by the constraint",
			"2.0.0", "outside the constraint",
			"nightly", "not a semantic version",
			"selected: v1.1.5 (update from 1.0.0)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("a platform filter skips the winner for the next best", func(t *testing.T) {
		out, errOut, code := runTest(t, nil, image, "--semver-constraint", "1.x", "--platform", "linux/amd64", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		var rep testcmd.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
		if rep.Selected != "1.1.0" || rep.Digest == "" || rep.Tags != 8 {
			t.Errorf("report = %+v, want 1.1.0 with its digest from 8 tags", rep)
		}
		var skipped bool
		for _, c := range rep.Candidates {
			if c.Tag == "v1.1.5" && strings.Contains(string(c.Reason), "platform") {
				skipped = true
			}
		}
		if !skipped {
			t.Errorf("v1.1.5 not reported as skipped for its platform: %+v", rep.Candidates)
		}
	})

	t.Run("extract with numeric order", func(t *testing.T) {
		out, errOut, code := runTest(t, nil, image, "--strategy", "alphabetical", "--allow-tags", "regexp:^build-",
			"--extract", `build-(?P<version>\d+)`, "--extract-order", "numeric")
		if code != 0 || !strings.Contains(out, "selected: build-10\n") {
			t.Errorf("exit %d, want build-10 selected (10 > 9):\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("newest build", func(t *testing.T) {
		out, _, code := runTest(t, nil, image, "--update-strategy", "latest")
		if code != 0 || !strings.Contains(out, "selected: nightly\n") || !strings.Contains(out, "strategy: newest-build") {
			t.Errorf("exit %d, want nightly (newest created):\n%s", code, out)
		}
	})

	t.Run("digest pins the tracked tag", func(t *testing.T) {
		out, _, code := runTest(t, nil, image+":nightly", "--strategy", "digest")
		if code != 0 || !strings.Contains(out, "selected: nightly@sha256:") {
			t.Errorf("exit %d, want nightly@sha256:...:\n%s", code, out)
		}
	})

	t.Run("nothing qualifies exits non-zero", func(t *testing.T) {
		out, errOut, code := runTest(t, nil, image, "--constraint", ">=3")
		if code == 0 || !strings.Contains(out, "selected: none") || !strings.Contains(errOut, "no tag qualifies") {
			t.Errorf("exit %d, want non-zero with 'selected: none':\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("a bad policy names the image and field", func(t *testing.T) {
		_, errOut, code := runTest(t, nil, image, "--constraint", ">>1", "--allow-tags", "regexp:(")
		if code == 0 {
			t.Fatal("a bad constraint and regexp were accepted")
		}
		for _, want := range []string{image, "constraint", "allow-tags"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("error lacks %q:\n%s", want, errOut)
			}
		}
	})

	t.Run("credentials from the environment", func(t *testing.T) {
		priv := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "robot", Password: "hunter2"})
		priv.Push(t, "team/app:1.0.0", testreg.Image(t, base, "linux/amd64"))
		img := priv.Host() + "/team/app"

		_, errOut, code := runTest(t, nil, img)
		if code == 0 || !strings.Contains(errOut, "UNAUTHORIZED") {
			t.Errorf("anonymous access: exit %d, want an UNAUTHORIZED error:\n%s", code, errOut)
		}
		out, errOut, code := runTest(t, []string{"REG_CREDS=robot:hunter2"}, img, "--credentials", "env:REG_CREDS")
		if code != 0 || !strings.Contains(out, "selected: 1.0.0") {
			t.Errorf("with credentials: exit %d:\n%s\n%s", code, out, errOut)
		}
		if strings.Contains(out+errOut, "hunter2") {
			t.Error("the password appears in the output")
		}
	})
}
