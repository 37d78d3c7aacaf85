package policy

import (
	"context"
	"errors"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
)

func FuzzCompile(f *testing.F) {
	seeds := []Spec{
		{},
		{Strategy: "semver", Constraint: "~1.2 || >=2.0.0-rc.1 <3", AllowTags: `regexp:^v?\d`, IgnoreTags: []string{"*-rc*"}},
		{Strategy: "digest", Constraint: "latest"},
		{Strategy: "name", Extract: `(?P<version>\d{8})`, ExtractOrder: "numeric"},
		{Constraint: ">=1.0 <<2", AllowTags: "regexp:(", IgnoreTags: []string{"[", "regexp:("}, Extract: `(\d+)`},
		{Strategy: "latest", Extract: `(?P<version>.*)`, ExtractOrder: "lexical"},
	}
	for i := range seeds {
		s := &seeds[i]
		f.Add(s.Strategy, s.Constraint, s.AllowTags, strings.Join(s.IgnoreTags, ","), s.Extract, s.ExtractOrder)
	}
	f.Fuzz(func(t *testing.T, strategy, constraint, allow, ignore, extract, order string) {
		spec := Spec{Strategy: strategy, Constraint: constraint, AllowTags: allow, Extract: extract, ExtractOrder: order}
		if ignore != "" {
			spec.IgnoreTags = strings.Split(ignore, ",")
		}
		p, err := Compile("img", spec)
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var pe *Error
				if !errors.As(e, &pe) || pe.Field == "" || pe.Image != "img" {
					t.Fatalf("Compile error %v is not a *policy.Error naming image and field", e)
				}
			}
			return
		}
		// A compiled policy's normalized spec compiles to itself.
		again, err := Compile("img", p.Spec())
		if err != nil {
			t.Fatalf("normalized spec %+v does not compile: %v", p.Spec(), err)
		}
		if diff := cmp.Diff(p.Spec(), again.Spec()); diff != "" {
			t.Fatalf("Spec() does not round-trip (-want +got):\n%s", diff)
		}
		if _, err := p.Explain(t.Context(), []string{constraint, "1.0.0", extract, "latest"}, fakeMetadata); err != nil && !errors.Is(err, ErrNoCandidate) {
			t.Fatalf("Explain: %v", err)
		}
	})
}

// fuzzSpecs are the policies FuzzSelect picks from.
var fuzzSpecs = []Spec{
	{},
	{Constraint: "~1.2 || >=2.0.0-rc.1 <3"},
	{Constraint: "^1", AllowTags: `regexp:^v?\d`, IgnoreTags: []string{"*-rc*", "regexp:9$"}},
	{Extract: `^(?P<version>\d+)-`, ExtractOrder: "numeric"},
	{Extract: `(?P<version>\d+\.\d+)`, Constraint: ">=1"},
	{Strategy: "alphabetical", IgnoreTags: []string{"latest"}},
	{Strategy: "newest-build", Platforms: []string{"linux/arm64"}},
	{Platforms: []string{"linux/amd64", "linux/arm64"}},
}

// fakeMetadata derives metadata from the tag's hash: created times that
// often tie, and one of three platform sets.
func fakeMetadata(_ context.Context, tag string) (Metadata, error) {
	h := fnv.New32a()
	h.Write([]byte(tag))
	sum := h.Sum32()
	md := Metadata{Digest: "sha256:" + tag, Created: t1.Add(time.Duration(sum%4) * time.Hour)}
	md.Platforms = [][]Platform{{amd64}, {arm64v8}, {amd64, arm64}}[sum/4%3]
	return md, nil
}

func FuzzSelect(f *testing.F) {
	f.Add(uint8(0), "1.0.0,v1.0.0,1.2,1.2.0-rc.1,latest,x")
	f.Add(uint8(1), "2.0.0-rc.2,2.0.0-rc.10,1.2.9,1.2.10,3.0.0")
	f.Add(uint8(2), "v1.0.9,1.0.8,1.1-rc1,1.5.0,v1.5.0")
	f.Add(uint8(3), "10-a,9-b,0010-c,x-1,99999999999999999999999-z")
	f.Add(uint8(4), "app-1.2,app-1.10,app-01.3,1.2,1.x")
	f.Add(uint8(5), "b,a,latest,B,")
	f.Add(uint8(6), "a,b,c,d,e,f")
	f.Add(uint8(7), "1.0,1.1,1.2,2.0")
	f.Fuzz(func(t *testing.T, which uint8, list string) {
		tags := strings.Split(list, ",")
		p := mustCompile(t, fuzzSpecs[int(which)%len(fuzzSpecs)])
		got, explainErr := p.Explain(t.Context(), tags, fakeMetadata)
		if explainErr != nil && !errors.Is(explainErr, ErrNoCandidate) {
			t.Fatalf("Explain: %v", explainErr)
		}
		if len(got.Candidates) != len(tags) {
			t.Fatalf("%d candidates for %d tags", len(got.Candidates), len(tags))
		}
		sel, err := p.Select(t.Context(), tags, fakeMetadata)
		if got.Tag != sel.Tag || (err == nil) != (explainErr == nil) {
			t.Fatalf("Select = %q, %v; Explain = %q, %v", sel.Tag, err, got.Tag, explainErr)
		}
		if err == nil {
			checkWinner(t, p, tags, got)
		}
		// Same account whatever the order of the tags.
		reversed := slices.Clone(tags)
		slices.Reverse(reversed)
		again, _ := p.Explain(t.Context(), reversed, fakeMetadata)
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("reversed input changes the result (-want +got):\n%s", diff)
		}
	})
}

// checkWinner checks the winner against the filters, the platforms and,
// for plain semver policies, against the library as an oracle.
func checkWinner(t *testing.T, p *Policy, tags []string, got Result) {
	t.Helper()
	if !slices.Contains(tags, got.Tag) || p.filter(got.Tag) != rcNone {
		t.Fatalf("winner %q is not a tag passing the filters", got.Tag)
	}
	if len(p.platforms) > 0 {
		md, _ := fakeMetadata(t.Context(), got.Tag)
		built := false
		for _, w := range p.platforms {
			for _, h := range md.Platforms {
				built = built || (w.OS == h.OS && w.Architecture == h.Architecture && (w.Variant == "" || w.Variant == h.Variant))
			}
		}
		if !built {
			t.Fatalf("winner %q is built for none of %v", got.Tag, p.platforms)
		}
	}
	if p.order != OrderSemver || p.extract != nil || len(p.platforms) > 0 {
		return
	}
	cs, _ := semver.NewConstraint(orDefault(p.spec.Constraint, "*"))
	win := semver.MustParse(got.Tag)
	for _, tag := range tags {
		v, err := semver.NewVersion(tag)
		if err != nil || p.filter(tag) != rcNone || !cs.Check(v) {
			continue
		}
		if c := v.Compare(win); c > 0 || c == 0 && tag > got.Tag {
			t.Fatalf("%q outranks the winner %q", tag, got.Tag)
		}
	}
}

// ociTag is the OCI distribution spec's tag grammar, written apart from
// validTag as an oracle.
var ociTag = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// FuzzSelectHostileTags lists tags a hostile or broken registry might
// return ("../x", newlines, YAML and JSON metacharacters, 1 KB names)
// among good ones, NUL-separated so any byte can be in a tag: whatever the
// policy, the winner is a valid OCI tag, and every invalid tag is skipped
// as such.
func FuzzSelectHostileTags(f *testing.F) {
	long := strings.Repeat("9", 1024)
	for i, list := range []string{
		"1.0.0\x00../x\x002.0.0\nimage: evil\x00zzz\"}",
		"v1\x00" + long + "\x00" + "1." + long + "\x00a: b\x00{x}\x00[y]",
		"latest\x00-1\x00.hidden\x00_ok\x00x/y\x00x\\y\x00\u00e9\x00 1.2.3",
		"10-a\x0099-b:c\x00#9-c\x00&9-d\x00*9-e\x00|9-f\x00>9-g\x00'9-h'",
		"b\x00a\x00\x00zz\r\x00zz\t\x00zz\x7f",
		"1.2.0-rc.1\x001.2.0+meta\x001.2.0\x00$(id)\x00`id`",
	} {
		f.Add(uint8(i), list)
	}
	f.Fuzz(func(t *testing.T, which uint8, list string) {
		tags := strings.Split(list, "\x00")
		p := mustCompile(t, fuzzSpecs[int(which)%len(fuzzSpecs)])
		res, err := p.Explain(t.Context(), tags, fakeMetadata)
		if err != nil && !errors.Is(err, ErrNoCandidate) {
			t.Fatalf("Explain: %v", err)
		}
		if err == nil && !ociTag.MatchString(res.Tag) {
			t.Fatalf("selected %q, which is not an OCI tag", res.Tag)
		}
		for _, c := range res.Candidates {
			if valid := ociTag.MatchString(c.Tag); valid == (c.Reason == ReasonInvalidTag) {
				t.Fatalf("tag %q (valid %v) has reason %q", c.Tag, valid, c.Reason)
			}
		}
		sel, err := p.Select(t.Context(), tags, fakeMetadata)
		if err == nil && sel.Tag != res.Tag {
			t.Fatalf("Select = %q, Explain = %q", sel.Tag, res.Tag)
		}
	})
}

// FuzzParsePlatform: what parses writes back as itself.
func FuzzParsePlatform(f *testing.F) {
	for _, s := range []string{"linux/amd64", "linux/arm64/v8", "Linux/ARM/v6", "windows/amd64/10.0.17763", "linux", "a/b/c/d",
		"linux/ amd64", "/amd64", "linux//v8", "\u0130/x", "linux/arm64/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlatform(s)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid platform") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		again, err := ParsePlatform(p.String())
		if err != nil || again != p {
			t.Fatalf("round trip of %q via %q: %+v, %v", s, p.String(), again, err)
		}
	})
}
