package policy

import (
	"path"
	"regexp"
	"strings"
)

// tagMatcher is one ignore-tags entry: a regexp, a glob, or a plain tag
// (a glob without metacharacters, compared directly).
type tagMatcher struct {
	re      *regexp.Regexp
	glob    string
	literal bool
}

func (m *tagMatcher) match(tag string) bool {
	switch {
	case m.re != nil:
		return m.re.MatchString(tag)
	case m.literal:
		return tag == m.glob
	}
	ok, _ := path.Match(m.glob, tag) // the pattern was checked by Compile
	return ok
}

func (c *compiler) ignoreTag(field, pat string) (tagMatcher, bool) {
	if hasRegexpPrefix(pat) {
		re := c.regexp(field, pat[len(regexpPrefix):])
		return tagMatcher{re: re}, re != nil
	}
	if pat == "" {
		c.fail(field, nil, "empty pattern")
		return tagMatcher{}, false
	}
	if !c.short(field, pat) {
		return tagMatcher{}, false
	}
	if _, err := path.Match(pat, ""); err != nil {
		c.fail(field, err, "invalid glob %q", pat)
		return tagMatcher{}, false
	}
	return tagMatcher{glob: pat, literal: !strings.ContainsAny(pat, `*?[\`)}, true
}

// filter returns why tag is skipped: not a tag by the OCI grammar (a
// registry listed "../x", a newline or a 1 KB name, which no file or
// patch may receive), or by allow-tags or ignore-tags; rcNone when it
// passes.
func (p *Policy) filter(tag string) reasonCode {
	if !validTag(tag) {
		return rcInvalidTag
	}
	if p.allow != nil && !p.allow.MatchString(tag) {
		return rcNotAllowed
	}
	for i := range p.ignore {
		if p.ignore[i].match(tag) {
			return rcIgnored
		}
	}
	return rcNone
}

// key returns the text of tag that is ordered: the extract group, or the
// whole tag.
func (p *Policy) key(tag string) (string, bool) {
	if p.extract == nil {
		return tag, true
	}
	m := p.extract.FindStringSubmatchIndex(tag)
	if len(m) <= 2*p.extractAt+1 || m[2*p.extractAt] < 0 {
		return "", false
	}
	return tag[m[2*p.extractAt]:m[2*p.extractAt+1]], true
}
