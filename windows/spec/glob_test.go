package spec

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{pattern: "*", yes: []string{"", "guestbook", "https://kubernetes.default.svc"}},
		{pattern: "prod-*", yes: []string{"prod-", "prod-shop"}, no: []string{"production", "staging-prod-shop"}},
		{pattern: "*-prod", yes: []string{"shop-prod", "a-b-prod"}, no: []string{"shop-prod-2"}},
		{pattern: "https://*.example.com", yes: []string{"https://a.example.com", "https://a/b.example.com"}, no: []string{"http://a.example.com"}},
		{pattern: "shop-?", yes: []string{"shop-1", "shop-é"}, no: []string{"shop-", "shop-12"}},
		{pattern: "shop-[0-9]", yes: []string{"shop-0", "shop-9"}, no: []string{"shop-a"}},
		{pattern: "shop-[!0-9]", yes: []string{"shop-a"}, no: []string{"shop-5"}},
		{pattern: "shop-[^ab]", yes: []string{"shop-c"}, no: []string{"shop-a"}},
		{pattern: "{prod,staging}-*", yes: []string{"prod-a", "staging-b"}, no: []string{"dev-a"}},
		{pattern: "a{b,{c,d}e}f", yes: []string{"abf", "acef", "adef"}, no: []string{"af", "acf"}},
		{pattern: `lit\*`, yes: []string{"lit*"}, no: []string{"litx"}},
		{pattern: "a*b*c", yes: []string{"abc", "aXbYc", "abbbc"}, no: []string{"acb"}},
		{pattern: "exact", yes: []string{"exact"}, no: []string{"Exact", "exact2"}},
		{pattern: "", yes: []string{""}, no: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g, err := CompileGlob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.yes {
				if !g.Match(s) {
					t.Errorf("%q does not match %q, want a match", tt.pattern, s)
				}
			}
			for _, s := range tt.no {
				if g.Match(s) {
					t.Errorf("%q matches %q, want no match", tt.pattern, s)
				}
			}
		})
	}
}

func TestGlobErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"shop-[0-9", "unclosed ["},
		{"{a,b", "unclosed {"},
		{"a}", "unmatched }"},
		{`a\`, `trailing \`},
		{"[z-a]", "bad range"},
		{strings.Repeat("{a,b}", 9), "more than 256 alternatives"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, err := CompileGlob(tt.pattern)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CompileGlob(%q) error = %v, want one containing %q", tt.pattern, err, tt.want)
			}
		})
	}
}
