package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Spec is a policy as users write it: in annotations, crowsnest's config
// and `crowsnest test` flags. Compile checks it once; Policy.Spec returns
// it normalized.
type Spec struct {
	// Strategy is "semver" (the default when empty), "newest-build",
	// "digest" or "alphabetical"; argocd-image-updater's "latest" and
	// "name" are accepted as newest-build and alphabetical.
	Strategy string
	// Constraint is a semver range ("~1.2", ">=1.0 <2") when versions are
	// ordered as semver, and the mutable tag to track for digest. Empty
	// with semver means every release ("*"): prereleases stay out.
	Constraint string
	// AllowTags keeps only matching tags: "" or "any" for all, or
	// "regexp:<re>" (unanchored, as Go's regexp.MatchString).
	AllowTags string
	// IgnoreTags drops matching tags: each entry a glob (path.Match
	// syntax, matching the whole tag) or "regexp:<re>".
	IgnoreTags []string
	// Extract is a regexp with a named group (?P<version>...); the group's
	// text is what gets ordered, and tags it does not match are skipped.
	Extract string
	// ExtractOrder says how extracted values sort: "semver", "numeric"
	// (integers of any length) or "lexical". It defaults to the
	// strategy's own order: semver for semver, lexical for alphabetical.
	ExtractOrder string
	// Platforms are "os/arch[/variant]"; a tag must be built for at least
	// one of them (as argocd-image-updater requires) to be selected.
	Platforms []string
}

// Strategy is how a policy picks a tag.
type Strategy string

// Strategies, spelled as users write them.
const (
	StrategySemver       Strategy = "semver"
	StrategyNewestBuild  Strategy = "newest-build"
	StrategyDigest       Strategy = "digest"
	StrategyAlphabetical Strategy = "alphabetical"
)

// Orders of extracted values (Spec.ExtractOrder).
const (
	OrderSemver  = "semver"
	OrderNumeric = "numeric"
	OrderLexical = "lexical"
)

// regexpPrefix marks a regexp in allow-tags and ignore-tags, in any case.
const regexpPrefix = "regexp:"

func hasRegexpPrefix(s string) bool {
	return len(s) >= len(regexpPrefix) && strings.EqualFold(s[:len(regexpPrefix)], regexpPrefix)
}

// Limits on what a Spec may hold. Specs come from annotations and
// ImageUpdaters, written by any team: each pattern is compiled per image
// and matched against every tag of every list, and the controller's
// selection memo is keyed by the spec. argocd-image-updater users write
// patterns of tens of bytes (`^v?[0-9]+\.[0-9]+\.[0-9]+$`), a few
// ignore-tags entries and a few platforms; the limits are far above that.
const (
	// MaxPatternBytes bounds allow-tags after "regexp:", each ignore-tags
	// entry, extract and a semver range.
	MaxPatternBytes = 1024
	// MaxIgnoreTags bounds the entries of ignore-tags.
	MaxIgnoreTags = 64
	// MaxPlatforms bounds the entries of platforms.
	MaxPlatforms = 32
	// maxPlatformBytes bounds one platform ("linux/arm64/v8" is 14), so
	// that an error can quote it.
	maxPlatformBytes = 64
)

// extractGroup is the named group Extract must have.
const extractGroup = "version"

// Error is one problem with one field of a Spec. Field is the name users
// know ("constraint", "ignore-tags[1]"), so a bad policy reads as
// `image "nginx": allow-tags: invalid regexp "(": ...` instead of a tag
// list that silently matches nothing.
type Error struct {
	Image string
	Field string
	Msg   string
	// Err is the underlying parse error, if any.
	Err error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("image %q: %s: %s", e.Image, e.Field, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying parse error.
func (e *Error) Unwrap() error { return e.Err }

// Policy is a compiled Spec: regexps, constraint and platforms parsed
// once, ready to select from any number of tag lists. It is immutable and
// safe for concurrent use.
type Policy struct {
	image      string
	spec       Spec
	strategy   Strategy
	order      string // ordering of keys; "" for newest-build and digest
	constraint *semver.Constraints
	// withPre is constraint admitting prereleases, to tell "prerelease"
	// from "outside constraint" when explaining a skip.
	withPre   *semver.Constraints
	allow     *regexp.Regexp
	ignore    []tagMatcher
	extract   *regexp.Regexp
	extractAt int // submatch index of the version group
	platforms []Platform
}

// compiler collects every problem of a Spec, so users fix them in one go.
type compiler struct {
	image string
	errs  []error
}

func (c *compiler) fail(field string, err error, format string, args ...any) {
	c.errs = append(c.errs, &Error{Image: c.image, Field: field, Msg: fmt.Sprintf(format, args...), Err: err})
}

func (c *compiler) regexp(field, expr string) *regexp.Regexp {
	if !c.short(field, expr) {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		c.fail(field, err, "invalid regexp %q", expr)
	}
	return re
}

// short reports whether the pattern is within MaxPatternBytes, and
// fails field when it is not (without quoting it: it may be large).
func (c *compiler) short(field, pattern string) bool {
	if len(pattern) <= MaxPatternBytes {
		return true
	}
	c.fail(field, nil, "%d bytes, over the %d-byte limit", len(pattern), MaxPatternBytes)
	return false
}

// Compile checks s and prepares it for Select. image names the image in
// errors. Every problem is reported, each as an *Error, joined.
func Compile(image string, s Spec) (*Policy, error) {
	c := &compiler{image: image}
	p := &Policy{image: image}
	p.strategy = c.strategy(s.Strategy)
	p.allow = c.allowTags(s.AllowTags)
	c.ignoreTags(p, s.IgnoreTags)
	c.extraction(p, s)
	c.constraintFor(p, s)
	c.platforms(p, s.Platforms)
	if p.strategy == StrategyDigest && validTag(s.Constraint) {
		if rc := p.filter(s.Constraint); rc != rcNone {
			c.fail("constraint", nil, "the tracked tag %q is %s", s.Constraint, reasons[rc])
		}
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	p.spec = p.normalize(s)
	return p, nil
}

// ignoreTags reads the ignore-tags entries, at most MaxIgnoreTags.
func (c *compiler) ignoreTags(p *Policy, pats []string) {
	if len(pats) > MaxIgnoreTags {
		c.fail("ignore-tags", nil, "%d entries, more than the %d allowed", len(pats), MaxIgnoreTags)
		return
	}
	for i, pat := range pats {
		if m, ok := c.ignoreTag(fmt.Sprintf("ignore-tags[%d]", i), pat); ok {
			p.ignore = append(p.ignore, m)
		}
	}
}

// platforms reads the platforms, at most MaxPlatforms.
func (c *compiler) platforms(p *Policy, platforms []string) {
	if len(platforms) > MaxPlatforms {
		c.fail("platforms", nil, "%d entries, more than the %d allowed", len(platforms), MaxPlatforms)
		return
	}
	for i, ps := range platforms {
		if len(ps) > maxPlatformBytes {
			c.fail(fmt.Sprintf("platforms[%d]", i), nil, "%d bytes: want os/arch[/variant]", len(ps))
			continue
		}
		pl, err := ParsePlatform(ps)
		if err != nil {
			c.fail(fmt.Sprintf("platforms[%d]", i), nil, "%q: want os/arch[/variant]", ps)
			continue
		}
		if !containsPlatform(p.platforms, pl) {
			p.platforms = append(p.platforms, pl)
		}
	}
}

func (c *compiler) strategy(s string) Strategy {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "semver":
		return StrategySemver
	case "newest-build", "latest":
		return StrategyNewestBuild
	case "digest":
		return StrategyDigest
	case "alphabetical", "name":
		return StrategyAlphabetical
	}
	c.fail("strategy", nil, "unknown strategy %q: want semver, newest-build, digest or alphabetical", s)
	return StrategySemver
}

// allowTags reads a match function; its name is case-insensitive ("ANY",
// "Regexp:"), as argocd-image-updater lower-cases it (ParseMatch).
func (c *compiler) allowTags(s string) *regexp.Regexp {
	switch {
	case s == "" || strings.EqualFold(s, "any"):
		return nil
	case hasRegexpPrefix(s):
		return c.regexp("allow-tags", s[len(regexpPrefix):])
	}
	if !c.short("allow-tags", s) {
		return nil
	}
	c.fail("allow-tags", nil, `%q: want "any" or "regexp:<re>"`, s)
	return nil
}

// extraction sets the key ordering and the extract regexp.
func (c *compiler) extraction(p *Policy, s Spec) {
	switch p.strategy {
	case StrategySemver:
		p.order = OrderSemver
	case StrategyAlphabetical:
		p.order = OrderLexical
	default:
		if s.Extract != "" {
			c.fail("extract", nil, "the %s strategy does not order tags, so it cannot use extract", p.strategy)
		}
		if s.ExtractOrder != "" {
			c.fail("extract-order", nil, "the %s strategy does not order tags", p.strategy)
		}
		return
	}
	switch s.ExtractOrder {
	case "":
	case OrderSemver, OrderNumeric, OrderLexical:
		if s.Extract == "" {
			c.fail("extract-order", nil, "needs extract")
		}
		p.order = s.ExtractOrder
	default:
		c.fail("extract-order", nil, "unknown order %q: want semver, numeric or lexical", s.ExtractOrder)
	}
	if s.Extract == "" {
		return
	}
	if p.extract = c.regexp("extract", s.Extract); p.extract == nil {
		return
	}
	if p.extractAt = p.extract.SubexpIndex(extractGroup); p.extractAt < 0 {
		c.fail("extract", nil, "regexp %q has no named group (?P<%s>...)", s.Extract, extractGroup)
		p.extract = nil
	}
}

// constraintFor reads Constraint: a range for semver ordering, the
// tracked tag for digest, and an error anywhere else, where it would be
// silently ignored.
func (c *compiler) constraintFor(p *Policy, s Spec) {
	switch {
	case p.strategy == StrategyDigest:
		if s.Constraint == "" {
			c.fail("constraint", nil, "the digest strategy needs the tag to track")
		} else if !validTag(s.Constraint) {
			c.fail("constraint", nil, "%q is not a valid tag to track", s.Constraint)
		}
	case s.Constraint == "":
	case p.order != OrderSemver:
		c.fail("constraint", nil, "%q: a version range needs semver ordering, not %s", s.Constraint, orDefault(p.order, string(p.strategy)))
	case !c.short("constraint", s.Constraint):
	default:
		cs, err := semver.NewConstraint(s.Constraint)
		if err != nil {
			c.fail("constraint", err, "invalid semver range %q", s.Constraint)
			return
		}
		withPre := *cs
		withPre.IncludePrerelease = true
		p.constraint, p.withPre = cs, &withPre
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// validTag reports whether s is an OCI tag:
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func validTag(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isTagChar(c) {
			return false
		}
	}
	return true
}

func isTagChar(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-'
}

func containsPlatform(ps []Platform, p Platform) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// normalize is s with defaults and aliases resolved.
func (p *Policy) normalize(s Spec) Spec {
	n := Spec{
		Strategy:   string(p.strategy),
		Constraint: s.Constraint,
		AllowTags:  s.AllowTags,
		IgnoreTags: append([]string(nil), s.IgnoreTags...),
		Extract:    s.Extract,
	}
	if strings.EqualFold(n.AllowTags, "any") {
		n.AllowTags = ""
	}
	if p.extract != nil {
		n.ExtractOrder = p.order
	}
	for _, pl := range p.platforms {
		n.Platforms = append(n.Platforms, pl.String())
	}
	return n
}

// Strategy is the policy's strategy, aliases resolved.
func (p *Policy) Strategy() Strategy { return p.strategy }

// Spec is the policy as compiled: aliases and defaults resolved.
func (p *Policy) Spec() Spec { return p.normalize(p.spec) }

// Image is the image the policy was compiled for.
func (p *Policy) Image() string { return p.image }

// Platforms are the platforms a selected tag must be built for; callers
// pass them to the metadata lookup so it reads only those children.
func (p *Policy) Platforms() []Platform { return append([]Platform(nil), p.platforms...) }

// NeedsMetadata reports whether Select will call its MetadataFunc: for
// newest-build, digest, and any policy with platforms.
func (p *Policy) NeedsMetadata() bool {
	return p.strategy == StrategyNewestBuild || p.strategy == StrategyDigest || len(p.platforms) > 0
}
