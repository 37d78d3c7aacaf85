package policy

import (
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// version is a tag parsed the way semver.NewVersion parses it, without
// its regexp and allocations: selection parses every tag of a repository
// (100,000 on busy ones) on every poll. FuzzSemverParse holds the two
// parsers to the same answers.
// Why not semver.NewVersion: BenchmarkParseTags, 100,000 tags ~17x faster, no allocations.
type version struct {
	major, minor, patch uint64
	pre, meta           string
	// strict: all three numbers, no leading zeros; the text (without
	// "v") is then a strict semver semver.StrictNewVersion reads cheaply.
	strict bool
}

// parseVersion accepts what semver.NewVersion accepts (in its default,
// coercing mode): an optional "v", one to three numeric parts (leading
// zeros allowed), then "-prerelease" and "+metadata" made of non-empty
// dot-separated [0-9A-Za-z-] identifiers; numeric prerelease identifiers
// have no leading zero.
func parseVersion(s string) (version, bool) {
	var v version
	if len(s) > semver.MaxVersionLen {
		return v, false
	}
	i := 0
	if i < len(s) && s[i] == 'v' {
		i++
	}
	var nums [3]uint64
	v.strict = true
	for k := range nums {
		if k > 0 {
			if i == len(s) || s[i] != '.' {
				v.strict = false
				break
			}
			i++
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		n, ok := parseUint(s[i:j])
		if !ok {
			return v, false
		}
		if j-i > 1 && s[i] == '0' {
			v.strict = false
		}
		nums[k], i = n, j
	}
	v.major, v.minor, v.patch = nums[0], nums[1], nums[2]
	rest := s[i:]
	if strings.HasPrefix(rest, "-") {
		end := strings.IndexByte(rest, '+')
		if end < 0 {
			end = len(rest)
		}
		v.pre, rest = rest[1:end], rest[end:]
		if !validIdents(v.pre, true) {
			return v, false
		}
	}
	if rest == "" {
		return v, true
	}
	if rest[0] != '+' || !validIdents(rest[1:], false) {
		return v, false
	}
	v.meta = rest[1:]
	return v, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseUint is strconv.ParseUint(s, 10, 64) for digit strings, without
// the error allocation when it fails.
func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		d := uint64(s[i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// validIdents checks dot-separated semver identifiers; pre adds the
// prerelease rule that numeric identifiers have no leading zero.
func validIdents(s string, pre bool) bool {
	for {
		id, rest, more := strings.Cut(s, ".")
		if id == "" {
			return false
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case isDigit(c):
			case c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
				numeric = false
			default:
				return false
			}
		}
		if pre && numeric && len(id) > 1 && id[0] == '0' {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// compare orders versions as (*semver.Version).Compare does: by
// major.minor.patch, a release above its prereleases, prereleases by
// identifier (numeric below alphanumeric), metadata ignored.
func (v *version) compare(o *version) int {
	if c := cmpUint(v.major, o.major); c != 0 {
		return c
	}
	if c := cmpUint(v.minor, o.minor); c != 0 {
		return c
	}
	if c := cmpUint(v.patch, o.patch); c != 0 {
		return c
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	a, b := v.pre, o.pre
	for a != "" || b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if c := comparePreIdent(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// comparePreIdent compares one prerelease identifier the way semver does;
// a missing identifier ("") sorts first.
func comparePreIdent(x, y string) int {
	switch {
	case x == y:
		return 0
	case x == "":
		return -1
	case y == "":
		return 1
	}
	xn, xNum := parseUint(x)
	yn, yNum := parseUint(y)
	switch {
	case xNum && yNum:
		return cmpUint(xn, yn)
	case xNum:
		return -1
	case yNum:
		return 1
	}
	return strings.Compare(x, y)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// semver builds the library's Version of text (which v was parsed from)
// for constraint checks. It allocates, so selection calls it only for
// candidates it ranks.
func (v *version) semver(text string) *semver.Version {
	if v.strict {
		if sv, err := semver.StrictNewVersion(strings.TrimPrefix(text, "v")); err == nil {
			return sv
		}
	}
	// semver.New formats the version with fmt: slower, but any form.
	return semver.New(v.major, v.minor, v.patch, v.pre, v.meta)
}

// String writes the canonical form shown to users ("1.2.0" for "v1.2").
func (v *version) String() string {
	b := make([]byte, 0, 16+len(v.pre)+len(v.meta))
	b = strconv.AppendUint(b, v.major, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.minor, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, v.patch, 10)
	if v.pre != "" {
		b = append(b, '-')
		b = append(b, v.pre...)
	}
	if v.meta != "" {
		b = append(b, '+')
		b = append(b, v.meta...)
	}
	return string(b)
}

// compareNumeric orders digit strings as integers of any length:
// "10" > "9", "007" = "7".
func compareNumeric(a, b string) int {
	a, b = trimZeros(a), trimZeros(b)
	if c := cmpUint(uint64(len(a)), uint64(len(b))); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func trimZeros(s string) string {
	i := 0
	for i < len(s) && s[i] == '0' {
		i++
	}
	return s[i:]
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
