package spec

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Glob is a compiled name pattern for a window's applications, namespaces,
// clusters and projects. The syntax is the one Argo CD's sync windows accept:
// "*" matches any run of characters, "/" included (cluster URLs have
// slashes), "?" one character, "[a-z]" and "[!a-z]" a class, "{a,b}" either
// alternative, and "\" escapes the next character.
type Glob struct {
	text string
	alts [][]token
}

// maxAlternatives caps brace expansion: "{a,b}{c,d}..." multiplies, and a
// pattern is written by a person, not generated.
const maxAlternatives = 256

type tokenKind uint8

const (
	litTok tokenKind = iota
	anyTok
	starTok
	classTok
)

type token struct {
	kind   tokenKind
	r      rune
	ranges []runeRange
	neg    bool
}

type runeRange struct{ lo, hi rune }

// CompileGlob parses a pattern; a malformed one (an unclosed "[" or "{") is an
// error rather than a pattern that silently matches nothing.
func CompileGlob(pattern string) (*Glob, error) {
	expanded, err := expandBraces(pattern, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern %q: %w", pattern, err)
	}
	g := &Glob{text: pattern}
	for _, alt := range expanded {
		toks, err := tokenize(alt)
		if err != nil {
			return nil, fmt.Errorf("invalid pattern %q: %w", pattern, err)
		}
		g.alts = append(g.alts, toks)
	}
	return g, nil
}

// String returns the pattern as written.
func (g *Glob) String() string { return g.text }

// Match reports whether s matches the whole pattern.
func (g *Glob) Match(s string) bool {
	for _, alt := range g.alts {
		if matchTokens(alt, s) {
			return true
		}
	}
	return false
}

// expandBraces turns "a{b,c}d" into "abd", "acd" (nested braces too).
func expandBraces(p string, out []string) ([]string, error) {
	openAt, closeAt, commas, err := topBrace(p)
	if err != nil {
		return nil, err
	}
	if openAt < 0 {
		if len(out) >= maxAlternatives {
			return nil, fmt.Errorf("more than %d alternatives", maxAlternatives)
		}
		return append(out, p), nil
	}
	prev := openAt + 1
	for _, c := range append(commas, closeAt) {
		if out, err = expandBraces(p[:openAt]+p[prev:c]+p[closeAt+1:], out); err != nil {
			return nil, err
		}
		prev = c + 1
	}
	return out, nil
}

// topBrace finds the first "{", its matching "}" and the commas between
// them at that nesting level, skipping escapes and classes.
func topBrace(p string) (openAt, closeAt int, commas []int, err error) {
	openAt, depth := -1, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			j := classEnd(p, i)
			if j < 0 {
				return 0, 0, nil, errors.New("unclosed [")
			}
			i = j
		case '{':
			if depth == 0 {
				openAt = i
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				return 0, 0, nil, errors.New("unmatched }")
			}
			depth--
			if depth == 0 {
				return openAt, i, commas, nil
			}
		}
	}
	if depth > 0 {
		return 0, 0, nil, errors.New("unclosed {")
	}
	return -1, -1, nil, nil
}

// classEnd returns the index of the "]" closing the class at p[i], or -1.
func classEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++ // a leading "]" is literal
	}
	for ; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return -1
}

// decodeRune reads one rune; an invalid byte reads as its own value above
// the Unicode range, so distinct invalid bytes never compare equal.
func decodeRune(s string) (rune, int) {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return utf8.MaxRune + 1 + rune(s[0]), 1
	}
	return r, n
}

func tokenize(p string) ([]token, error) {
	var toks []token
	for i := 0; i < len(p); {
		r, n := decodeRune(p[i:])
		switch r {
		case '*':
			if len(toks) == 0 || toks[len(toks)-1].kind != starTok {
				toks = append(toks, token{kind: starTok})
			}
		case '?':
			toks = append(toks, token{kind: anyTok})
		case '\\':
			if i+1 >= len(p) {
				return nil, errors.New("trailing \\")
			}
			r, n = decodeRune(p[i+1:])
			n++
			toks = append(toks, token{kind: litTok, r: r})
		case '[':
			j := classEnd(p, i)
			if j < 0 {
				return nil, errors.New("unclosed [")
			}
			t, err := parseClass(p[i+1 : j])
			if err != nil {
				return nil, err
			}
			toks = append(toks, t)
			n = j + 1 - i
		default:
			toks = append(toks, token{kind: litTok, r: r})
		}
		i += n
	}
	return toks, nil
}

func parseClass(body string) (token, error) {
	t := token{kind: classTok}
	if strings.HasPrefix(body, "!") || strings.HasPrefix(body, "^") {
		t.neg, body = true, body[1:]
	}
	var runes []rune
	for i := 0; i < len(body); {
		r, n := decodeRune(body[i:])
		if r == '\\' && i+n < len(body) {
			i += n
			r, n = decodeRune(body[i:])
		}
		runes = append(runes, r)
		i += n
	}
	for i := 0; i < len(runes); i++ {
		rg := runeRange{runes[i], runes[i]}
		if i+2 < len(runes) && runes[i+1] == '-' {
			rg.hi = runes[i+2]
			i += 2
		}
		if rg.lo > rg.hi {
			return token{}, fmt.Errorf("bad range %c-%c", rg.lo, rg.hi)
		}
		t.ranges = append(t.ranges, rg)
	}
	if len(t.ranges) == 0 {
		return token{}, errors.New("empty []")
	}
	return t, nil
}

func (t *token) matches(r rune) bool {
	switch t.kind {
	case anyTok:
		return true
	case litTok:
		return t.r == r
	case classTok:
		in := false
		for _, rg := range t.ranges {
			if rg.lo <= r && r <= rg.hi {
				in = true
				break
			}
		}
		return in != t.neg
	}
	return false
}

// matchTokens is the classic linear-backtracking wildcard match: on a
// mismatch, retry from the last "*" with one more character consumed.
func matchTokens(toks []token, s string) bool {
	rs := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, n := decodeRune(s[i:])
		rs = append(rs, r)
		i += n
	}
	pi, si, starP, starS := 0, 0, -1, 0
	for si < len(rs) {
		switch {
		case pi < len(toks) && toks[pi].kind == starTok:
			starP, starS = pi, si
			pi++
		case pi < len(toks) && toks[pi].matches(rs[si]):
			pi++
			si++
		case starP >= 0:
			starS++
			pi, si = starP+1, starS
		default:
			return false
		}
	}
	for pi < len(toks) && toks[pi].kind == starTok {
		pi++
	}
	return pi == len(toks)
}
