package policy

import (
	"errors"
	"regexp/syntax"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// problems lists the "field: message" of every *Error in err.
func problems(t *testing.T, err error) []string {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var out []string
	for _, e := range errs {
		var pe *Error
		if !errors.As(e, &pe) {
			t.Fatalf("error %v is not a *policy.Error", e)
		}
		if pe.Image != "nginx" {
			t.Errorf("error %v names image %q, want nginx", e, pe.Image)
		}
		out = append(out, pe.Field+": "+pe.Msg)
	}
	return out
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"valid", Spec{Constraint: "~1.2", AllowTags: `regexp:^v`, IgnoreTags: []string{"*-rc*"}}, nil},
		{"unknown strategy", Spec{Strategy: "newest"}, []string{`strategy: unknown strategy "newest": want semver, newest-build, digest or alphabetical`}},
		{"bad constraint", Spec{Constraint: ">=1.0 <<2"}, []string{`constraint: invalid semver range ">=1.0 <<2"`}},
		{"constraint without semver order", Spec{Strategy: "alphabetical", Constraint: "~1"}, []string{`constraint: "~1": a version range needs semver ordering, not lexical`}},
		{"constraint with numeric extract", Spec{Extract: `(?P<version>\d+)`, ExtractOrder: "numeric", Constraint: ">1"}, []string{`constraint: ">1": a version range needs semver ordering, not numeric`}},
		{"constraint with newest-build", Spec{Strategy: "newest-build", Constraint: "~1"}, []string{`constraint: "~1": a version range needs semver ordering, not newest-build`}},
		{"allow-tags bad regexp", Spec{AllowTags: "regexp:("}, []string{`allow-tags: invalid regexp "("`}},
		{"allow-tags without prefix", Spec{AllowTags: "^1"}, []string{`allow-tags: "^1": want "any" or "regexp:<re>"`}},
		{"ignore-tags", Spec{IgnoreTags: []string{"", "regexp:[", "[", "ok*"}}, []string{
			"ignore-tags[0]: empty pattern",
			`ignore-tags[1]: invalid regexp "["`,
			`ignore-tags[2]: invalid glob "["`,
		}},
		{"extract bad regexp", Spec{Extract: "("}, []string{`extract: invalid regexp "("`}},
		{"extract without version group", Spec{Extract: `b-(\d+)`}, []string{`extract: regexp "b-(\\d+)" has no named group (?P<version>...)`}},
		{"extract with newest-build", Spec{Strategy: "newest-build", Extract: `(?P<version>.*)`}, []string{"extract: the newest-build strategy does not order tags, so it cannot use extract"}},
		{"extract-order unknown", Spec{Extract: `(?P<version>.*)`, ExtractOrder: "natural"}, []string{`extract-order: unknown order "natural": want semver, numeric or lexical`}},
		{"extract-order without extract", Spec{ExtractOrder: "numeric"}, []string{"extract-order: needs extract"}},
		{"extract-order with digest", Spec{Strategy: "digest", Constraint: "latest", ExtractOrder: "numeric"}, []string{"extract-order: the digest strategy does not order tags"}},
		{"platforms", Spec{Platforms: []string{"linux/amd64", "linux", "linux//v7", "a/b/c/d", "linux/ arm"}}, []string{
			`platforms[1]: "linux": want os/arch[/variant]`,
			`platforms[2]: "linux//v7": want os/arch[/variant]`,
			`platforms[3]: "a/b/c/d": want os/arch[/variant]`,
			`platforms[4]: "linux/ arm": want os/arch[/variant]`,
		}},
		{"digest without tag", Spec{Strategy: "digest"}, []string{"constraint: the digest strategy needs the tag to track"}},
		{"digest with bad tag", Spec{Strategy: "digest", Constraint: "~1.2"}, []string{`constraint: "~1.2" is not a valid tag to track`}},
		{"digest tag filtered out", Spec{Strategy: "digest", Constraint: "latest", IgnoreTags: []string{"lat*"}}, []string{`constraint: the tracked tag "latest" is ignored by ignore-tags`}},
		{"every problem at once", Spec{Strategy: "x", AllowTags: "regexp:(", Extract: "(", Platforms: []string{"x"}}, []string{
			`strategy: unknown strategy "x": want semver, newest-build, digest or alphabetical`,
			`allow-tags: invalid regexp "("`,
			`extract: invalid regexp "("`,
			`platforms[0]: "x": want os/arch[/variant]`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile("nginx", tc.spec)
			if diff := cmp.Diff(tc.want, problems(t, err)); diff != "" {
				t.Errorf("Compile problems (-want +got):\n%s", diff)
			}
			if (p == nil) != (err != nil) {
				t.Errorf("Compile returned policy %v with error %v", p, err)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Compile("nginx", Spec{AllowTags: "regexp:("})
	want := "image \"nginx\": allow-tags: invalid regexp \"(\": error parsing regexp: missing closing ): `(`"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error message (-want +got):\n%s", diff)
	}
	var serr *syntax.Error
	if !errors.As(err, &serr) {
		t.Errorf("error %v does not wrap the regexp error", err)
	}
}

func TestCompileNormalizes(t *testing.T) {
	tests := []struct {
		name          string
		spec          Spec
		want          Spec
		wantStrategy  Strategy
		wantPlatforms []Platform
		wantMeta      bool
	}{{
		name:         "defaults",
		want:         Spec{Strategy: "semver"},
		wantStrategy: StrategySemver,
	}, {
		name:          "aliases, any, platforms lower-cased and deduplicated",
		spec:          Spec{Strategy: "Latest", AllowTags: "any", Platforms: []string{"Linux/ARM64", "linux/arm64", "linux/arm/v7"}},
		want:          Spec{Strategy: "newest-build", Platforms: []string{"linux/arm64", "linux/arm/v7"}},
		wantStrategy:  StrategyNewestBuild,
		wantPlatforms: []Platform{arm64, {OS: "linux", Architecture: "arm", Variant: "v7"}},
		wantMeta:      true,
	}, {
		name:         "extract order defaults to the strategy's",
		spec:         Spec{Strategy: "name", Extract: `(?P<version>.+)`},
		want:         Spec{Strategy: "alphabetical", Extract: `(?P<version>.+)`, ExtractOrder: "lexical"},
		wantStrategy: StrategyAlphabetical,
	}, {
		name:         "digest",
		spec:         Spec{Strategy: "digest", Constraint: "main"},
		want:         Spec{Strategy: "digest", Constraint: "main"},
		wantStrategy: StrategyDigest,
		wantMeta:     true,
	}, {
		name:          "platforms need metadata for every strategy",
		spec:          Spec{Constraint: "^1", Platforms: []string{"linux/amd64"}},
		want:          Spec{Strategy: "semver", Constraint: "^1", Platforms: []string{"linux/amd64"}},
		wantStrategy:  StrategySemver,
		wantPlatforms: []Platform{amd64},
		wantMeta:      true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.spec)
			if diff := cmp.Diff(tc.want, p.Spec()); diff != "" {
				t.Errorf("Spec() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStrategy, p.Strategy()); diff != "" {
				t.Errorf("Strategy() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPlatforms, p.Platforms()); diff != "" {
				t.Errorf("Platforms() (-want +got):\n%s", diff)
			}
			if got := p.NeedsMetadata(); got != tc.wantMeta {
				t.Errorf("NeedsMetadata() = %v, want %v", got, tc.wantMeta)
			}
			// Compiling the normalized spec gives the same policy.
			if diff := cmp.Diff(p.Spec(), mustCompile(t, p.Spec()).Spec()); diff != "" {
				t.Errorf("Spec() does not round-trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePlatform(t *testing.T) {
	tests := []struct {
		in      string
		want    Platform
		wantErr bool
	}{
		{in: "linux/amd64", want: amd64},
		{in: "linux/arm64/v8", want: arm64v8},
		{in: "Windows/AMD64", want: Platform{OS: "windows", Architecture: "amd64"}},
		{in: "linux", wantErr: true},
		{in: "/amd64", wantErr: true},
		{in: "linux/amd64/", wantErr: true},
		{in: "linux/arm/v7/x", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePlatform(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePlatform(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePlatform(%q) (-want +got):\n%s", tc.in, diff)
			}
			if err != nil {
				return
			}
			again, err := ParsePlatform(got.String())
			if err != nil || again != got {
				t.Errorf("ParsePlatform(%q.String()) = %v, %v; want %v", got, again, err, got)
			}
		})
	}
}
