package render

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// sprigParity are templates over the helpers that are sprig's
// (fromSprig), with arguments of the types sprig's functions take: each
// renders as it does with sprig's function map on its own, which is how
// Argo CD Notifications renders it.
var sprigParity = []string{
	`{{upper "héllo"}} {{lower "HÉLLO"}} {{trim "  x \n"}} {{trimAll "$" "$5.00$"}} {{trimPrefix "-" "-a-"}} {{trimSuffix "-" "-a-"}}`,
	`{{nospace "h e l\tl o"}} {{contains "cat" "catch"}} {{hasPrefix "cat" "catch"}} {{hasSuffix "cat" "ducat"}}`,
	`{{cat "a" 1 nil "b"}} {{quote "a\"b" 1 nil}} {{squote "a" 2}} {{plural "one" "many" 1}} {{plural "one" "many" 2}}`,
	`{{join "," (list 1 nil "b")}} {{join "," "solo"}} {{toStrings (list 1 "b")}} {{sortAlpha (list "c" "a" 10 2)}} {{sortAlpha "x"}}`,
	`{{repeat 3 "ab"}} {{replace " " "-" "I Am Henry"}} {{indent 2 "a\nb"}}|{{nindent 2 "a\nb"}}`,
	`{{(split "/" "a/b/c")._1}} {{splitList "/" "a/b/c"}} {{splitList "," ""}} {{split "" "ab"}}`,
	`{{regexMatch "^v[0-9]+$" "v12"}} {{regexFind "[a-z][1-9]" "abcd1234"}} {{regexFindAll "[2468]" "123456789" -1}} {{regexFindAll "[2468]" "123456789" 2}}`,
	`{{regexSplit "z+" "pizza" -1}} {{regexSplit "z+" "pizza" 1}} {{regexQuoteMeta "1.2.3"}}`,
	`{{default "none" ""}} {{default "none" "x"}} {{default "d" 0}} {{empty (list)}} {{empty 0}} {{empty "x"}} {{coalesce "" 0 "x" "y"}} {{ternary "yes" "no" true}} {{ternary "yes" "no" false}}`,
	`{{list 1 "a" 2.5}} {{rest (list 1 2 3)}} {{initial (list 1 2 3)}} {{reverse (list 1 2 3)}} {{compact (list 1 0 "" "hello" nil)}} {{rest (list)}}`,
	`{{until 3}} {{until -3}} {{until 0}} {{range until 2}}.{{end}}`,
	`{{get (dict "a" 1) "a"}} [{{get (dict "a" 1) "b"}}] {{hasKey (dict "a" 1) "a"}} {{hasKey (dict "a" 1) "b"}} {{pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3)}}`,
	`{{pick (dict "a" 1 "b" 2 "c" 3) "a" "c" "z"}} {{omit (dict "a" 1 "b" 2 "c" 3) "a"}}`,
	// keys is sorted where sprig's come in map order, so one key a dict
	`{{keys (dict "a" 1)}} {{toJson (keys (dict))}} {{toJson (keys)}} {{dict "a" 1 "b"}} {{dict 1 2}} {{set (dict "a" 1) "b" 2}} {{unset (dict "a" 1) "a"}}`,
	`{{add 1 2 3}} {{add 1 2.9}} {{add "4" 1}} {{add1 4}} {{sub 14 3}} {{mul 2 3 4}} {{div 7 2}} {{div -7 2}} {{mod 7 3}} {{max 1 345 5}} {{min 1 2 -3}}`,
	`{{atoi "42"}} {{atoi "x"}} {{int "12"}} {{int 3.9}} {{int64 "9"}} {{float64 "2.5"}} {{int true}} {{int "junk"}} {{int "010"}}`,
	`{{fromJson "{\"a\":[1,{\"b\":2.5}]}"}} {{(fromJson "{\"a\":1}").a}} {{fromJson "[1,\"x\",null]"}} {{fromJson "\"s\""}} {{toJson (fromJson "{\"a\":{}}")}}`,
	`{{toJson (dict "a" (list 1 "<b>"))}} {{toPrettyJson (dict "a" 1)}} {{toRawJson (dict "a" "<b>")}} {{b64enc "coffee"}} {{sha256sum "hi"}}`,
	// sprig's duration reads an int64 or a string; crowsnest's gives it
	// any other number as an int64 (funcTests "duration")
	`{{duration "95"}} {{duration "010"}} {{duration "95.0"}} {{duration "x"}}`,
	`{{fail "no status"}}`,
}

// TestSprigHelpersRenderAsSprig: the helpers adapted from sprig render
// every sprigParity template, errors included, as sprig's own functions
// do; and every such helper is in at least one of them.
func TestSprigHelpersRenderAsSprig(t *testing.T) {
	sprigMap := sprig.TxtFuncMap()
	for _, text := range sprigParity {
		var want strings.Builder
		wantErr := template.Must(template.New("t").Funcs(sprigMap).Parse(text)).Execute(&want, nil)
		n, err := Once(notify.Template{Name: "t", Message: text}, nil)
		switch {
		case wantErr != nil:
			if err == nil || !strings.Contains(err.Error(), errorText(wantErr)) {
				t.Errorf("%s: error = %v, want sprig's %v", text, err, wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", text, err)
		default:
			if diff := cmp.Diff(want.String(), n.Message); diff != "" {
				t.Errorf("%s (-sprig +crowsnest):\n%s", text, diff)
			}
		}
	}
	for name := range fromSprig {
		call := regexp.MustCompile(`(\{\{-?|\(|\|)\s*` + regexp.QuoteMeta(name) + `(\s|\}\}|\))`)
		if !slices.ContainsFunc(sprigParity, call.MatchString) {
			t.Errorf("no sprigParity template calls %s", name)
		}
	}
}

// errorText is what a function returned in a text/template error, after
// the template's position.
func errorText(err error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, "error calling "); ok {
		return after
	}
	return s
}

// A missing field (nil) where a sprig helper reads a string, a list or a
// dict renders as an empty one, as any missing field does in crowsnest,
// where sprig's function fails or prints "<nil>".
func TestSprigHelpersTakeAMissingField(t *testing.T) {
	tests := []struct{ text, want string }{
		{`[{{upper .nope}}{{trim .nope}}{{b64enc .nope}}{{cat .nope}}{{quote .nope}}{{join "," .nope}}]`, "[]"},
		{`{{contains "" .nope}} {{plural "one" "many" .nope}} {{ternary "yes" "no" .nope}} {{add1 .nope}}`, "true many no 1"},
		{`{{rest .nope}} {{reverse .nope}} {{compact .nope}} {{sortAlpha .nope}} {{toStrings .nope}} {{splitList "," .nope}}`, "[] [] [] [] [] []"},
		{`{{hasKey .nope "a"}} [{{get .nope "a"}}] {{pick .nope "a"}} {{keys .nope}} {{pluck "a" .nope}}`, "false [] map[] [] []"},
	}
	for _, tt := range tests {
		n, err := Once(notify.Template{Name: "t", Message: tt.text}, map[string]any{})
		if err != nil {
			t.Errorf("%s: %v", tt.text, err)
			continue
		}
		if diff := cmp.Diff(tt.want, n.Message); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.text, diff)
		}
	}
}
