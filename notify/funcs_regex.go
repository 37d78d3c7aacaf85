package notify

import (
	"fmt"
	"regexp"
	"sync"
	"text/template"
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
// two characters.
func regexReplaceAll(re string, v any, repl string) (string, error) {
	r, err := compileRegex("regexReplaceAll", re)
	if err != nil {
		return "", err
	}
	s := toString(v)
	var out []byte
	last := 0
	for _, m := range r.FindAllStringSubmatchIndex(s, -1) {
		out = append(out, s[last:m[0]]...)
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
