package notify

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

func stringFuncs() template.FuncMap {
	return template.FuncMap{
		"upper":      func(v any) string { return strings.ToUpper(toString(v)) },
		"lower":      func(v any) string { return strings.ToLower(toString(v)) },
		"title":      title,
		"trim":       func(v any) string { return strings.TrimSpace(toString(v)) },
		"trimAll":    func(cutset string, v any) string { return strings.Trim(toString(v), cutset) },
		"trimPrefix": func(prefix string, v any) string { return strings.TrimPrefix(toString(v), prefix) },
		"trimSuffix": func(suffix string, v any) string { return strings.TrimSuffix(toString(v), suffix) },
		"trunc":      truncate,
		"truncate":   truncate,
		"abbrev":     abbrev,
		"substr":     substr,
		"nospace":    nospace,
		"replace":    replace,
		"contains":   func(sub string, v any) bool { return strings.Contains(toString(v), sub) },
		"hasPrefix":  func(prefix string, v any) bool { return strings.HasPrefix(toString(v), prefix) },
		"hasSuffix":  func(suffix string, v any) bool { return strings.HasSuffix(toString(v), suffix) },
		"repeat":     repeat,
		"cat":        cat,
		"quote":      func(v ...any) (string, error) { return quoteEach("quote", v, strconv.Quote) },
		"squote":     func(v ...any) (string, error) { return quoteEach("squote", v, squote) },
		"indent":     indent,
		"nindent":    nindent,
		"plural":     plural,
		"split":      split,
		"splitList":  splitList,
		"join":       join,
		"toString":   toString,
		"toStrings":  toStrings,
		"print":      func(v ...any) (string, error) { return sized("print", fmt.Sprint(v...)) },
		"printf":     printf,
		"println":    func(v ...any) (string, error) { return sized("println", fmt.Sprintln(v...)) },
	}
}

// sized returns s, or an error naming fn when s is over maxStringSize.
func sized(fn, s string) (string, error) {
	if err := checkSize(fn, len(s)); err != nil {
		return "", err
	}
	return s, nil
}

// title upper-cases the first letter of every word, as sprig's title
// (strings.Title) does, and keeps the spacing: a word starts after
// anything but a letter, digit or underscore, except that an apostrophe
// does not start one ("don't" stays "Don't", not "Don'T").
func title(v any) string {
	prev := ' '
	return strings.Map(func(r rune) rune {
		inWord := unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '_' || prev == '\''
		prev = r
		if !inWord {
			return unicode.ToTitle(r)
		}
		return r
	}, toString(v))
}

// truncate keeps the first n runes (a negative n keeps the last -n).
func truncate(n, v any) string {
	c := toInt(n)
	r := []rune(toString(v))
	switch {
	case c >= 0 && c < len(r):
		return string(r[:c])
	case c < 0 && -c < len(r):
		return string(r[len(r)+c:])
	}
	return string(r)
}

// abbrev shortens to width runes, the "..." counted in; below a width of
// 4 there is no room for it and the text is returned whole, as in sprig.
func abbrev(width, v any) string {
	w := toInt(width)
	s := toString(v)
	r := []rune(s)
	if w < 4 || len(r) <= w {
		return s
	}
	return string(r[:w-3]) + "..."
}

// substr is the runes from start up to end: a negative start is 0, a
// negative or too large end is the length, and start past end is "".
func substr(start, end, v any) string {
	r := []rune(toString(v))
	s, e := toInt(start), toInt(end)
	if s < 0 {
		s = 0
	}
	if e < 0 || e > len(r) {
		e = len(r)
	}
	if s >= e {
		return ""
	}
	return string(r[s:e])
}

func nospace(v any) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, toString(v))
}

func replace(old, repl string, v any) (string, error) {
	s := toString(v)
	if n := strings.Count(s, old); n > 0 {
		if err := checkSize("replace", len(s)+n*(len(repl)-len(old))); err != nil {
			return "", err
		}
	}
	return strings.ReplaceAll(s, old, repl), nil
}

func repeat(n, v any) (string, error) {
	c := toInt(n)
	if c < 0 || c > maxRepeat {
		return "", fmt.Errorf("repeat count %d out of range 0..%d", c, maxRepeat)
	}
	s := toString(v)
	if err := checkSize("repeat", len(s)*c); err != nil {
		return "", err
	}
	return strings.Repeat(s, c), nil
}

// cat joins its arguments with spaces, leaving out nils.
func cat(v ...any) (string, error) {
	return quoteEach("cat", v, func(s string) string { return s })
}

func squote(s string) string { return "'" + s + "'" }

// quoteEach quotes every non-nil argument and joins them with spaces.
func quoteEach(fn string, v []any, q func(string) string) (string, error) {
	parts := make([]string, 0, len(v))
	size := 0
	for _, x := range v {
		if x == nil {
			continue
		}
		s := q(toString(x))
		size += len(s) + 1
		parts = append(parts, s)
	}
	if err := checkSize(fn, size); err != nil {
		return "", err
	}
	return strings.Join(parts, " "), nil
}

// indent puts n spaces before every line.
func indent(n, v any) (string, error) {
	return indentLines("indent", n, v)
}

// nindent is indent after a newline.
func nindent(n, v any) (string, error) {
	s, err := indentLines("nindent", n, v)
	if err != nil {
		return "", err
	}
	return "\n" + s, nil
}

func indentLines(fn string, n, v any) (string, error) {
	c := toInt(n)
	if c < 0 || c > maxRepeat {
		return "", fmt.Errorf("%s width %d out of range 0..%d", fn, c, maxRepeat)
	}
	s := toString(v)
	if err := checkSize(fn, len(s)+(strings.Count(s, "\n")+1)*c); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", c)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// plural is one when count is 1, else many (0 is plural, as in English).
func plural(one, many string, count any) string {
	if toInt64(count) == 1 {
		return one
	}
	return many
}

// split is sprig's split: a dict of the parts keyed _0, _1, ... so a
// template can write (split "/" .x)._1. splitList gives a list.
func split(sep string, v any) (map[string]string, error) {
	parts, err := splitParts("split", sep, v)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(parts))
	for i, p := range parts {
		m["_"+strconv.Itoa(i)] = p
	}
	return m, nil
}

func splitList(sep string, v any) ([]string, error) { return splitParts("splitList", sep, v) }

// splitParts splits v at sep, counting the parts first: an empty sep
// splits between every character.
func splitParts(fn, sep string, v any) ([]string, error) {
	s := toString(v)
	n := utf8.RuneCountInString(s)
	if sep != "" {
		n = strings.Count(s, sep) + 1
	}
	if err := checkLen(fn, n); err != nil {
		return nil, err
	}
	return strings.Split(s, sep), nil
}

// printf is fmt.Sprintf, refusing a format whose widths and precisions
// (up to fmt's own limit of a million each) could add up to more than
// maxStringSize before the output is built: `%999999[1]d` repeated
// would otherwise allocate a MiB per verb.
func printf(format string, v ...any) (string, error) {
	if padding(format) > maxStringSize {
		return "", fmt.Errorf("printf: the widths and precisions in the format add up to more than %d bytes", maxStringSize)
	}
	return sized("printf", fmt.Sprintf(format, v...))
}

// padding adds up the widths and precisions of format's verbs, counting a
// width or precision taken from an argument (*) as fmt's limit.
func padding(format string) int {
	const fmtMax = 1e6 // fmt refuses larger widths and precisions
	total := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			switch {
			case c >= '0' && c <= '9':
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					n = min(n*10+int(format[i]-'0'), fmtMax)
				}
				i--
				total += n
				continue
			case c == '*':
				total += fmtMax
				continue
			case c == '[':
				if j := strings.IndexByte(format[i:], ']'); j > 0 {
					i += j
					continue
				}
			case strings.IndexByte("+-# .", c) >= 0:
				continue
			}
			break // the verb's letter
		}
	}
	return total
}

// join joins a list's elements, leaving out nils; anything else is
// printed as one string.
func join(sep string, v any) (string, error) {
	items, ok := listItems(v)
	if !ok {
		return toString(v), nil
	}
	parts := make([]string, 0, len(items))
	size := 0
	for _, x := range items {
		if x == nil {
			continue
		}
		s := toString(x)
		size += len(s) + len(sep)
		parts = append(parts, s)
	}
	if err := checkSize("join", size); err != nil {
		return "", err
	}
	return strings.Join(parts, sep), nil
}

// toStrings prints every non-nil element of a list; a value that is not
// a list becomes a list of one string.
func toStrings(v any) []string {
	items, ok := listItems(v)
	if !ok {
		return []string{toString(v)}
	}
	out := make([]string, 0, len(items))
	for _, x := range items {
		if x != nil {
			out = append(out, toString(x))
		}
	}
	return out
}

// listItems returns the elements of a slice or array (nil is an empty
// list); ok is false for anything else.
func listItems(v any) ([]any, bool) {
	switch l := v.(type) {
	case nil:
		return nil, true
	case []any:
		return l, true
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false // []byte is text
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// firstRune and lastRune let first and last take a string too.
func firstRune(s string) any {
	if s == "" {
		return nil
	}
	r, _ := utf8.DecodeRuneInString(s)
	return string(r)
}

func lastRune(s string) any {
	if s == "" {
		return nil
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	return string(r)
}
