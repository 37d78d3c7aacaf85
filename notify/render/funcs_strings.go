package render

import (
	"fmt"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

// stringFuncs are crowsnest's own string helpers: sprig's behave
// differently in a way a message shows, or sprig has none; the others
// are sprig's (fromSprig).
func stringFuncs() template.FuncMap {
	return template.FuncMap{
		// title: sprig's (strings.Title) starts a word after an apostrophe
		// ("Don'T"; funcTests "title").
		"title": title,
		// trunc, truncate, abbrev and substr count runes: sprig's count bytes
		// and cut a character in two (funcTests "trunc", "abbrev counts
		// characters", "substr"); sprig's substr panics when start is past
		// end.
		"trunc":    truncate,
		"truncate": truncate,
		"abbrev":   abbrev,
		"substr":   substr,
		// toString: sprig's prints nil (a missing field) as "<nil>"
		// (funcTests "toString toStrings").
		"toString": toString,
		// print, printf and println: text/template's build a string of any
		// size (funcTests "print bounded", hostileTemplates "printf widths").
		"print":   func(v ...any) (string, error) { return sized("print", fmt.Sprint(v...)) },
		"printf":  printf,
		"println": func(v ...any) (string, error) { return sized("println", fmt.Sprintln(v...)) },
		// orEmpty ends every printed pipeline (rewrite.go); required is Helm's.
		"orEmpty":  orEmpty,
		"required": required,
	}
}

// sized returns s, or an error naming fn when s is over maxStringSize.
func sized(fn, s string) (string, error) {
	if err := checkSize(fn, len(s)); err != nil {
		return "", err
	}
	return s, nil
}

// title upper-cases the first letter of every word and keeps the
// spacing, as sprig's strings.Title does, except that an apostrophe
// inside a word does not start a new one ("don't" is "Don't", not
// "Don'T"). A word starts after a space or an ASCII character that is not
// a letter, digit or underscore.
func title(v any) string {
	atStart := true
	return strings.Map(func(r rune) rune {
		out := r
		if atStart {
			out = unicode.ToTitle(r)
		}
		atStart = startsWord(r) && (r != '\'' || atStart)
		return out
	}, toString(v))
}

// startsWord reports whether a word starts after r, as strings.Title
// reads it.
func startsWord(r rune) bool {
	switch {
	case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
		return false
	case r < utf8.RuneSelf:
		return true
	}
	return unicode.IsSpace(r)
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

// checkRepeat bounds sprig's repeat COUNT STRING.
func checkRepeat(args []any) error {
	c := toInt(args[0])
	if c < 0 || c > maxRepeat {
		return fmt.Errorf("repeat count %d out of range 0..%d", c, maxRepeat)
	}
	return checkSize("repeat", len(toString(args[1]))*c)
}

// checkReplace bounds sprig's replace OLD NEW STRING.
func checkReplace(args []any) error {
	old, repl, s := toString(args[0]), toString(args[1]), toString(args[2])
	if n := strings.Count(s, old); n > 0 {
		return checkSize("replace", len(s)+n*(len(repl)-len(old)))
	}
	return nil
}

// checkIndent bounds sprig's indent and nindent WIDTH STRING.
func checkIndent(fn string) func([]any) error {
	return func(args []any) error {
		c := toInt(args[0])
		if c < 0 || c > maxRepeat {
			return fmt.Errorf("%s width %d out of range 0..%d", fn, c, maxRepeat)
		}
		s := toString(args[1])
		return checkSize(fn, len(s)+(strings.Count(s, "\n")+1)*c)
	}
}

// checkSplit bounds sprig's split and splitList SEP STRING, counting the
// parts first: an empty SEP splits between every character.
func checkSplit(fn string) func([]any) error {
	return func(args []any) error {
		sep, s := toString(args[0]), toString(args[1])
		n := utf8.RuneCountInString(s)
		if sep != "" {
			n = strings.Count(s, sep) + 1
		}
		return checkLen(fn, n)
	}
}

// capCount lowers the count (third argument) of sprig's regexFindAll and
// regexSplit to one over maxListLen, so the result is refused after at
// most that many matches rather than built whole.
func capCount(args []any) error {
	if n := toInt(args[2]); n < 0 || n > maxListLen+1 {
		args[2] = maxListLen + 1
	}
	return nil
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
