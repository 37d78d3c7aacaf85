package policy

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
)

// checkParse holds parseVersion to semver.NewVersion's answer for s.
func checkParse(t *testing.T, s string) {
	t.Helper()
	got, ok := parseVersion(s)
	lib, err := semver.NewVersion(s)
	if ok != (err == nil) {
		t.Fatalf("parseVersion(%q) ok = %v, semver.NewVersion error = %v", s, ok, err)
	}
	if !ok {
		return
	}
	want := version{major: lib.Major(), minor: lib.Minor(), patch: lib.Patch(), pre: lib.Prerelease(), meta: lib.Metadata()}
	_, err = semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	want.strict = err == nil
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(version{})); diff != "" {
		t.Fatalf("parseVersion(%q) (-want +got):\n%s", s, diff)
	}
	// The library's own Version, as constraints see it, is the same.
	sv := got.semver(s)
	libv := version{major: sv.Major(), minor: sv.Minor(), patch: sv.Patch(), pre: sv.Prerelease(), meta: sv.Metadata(), strict: got.strict}
	if diff := cmp.Diff(got, libv, cmp.AllowUnexported(version{})); diff != "" {
		t.Fatalf("semver() of %q (-parsed +built):\n%s", s, diff)
	}
}

// checkCompare holds version.compare to (*semver.Version).Compare.
func checkCompare(t *testing.T, a, b string) {
	t.Helper()
	va, okA := parseVersion(a)
	vb, okB := parseVersion(b)
	if !okA || !okB {
		return
	}
	want := semver.MustParse(a).Compare(semver.MustParse(b))
	if got := va.compare(&vb); got != want {
		t.Fatalf("compare(%q, %q) = %d, semver says %d", a, b, got, want)
	}
}

var versionSeeds = []string{
	"1", "1.2", "1.2.3", "v1.2.3", "01.002.0003", "1.2.3-rc.1", "1.2.3-rc.1+build.5", "1.2.3+meta",
	"1.2.3-0", "1.2.3-01", "1.2.3-a.01", "1.2.3-a..b", "1.2.3-", "1.2.3+", "1.2.3-a+", "1.2.3+a+b",
	"1.2.3.4", "1.", ".1", "v", "", "vv1", "V1", "1.2.3-alpha-beta", "1.2.3--", "1.2.3-a_b",
	"18446744073709551615", "18446744073709551616", "1.2.3-18446744073709551616", "1.2.3-alpha.10",
	"1.2.3-alpha.9", "1.2.3-alpha", "1.2.3-alpha.beta", "1.2.3-1", "1.2.3-A", "1.2.3-a", "1.0.0-x.7.z.92",
	"0000000000000000000001.0", " 1.0", "1.0 ", "1.0-é",
}

func TestParseVersionMatchesLibrary(t *testing.T) {
	for _, s := range versionSeeds {
		t.Run(s, func(t *testing.T) { checkParse(t, s) })
	}
}

func TestCompareMatchesLibrary(t *testing.T) {
	for _, a := range versionSeeds {
		for _, b := range versionSeeds {
			checkCompare(t, a, b)
		}
	}
}

func TestVersionString(t *testing.T) {
	tests := map[string]string{"v1": "1.0.0", "01.2": "1.2.0", "1.2.3-rc.1+b.2": "1.2.3-rc.1+b.2"}
	for in, want := range tests {
		v, ok := parseVersion(in)
		if !ok {
			t.Fatalf("parseVersion(%q) failed", in)
		}
		if diff := cmp.Diff(want, v.String()); diff != "" {
			t.Errorf("String() of %q (-want +got):\n%s", in, diff)
		}
	}
}

func TestCompareNumeric(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"10", "9", 1},
		{"9", "10", -1},
		{"007", "7", 0},
		{"0", "000", 0},
		{"123456789012345678901234567890", "123456789012345678901234567891", -1},
		{"99999999999999999999", "100000000000000000000", -1},
	}
	for _, tc := range tests {
		if got := compareNumeric(tc.a, tc.b); got != tc.want {
			t.Errorf("compareNumeric(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for i, s := range versionSeeds {
		f.Add(s, versionSeeds[(i+1)%len(versionSeeds)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkParse(t, a)
		checkParse(t, b)
		checkCompare(t, a, b)
	})
}
