package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// registriesConfig is a crowsnest config whose registries list makes the
// test registry the default (names like nginx, with namespace ns) and
// gives its team-a and team-b paths their own credentials.
func registriesConfig(host, ns string) string {
	return fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
registries:
  pollInterval: 5s
  list:
    - {name: default, prefix: %[1]s, default: true, defaultNamespace: %[2]s, credentials: 'env:CN_E2E_ADMIN'}
    - {name: team-a, prefix: %[1]s/team-a, credentials: 'env:CN_E2E_TEAM_A'}
    - {name: team-b, prefix: %[1]s/team-b, credentials: 'env:CN_E2E_TEAM_B'}
`, host, ns)
}

// prefixRegistry starts a registry where team-a/ and team-b/ each take
// their own robot and everything else the admin, and sets the variables
// registriesConfig's credentials name.
func prefixRegistry(t *testing.T) *testreg.OCI {
	t.Helper()
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "admin", Password: "admin-pw",
		RepoCredentials: map[string]testreg.Credentials{
			"team-a": {Username: "robot-a", Password: "team-a-pw"},
			"team-b": {Username: "robot-b", Password: "team-b-pw"},
		}})
	t.Setenv("CN_E2E_ADMIN", "admin:admin-pw")
	t.Setenv("CN_E2E_TEAM_A", "robot-a:team-a-pw")
	t.Setenv("CN_E2E_TEAM_B", "robot-b:team-b-pw")
	return reg
}

// The daemon applies the registries list per image: "nginx" in an
// annotation and in the Application's status is the default registry's
// library/nginx, and two images on one registry host under different path
// prefixes are listed with their own entry's credentials (the registry
// refuses any other). What is written back keeps the names as written. A
// reload that changes the default namespace moves "nginx" to the new
// repository at once.
func TestE2ERegistriesDefaultAndPathPrefixes(t *testing.T) {
	reg := prefixRegistry(t)
	pushTags(t, reg, "library/nginx", "1.0.0", "1.1.0")
	teamA := pushTags(t, reg, "team-a/app", "1.0.0", "1.2.0")
	teamB := pushTags(t, reg, "team-b/app", "1.0.0", "1.3.0")
	kubeconfig, ns, dir := e2eCluster(t, "e2e-regs")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, registriesConfig(reg.Host(), "library"))
	createApp(t, ns, annotatedApp("regs", fmt.Sprintf(
		"    argocd-image-updater.argoproj.io/image-list: n=nginx:~1,a=%s:~1,b=%s:~1", teamA, teamB)),
		"nginx:1.0.0", teamA+":1.0.0", teamB+":1.0.0")
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--log-format", "json")

	waitImages := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		waitFor(t, fmt.Sprintf("the images to be %v", want), func() bool {
			got := kustomizeImages(t, ns, "regs")
			slices.Sort(got)
			return slices.Equal(got, want)
		})
	}
	waitImages("nginx:1.1.0", teamA+":1.2.0", teamB+":1.3.0")
	if n := reg.Count("list", "/v2/library/nginx/"); n == 0 {
		t.Error("the default registry's library/nginx was never listed")
	}

	pushTags(t, reg, "mirror/nginx", "1.5.0")
	writeFile(t, cfgPath, registriesConfig(reg.Host(), "mirror"))
	d.waitLog(t, `"msg":"config reloaded"`)
	waitImages("nginx:1.5.0", teamA+":1.2.0", teamB+":1.3.0")
	for _, l := range d.lines() {
		for _, pw := range []string{"admin-pw", "team-a-pw", "team-b-pw"} {
			if strings.Contains(l, pw) {
				t.Fatalf("a registry password appears in the log: %s", l)
			}
		}
	}
}

// `crowsnest test` reads a name without a registry as the daemon does,
// and lists path-prefixed repositories with their own credentials.
func TestTestCommandRegistriesE2E(t *testing.T) {
	reg := prefixRegistry(t)
	pushTags(t, reg, "library/nginx", "1.0.0", "1.1.0")
	teamA := pushTags(t, reg, "team-a/app", "1.2.0")
	teamB := pushTags(t, reg, "team-b/app", "1.3.0")
	cfgPath := filepath.Join(t.TempDir(), "crowsnest.yaml")
	writeFile(t, cfgPath, registriesConfig(reg.Host(), "library"))

	out, errOut, code := runTest(t, nil, "nginx:1.0.0", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "image:    "+reg.Host()+"/library/nginx\n") ||
		!strings.Contains(out, "selected: 1.1.0 (update from 1.0.0)") {
		t.Errorf("nginx: exit %d, want the default registry's library/nginx and 1.1.0:\n%s\n%s", code, out, errOut)
	}
	for image, want := range map[string]string{teamA: "selected: 1.2.0", teamB: "selected: 1.3.0"} {
		out, errOut, code := runTest(t, nil, image, "--config", cfgPath)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, want %q:\n%s\n%s", image, code, want, out, errOut)
		}
	}
	// --credentials replaces the entry's credentials for this image only.
	_, errOut, code = runTest(t, nil, teamB, "--config", cfgPath, "--credentials", "env:CN_E2E_TEAM_A")
	if code == 0 || !strings.Contains(errOut, "UNAUTHORIZED") {
		t.Errorf("team-b with team-a's credentials: exit %d, want UNAUTHORIZED:\n%s", code, errOut)
	}
}
