package render

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

// regexFuncs are crowsnest's own regular expression helpers; the others
// are sprig's (fromSprig), in their must- form, which returns an error
// for a pattern that does not compile.
func regexFuncs() template.FuncMap {
	return template.FuncMap{
		// regexReplaceAll: sprig's builds the whole result, which an empty
		// pattern or a replacement of many $0 makes a thousand times the
		// text, and reads the replacement again for every match; this one
		// stops at maxStringSize and caps its work (funcTests
		// "regexReplaceAll bounded", hostileTemplates "regexReplaceAll
		// expanding a long match", "regexReplaceAll with many matches", "with
		// a long replacement").
		"regexReplaceAll": regexReplaceAll,
	}
}

// maxReplaceWork caps what regexReplaceAll does besides building its
// result: the submatch bounds it holds (one per int) and the parts of the
// replacement it expands (one per part), over all matches. 256 Ki is 2 MiB
// of bounds and a millisecond of expanding; it allows 65,536 matches of a
// pattern with one group and a replacement of up to four parts ("$1-$2"
// is three), where a message replaces a few hundred.
const maxReplaceWork = 1 << 18

// regexReplaceAll replaces every match of re in v with repl, where $1 or
// ${name} stand for submatches, as regexp's ReplaceAllString does. The
// result is built match by match and stops at maxStringSize, since an
// empty pattern matches between every two characters; a match whose
// expansion would pass it (a repl of many $0 over a long match) is
// refused before it is expanded. repl is read once, and the matches times
// the bounds each holds or the parts of repl are at most maxReplaceWork.
func regexReplaceAll(re string, v any, repl string) (string, error) {
	r, err := compileRegex("regexReplaceAll", re)
	if err != nil {
		return "", err
	}
	s := toString(v)
	parts := replacement(r, repl)
	most := maxReplaceWork / max(2*(r.NumSubexp()+1), len(parts))
	matches := r.FindAllStringSubmatchIndex(s, most+1)
	if len(matches) > most {
		return "", fmt.Errorf("regexReplaceAll: more than %d matches of a pattern with %d groups and a replacement of %d parts", most, r.NumSubexp(), len(parts))
	}
	var out []byte
	last := 0
	for _, m := range matches {
		out = append(out, s[last:m[0]]...)
		n := len(out)
		for _, p := range parts {
			n += len(p.text(s, m))
		}
		if err := checkSize("regexReplaceAll", n); err != nil {
			return "", err
		}
		for _, p := range parts {
			out = append(out, p.text(s, m)...)
		}
		last = m[1]
	}
	out = append(out, s[last:]...)
	if err := checkSize("regexReplaceAll", len(out)); err != nil {
		return "", err
	}
	return string(out), nil
}

// replPart is a piece of a replacement: literal text, or a reference to
// the submatches in groups (the first of them that matched).
type replPart struct {
	literal string
	groups  []int
	ref     bool
}

// text is what p expands to for the match m of s.
func (p replPart) text(s string, m []int) string {
	if !p.ref {
		return p.literal
	}
	for _, g := range p.groups {
		if 2*g+1 < len(m) && m[2*g] >= 0 {
			return s[m[2*g]:m[2*g+1]]
		}
	}
	return ""
}

// replacement reads repl as regexp's expand does (which regexp does not
// export): $$ is a dollar, $name or ${name} a submatch by number or name
// (a number or name of no group is empty), a malformed $ itself.
func replacement(r *regexp.Regexp, repl string) []replPart {
	var parts []replPart
	lit := func(s string) {
		if s == "" {
			return
		}
		if n := len(parts); n > 0 && !parts[n-1].ref {
			parts[n-1].literal += s
			return
		}
		parts = append(parts, replPart{literal: s})
	}
	for {
		before, after, ok := strings.Cut(repl, "$")
		lit(before)
		if !ok {
			return parts
		}
		repl = after
		if repl != "" && repl[0] == '$' {
			lit("$")
			repl = repl[1:]
			continue
		}
		name, num, rest, ok := submatchRef(repl)
		if !ok {
			lit("$")
			continue
		}
		repl = rest
		p := replPart{ref: true}
		if num >= 0 {
			p.groups = []int{num}
		} else {
			for i, ni := range r.SubexpNames() {
				if i > 0 && ni == name {
					p.groups = append(p.groups, i)
				}
			}
		}
		parts = append(parts, p)
	}
}

// submatchRef is regexp's extract: the name or number after a $, braced
// or not; num is -1 for a name.
func submatchRef(str string) (name string, num int, rest string, ok bool) {
	brace := str != "" && str[0] == '{'
	if brace {
		str = str[1:]
	}
	i := 0
	for i < len(str) {
		r, size := utf8.DecodeRuneInString(str[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		i += size
	}
	if i == 0 {
		return "", 0, "", false
	}
	name = str[:i]
	if brace {
		if i >= len(str) || str[i] != '}' {
			return "", 0, "", false
		}
		i++
	}
	num = 0
	for j := 0; j < len(name); j++ {
		if name[j] < '0' || name[j] > '9' || num >= 1e8 {
			num = -1
			break
		}
		num = num*10 + int(name[j]-'0')
	}
	if name[0] == '0' && len(name) > 1 {
		num = -1
	}
	return name, num, str[i:], true
}

func compileRegex(fn, re string) (*regexp.Regexp, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return r, nil
}
