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
		// text; this one stops at maxStringSize (funcTests "regexReplaceAll
		// bounded", hostileTemplates "regexReplaceAll expanding a long
		// match").
		"regexReplaceAll": regexReplaceAll,
	}
}

// regexReplaceAll replaces every match of re in v with repl, where $1 or
// ${name} stand for submatches. The result is built match by match and
// stops at maxStringSize, since an empty pattern matches between every
// two characters; a match whose expansion would pass it (a repl of many
// $0 over a long match) is refused before it is expanded.
func regexReplaceAll(re string, v any, repl string) (string, error) {
	r, err := compileRegex("regexReplaceAll", re)
	if err != nil {
		return "", err
	}
	s := toString(v)
	var out []byte
	last := 0
	refs := strings.Count(repl, "$")
	for _, m := range r.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, s[last:m[0]]...)
		if refs > 0 {
			if err := checkSize("regexReplaceAll", len(out)+expandedSize(r, repl, s, m)); err != nil {
				return "", err
			}
		}
		out = r.ExpandString(out, repl, s, m)
		last = m[1]
		if err := checkSize("regexReplaceAll", len(out)); err != nil {
			return "", err
		}
	}
	out = append(out, s[last:]...)
	if err := checkSize("regexReplaceAll", len(out)); err != nil {
		return "", err
	}
	return string(out), nil
}

// expandedSize is the length of r.ExpandString(nil, repl, s, m), worked
// out from the submatch bounds without building it. It reads repl as
// regexp's expand does (which regexp does not export): $$ is a dollar,
// $name or ${name} a submatch by number or name, a malformed $ itself.
func expandedSize(r *regexp.Regexp, repl, _ string, m []int) int {
	n := 0
	names := r.SubexpNames()
	for {
		before, after, ok := strings.Cut(repl, "$")
		if !ok {
			return n + len(repl)
		}
		n += len(before)
		repl = after
		if repl != "" && repl[0] == '$' {
			n++
			repl = repl[1:]
			continue
		}
		name, num, rest, ok := submatchRef(repl)
		if !ok {
			n++
			continue
		}
		repl = rest
		if num < 0 {
			for i, ni := range names {
				if name == ni && 2*i+1 < len(m) && m[2*i] >= 0 {
					num = i
					break
				}
			}
		}
		if num >= 0 && 2*num+1 < len(m) && m[2*num] >= 0 {
			n += m[2*num+1] - m[2*num]
		}
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
