package notify

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"text/template"
	"unicode"
	"unicode/utf8"
)

// Regular expressions use Go's RE2 syntax, which matches in linear time,
// so no pattern can make a render hang on backtracking. sprig takes the
// pattern first and the text second (regexReplaceAll takes the
// replacement last); so do these. A pattern that does not compile is an
// error naming the function and the pattern, where sprig panics.
func regexFuncs() template.FuncMap {
	return template.FuncMap{
		"regexMatch": func(re string, v any) (bool, error) {
			r, err := compileRegex("regexMatch", re)
			if err != nil {
				return false, err
			}
			return r.MatchString(toString(v)), nil
		},
		"regexFind": func(re string, v any) (string, error) {
			r, err := compileRegex("regexFind", re)
			if err != nil {
				return "", err
			}
			return r.FindString(toString(v)), nil
		},
		"regexFindAll": func(re string, v, n any) ([]string, error) {
			r, err := compileRegex("regexFindAll", re)
			if err != nil {
				return nil, err
			}
			return listLimit("regexFindAll", r.FindAllString(toString(v), toInt(n)))
		},
		"regexReplaceAll": regexReplaceAll,
		"regexSplit": func(re string, v, n any) ([]string, error) {
			r, err := compileRegex("regexSplit", re)
			if err != nil {
				return nil, err
			}
			return listLimit("regexSplit", r.Split(toString(v), toInt(n)))
		},
		"regexQuoteMeta": func(v any) string { return regexp.QuoteMeta(toString(v)) },
	}
}

// listLimit returns l, or an error naming fn when it is over maxListLen.
func listLimit[T any](fn string, l []T) ([]T, error) {
	if err := checkLen(fn, len(l)); err != nil {
		return nil, err
	}
	return l, nil
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

// regexCache keeps compiled patterns: templates use a few literal ones,
// rendered over and over. It is emptied when full, so patterns built from
// data cannot grow it without bound.
var regexCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

const regexCacheSize = 256

func compileRegex(fn, re string) (*regexp.Regexp, error) {
	regexCache.Lock()
	r, ok := regexCache.m[re]
	regexCache.Unlock()
	if ok {
		return r, nil
	}
	r, err := regexp.Compile(re)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	regexCache.Lock()
	if len(regexCache.m) >= regexCacheSize {
		clear(regexCache.m)
	}
	regexCache.m[re] = r
	regexCache.Unlock()
	return r, nil
}
