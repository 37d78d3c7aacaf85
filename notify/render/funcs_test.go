package render_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// funcVars are appVars plus values of the kinds data brings: JSON numbers
// (float64), a map[string]string, a JSON document, a time and a duration.
func funcVars() map[string]any {
	v := appVars()
	v["n"] = map[string]any{"three": float64(3), "half": 2.5, "str": "42", "list": []any{float64(1), float64(3)}}
	v["labels"] = map[string]string{"team": "payments", "tier": "web"}
	v["json"] = `{"a": {"b": [1, "x"]}, "c": "<d>"}`
	v["when"] = time.Date(2026, 11, 23, 8, 30, 0, 0, time.UTC)
	v["dur"] = 90 * time.Minute
	return v
}

// funcTests hold at least one row per function in config.TemplateFuncNames
// (TestFuncTestsCoverEveryFunction checks), with sprig's argument order.
var funcTests = []struct {
	name    string
	text    string
	want    string
	wantErr string
}{
	// strings
	{name: "upper lower", text: `{{upper "ab"}} {{.app.metadata.name | upper}} {{lower "AB"}}`, want: "AB GUESTBOOK ab"},
	{name: "title", text: `{{title "hello wide  world-x"}} {{title "don't"}}`, want: "Hello Wide  World-X Don't"},
	{name: "title as strings.Title", text: `{{title "a—b c«d 'twas rock'n'roll x.y é_ü k\u00a0l"}}`, want: "A—b C«d 'Twas Rock'n'roll X.Y É_ü K\u00a0L"},
	{name: "trim", text: `[{{trim "  x \n"}}] {{trimAll "$" "$5.00$"}} {{trimPrefix "-" "-a-"}} {{trimSuffix "-" "-a-"}}`, want: "[x] 5.00 a- -a"},
	{name: "trunc", text: `{{trunc 3 "foooo"}} {{trunc -3 "baaaar"}} {{trunc -999 "ab"}} [{{trunc 0 "ab"}}] {{"héllo" | truncate 2}}`, want: "foo aar ab [] hé"},
	{name: "abbrev", text: `{{abbrev 5 "hello world"}} {{abbrev 3 "hello"}} {{abbrev 20 "short"}}`, want: "he... hello short"},
	{name: "abbrev counts characters", text: `{{abbrev 5 "héllo wörld"}} {{abbrev 4 "ñandú"}}`, want: "hé... ñ..."},
	{name: "substr", text: `{{substr 0 3 "fooo"}} {{"foo" | substr 0 10}} [{{substr 2 1 "foo"}}] {{substr -1 2 "héllo"}}`, want: "foo foo [] hé"},
	{name: "nospace", text: "{{nospace \"h e l\\tl o\\n\"}}", want: "hello"},
	{name: "replace", text: `{{"I Am Henry" | replace " " "-"}}`, want: "I-Am-Henry"},
	{name: "replace bounded", text: `{{replace "x" (repeat 1000 "y") (repeat 2000 "x")}}`, wantErr: "replace: result of 2000000 bytes is over the 1048576-byte limit"},
	{name: "contains prefix suffix", text: `{{contains "cat" "catch"}} {{hasPrefix "cat" "catch"}} {{hasSuffix "cat" "ducat"}} {{contains "dog" "catch"}}`, want: "true true true false"},
	{name: "repeat", text: `{{repeat 3 "ab"}}`, want: "ababab"},
	{name: "repeat negative", text: `{{repeat -1 "x"}}`, wantErr: "repeat count -1 out of range 0..10000"},
	{name: "repeat bounded", text: `{{repeat 10000 (repeat 200 "x")}}`, wantErr: "repeat: result of 2000000 bytes is over the 1048576-byte limit"},
	{name: "cat", text: `{{"c" | cat "a" .app.nope "b"}}`, want: "a b c"},
	{name: "quote", text: `{{quote "a\"b" 1 .app.nope}} {{squote "a" 2}}`, want: `"a\"b" "1" 'a' '2'`},
	{name: "indent", text: `{{indent 2 "a\nb"}}|{{nindent 2 "a\nb"}}`, want: "  a\n  b|\n  a\n  b"},
	{name: "indent out of range", text: `{{nindent -1 "a"}}`, wantErr: "nindent width -1 out of range 0..10000"},
	{name: "plural", text: `{{len .app.status.images | plural "one image" "images"}} {{plural "one" "many" 1}} {{plural "one" "many" 0}}`, want: "images one many"},
	{name: "split", text: `{{(split "/" "a/b/c")._1}} {{$p := split ":" "nginx:1.27"}}{{$p._0}}`, want: "b nginx"},
	{name: "splitList", text: `{{splitList "/" "a/b/c" | join ","}} {{splitList "," "" | len}}`, want: "a,b,c 1"},
	{name: "join", text: `{{join "-" (list 1 .app.nope "2")}} {{join "," .app.status.images}} {{join "," "solo"}}`, want: "1-2 nginx:1.27,redis:7 solo"},
	{name: "toString toStrings", text: `{{toString 42 | printf "%q"}} {{list 1 .app.nope "b" | toStrings | printf "%q"}}`, want: `"42" ["1" "b"]`},
	{name: "print", text: `{{print "a" 1}} {{printf "%s-%d" "a" 2}} {{println "x"}}`, want: "a1 a-2 x\n"},
	{name: "print bounded", text: `{{$s := repeat 10000 "xxxxxxxxxx"}}{{$s = print $s $s $s $s $s $s $s $s $s $s $s}}`, wantErr: "print: result of 1100000 bytes is over the 1048576-byte limit"},
	// regular expressions
	{name: "regexMatch", text: `{{regexMatch "^v[0-9]+$" "v12"}} {{"1.27" | regexMatch "^[0-9.]+$"}} {{regexMatch "^x" "abc"}}`, want: "true true false"},
	{name: "regexFind", text: `{{regexFind "[a-zA-Z][1-9]" "abcd1234"}}`, want: "d1"},
	{name: "regexFindAll", text: `{{regexFindAll "[2468]" "123456789" -1}} {{regexFindAll "[2468]" "123456789" 2}}`, want: "[2 4 6 8] [2 4]"},
	{name: "regexReplaceAll", text: `{{regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W"}}`, want: "-W-xxW-"},
	{name: "regexReplaceAll bounded", text: `{{regexReplaceAll "" (repeat 2000 "x") (repeat 1000 "y")}}`, wantErr: "regexReplaceAll: result of"},
	{name: "regexSplit", text: `{{regexSplit "z+" "pizza" -1}}`, want: "[pi a]"},
	{name: "regexQuoteMeta", text: `{{regexQuoteMeta "1.2.3"}}`, want: `1\.2\.3`},
	{name: "bad regex", text: `{{regexMatch "[a" "x"}}`, wantErr: "regexMatch: error parsing regexp: missing closing ]"},
	// defaults and flow
	{name: "default", text: `{{default "none" .app.nope}} {{default "none" .app.metadata.name}} {{.app.nope | default "d"}} {{default "d" 0}} {{default "d" false}}`, want: "none guestbook d d d"},
	{name: "empty", text: `{{empty .app.nope}} {{empty ""}} {{empty (list)}} {{empty 0}} {{empty "x"}} {{empty .app.metadata}}`, want: "true true true true false false"},
	{name: "coalesce", text: `{{coalesce .app.nope "" 0 "x" "y"}}`, want: "x"},
	{name: "ternary", text: `{{ternary "yes" "no" true}} {{true | ternary "yes" "no"}} {{ternary "yes" "no" .app.nope}}`, want: "yes yes no"},
	{name: "required", text: `{{required "need a name" .app.metadata.name}}`, want: "guestbook"},
	{name: "required missing", text: `{{required "revision is required" .app.status.nope}}`, wantErr: "error calling required: revision is required"},
	{name: "required empty string", text: `{{required "x is required" ""}}`, wantErr: "x is required"},
	{name: "fail", text: `{{if not .app.status.nope}}{{fail "no status"}}{{end}}`, wantErr: "error calling fail: no status"},
	{name: "orEmpty", text: `[{{orEmpty .app.nope}}]{{orEmpty 0}}`, want: "[]0"},
	// lists
	{name: "list", text: `{{list 1 "a" .app.metadata.name}}`, want: "[1 a guestbook]"},
	{name: "first last", text: `{{list 1 2 3 | first}} {{list 1 2 3 | last}} [{{list | first}}] {{first "héllo"}} {{last .app.status.images}}`, want: "1 3 [] h redis:7"},
	{name: "first of a number", text: `{{first 5}}`, wantErr: "first: want a list, got int"},
	{name: "rest initial", text: `{{list 1 2 3 | rest}} {{list 1 2 3 | initial}} {{list | rest}} {{initial .app.nope}}`, want: "[2 3] [1 2] [] []"},
	{name: "append prepend concat", text: `{{append (list 1 2) 3}} {{prepend (list 1 2) 0}} {{concat (list 1) .app.status.images (list)}}`, want: "[1 2 3] [0 1 2] [1 nginx:1.27 redis:7]"},
	{name: "concat of nothing", text: `{{toJson (concat)}} {{toJson (concat (list) .app.nope)}} {{concat}} {{toJson (append (list) 1)}}`, want: "null null [] [1]"},
	{name: "concat bounded", text: `{{$l := until 10000}}{{concat $l (list 1)}}`, wantErr: "concat: list of 10001 elements is over the 10000-element limit"},
	{name: "append to a string", text: `{{append "abc" 1}}`, wantErr: "append: want a list, got string"},
	{name: "reverse", text: `{{list 1 2 3 | reverse}}`, want: "[3 2 1]"},
	{name: "compact", text: `{{list 1 0 "" "hello" .app.nope | compact}}`, want: "[1 hello]"},
	{name: "without", text: `{{without (list 1 2 3 1) 1 3}}`, want: "[2]"},
	{name: "has", text: `{{list 1 2 3 | has 1}} {{has 4 (list 1 2 3)}} {{has "redis:7" .app.status.images}} {{has "x" .app.nope}} {{has 3 .n.list}}`, want: "true false true false true"},
	{name: "uniq", text: `{{list 1 1 2 "a" "a" 1.0 (list 1) (list 1) | uniq}}`, want: "[1 2 a [1]]"},
	{name: "sortAlpha", text: `{{list "c" "a" "b" | sortAlpha}} {{list 2 10 1 | sortAlpha}} {{keys .labels | sortAlpha}}`, want: "[a b c] [1 10 2] [team tier]"},
	{name: "until", text: `{{range $i, $e := until 3}}{{$i}}{{$e}}{{end}} {{until -3}}`, want: "001122 [0 -1 -2]"},
	{name: "untilStep", text: `{{untilStep 3 6 1}} {{untilStep 0 -10 -2}} {{untilStep 3 0 1}} {{untilStep 3 99 0}}`, want: "[3 4 5] [0 -2 -4 -6 -8] [] []"},
	{name: "until bounded", text: `{{until 10001}}`, wantErr: "until: list of 10001 elements is over the 10000-element limit"},
	{name: "untilStep near the int limit", text: `{{untilStep 9223372036854775797 9223372036854775807 7}} {{untilStep -9223372036854775797 -9223372036854775808 -7}}`, want: "[9223372036854775797 9223372036854775804] [-9223372036854775797 -9223372036854775804]"},
	{name: "untilStep bounded without overflow", text: `{{untilStep -9223372036854775808 9223372036854775807 1}}`, wantErr: "untilStep: list of 18446744073709551615 elements"},
	{name: "seq", text: `{{seq 5}}|{{seq -3}}|{{seq 0 2}}|{{seq 2 -2}}|{{seq 0 2 10}}|{{seq 0 -2 -5}}|{{seq 3 3 2}}|{{seq}}|{{seq 1 2 3 4}}|{{seq 4 4}}`, want: "1 2 3 4 5|1 0 -1 -2 -3|0 1 2|2 1 0 -1 -2|0 2 4 6 8 10|0 -2 -4||||4"},
	{name: "seq near the int limit", text: `{{seq 9223372036854775797 7 9223372036854775806}}|{{seq 9223372036854775806 9223372036854775807}}`, want: "9223372036854775797 9223372036854775804|9223372036854775806 9223372036854775807"},
	{name: "seq bounded", text: `{{seq 0 100000}}`, wantErr: "seq: 100001 numbers are over the 10000-element limit"},
	// dicts
	{name: "dict get", text: `{{$d := dict "a" 1 "b" "two"}}{{get $d "b"}} [{{get $d "zz"}}] {{$d.a}} {{dict "k"}} {{get .labels "team"}}`, want: "two [] 1 map[k:] payments"},
	{name: "set", text: `{{$d := dict "a" 1}}{{$_ := set $d "b" 2}}{{$d}} {{set (dict) "x" 1}}`, want: "map[a:1 b:2] map[x:1]"},
	{name: "set on data", text: `{{set .app.metadata "name" "x"}}`, wantErr: "set: can only change a dict made in the template (dict, pick, omit, fromJson), got map[string]interface {}"},
	{name: "set a cycle", text: `{{$d := dict}}{{$_ := set $d "self" (list $d)}}`, wantErr: `set: the value of "self" contains the dict itself`},
	{name: "set a key that is no string", text: `{{set (dict) .app.nope 1}}`, wantErr: "set: the key is a <nil>, want a string"},
	{name: "unset a key that is no string", text: `{{unset (dict "1" 1) 1}}`, wantErr: "unset: the key is a int, want a string"},
	{name: "unset", text: `{{$d := dict "a" 1 "b" 2}}{{$_ := unset $d "a"}}{{$d}}`, want: "map[b:2]"},
	{name: "unset on data", text: `{{unset .labels "team"}}`, wantErr: "unset: can only change a dict made in the template"},
	{name: "hasKey", text: `{{hasKey .app.metadata "name"}} {{hasKey .app.metadata "nope"}} {{hasKey .labels "team"}} {{hasKey .app.nope "x"}}`, want: "true false true false"},
	{name: "keys values", text: `{{keys .labels}} {{keys (dict "b" 1) (dict "a" 2 "b" 3)}} {{values .labels}}`, want: "[team tier] [a b b] [payments web]"},
	{name: "keys of an empty dict", text: `{{toJson (keys (dict))}} {{toJson (keys .app.nope)}} {{keys (dict)}}`, want: "[] [] []"},
	{name: "keys of a list", text: `{{keys (list 1)}}`, wantErr: "keys: want a dict, got []interface {}"},
	{name: "pluck", text: `{{pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3)}} {{pluck "name" .app.metadata | first}}`, want: "[1 3] guestbook"},
	{name: "pick omit", text: `{{pick .app.metadata "name" "zz"}} {{omit .labels "team"}}`, want: "map[name:guestbook] map[tier:web]"},
	{name: "dig", text: `{{dig "status" "health" "status" "unknown" .app}} {{dig "status" "nope" "status" "unknown" .app}} {{.app | dig "metadata" "name" ""}} {{dig .app "metadata" "namespace"}}`, want: "Healthy unknown guestbook argocd"},
	{name: "dig too few", text: `{{dig 1}}`, wantErr: "dig: want KEY... DEFAULT DICT, got 1 arguments"},
	// numbers
	{name: "add", text: `{{add 1 2 3}} {{3 | add 1 2}} {{add .n.three 1}} {{add 1 2.9}} {{add "4" 1}} {{add1 .n.three}}`, want: "6 6 4 3 5 4"},
	{name: "sub mul", text: `{{sub 14 3}} {{3 | sub 14}} {{sub .n.half 1}} {{1 | mul "2" 3 "4"}} {{mul .n.three .n.half}}`, want: "11 11 1 24 6"},
	{name: "div mod", text: `{{4 | div 5}} {{div 7 2}} {{div -7 2}} {{mod 7 3}} {{mod .n.three 2}}`, want: "1 3 -3 1 1"},
	{name: "div by zero", text: `{{div 1 .app.nope}}`, wantErr: "div: division by zero"},
	{name: "mod by zero", text: `{{mod 1 0}}`, wantErr: "mod: division by zero"},
	{name: "max min", text: `{{max 1 345 5}} {{min 1 2 -3}} {{max 7}} {{max .n.three 2.9}}`, want: "345 -3 7 3"},
	{name: "conversions", text: `{{atoi "42"}} {{atoi "x"}} {{atoi .n.str}} {{int "12"}} {{int 3.9}} {{int64 .n.three}} {{float64 "2.5"}} {{float64 1}} {{int true}} {{int "junk"}}`, want: "42 0 42 12 3 3 2.5 1 1 0"},
	// encoding
	{name: "toJson", text: `{{toJson .app.status.health}} {{toJson "<a&b>"}} {{toRawJson "<a&b>"}}`, want: `{"status":"Healthy"} "\u003ca\u0026b\u003e" "<a&b>"`},
	{name: "toPrettyJson", text: `{{toPrettyJson (dict "a" 1)}}`, want: "{\n  \"a\": 1\n}"},
	{name: "fromJson", text: `{{$j := fromJson .json}}{{$j.a.b}} {{index $j "c"}} {{$_ := set $j "c" "e"}}{{$j.c}} [{{fromJson ""}}]`, want: "[1 x] <d> e []"},
	{name: "fromJson invalid", text: `{{fromJson "{bad"}}`, wantErr: "fromJson: invalid character"},
	{name: "toYaml", text: `{{toYaml .app.status.health}}|{{toYaml (dict "b" (list 1 2) "a" "x")}}`, want: "status: Healthy|a: x\nb:\n- 1\n- 2"},
	{name: "b64", text: `{{b64enc "coffee"}} {{b64dec "Y29mZmVl"}}`, want: "Y29mZmVl coffee"},
	{name: "b64dec invalid", text: `{{b64dec "!!"}}`, wantErr: "b64dec: illegal base64"},
	{name: "sha256sum urlquery", text: `{{sha256sum "hi"}} {{urlquery "a b&c"}}`, want: "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4 a+b%26c"},
	// time
	{name: "now date", text: `{{now | date "2006-01-02 15:04"}} {{date "15:04" .when}} {{date "2006" 0}} [{{date "2006" "junk"}}]`, want: "2026-11-23 10:00 08:30 1970 []"},
	{name: "dateInZone", text: `{{dateInZone "2006-01-02 15:04 MST" .when "Europe/Paris"}} {{dateInZone "15:04" .app.metadata.creationTimestamp "UTC"}}`, want: "2026-11-23 09:30 CET 09:00"},
	{name: "dateInZone unknown zone", text: `{{dateInZone "15:04" .when "Mars/Olympus"}}`, wantErr: `dateInZone: unknown time zone "Mars/Olympus"`},
	{name: "dateRFC3339", text: `{{dateRFC3339 .when}}`, want: "2026-11-23T08:30:00Z"},
	{name: "toDate", text: `{{toDate "2006-01-02" "2017-12-31" | date "02/01/2006"}}`, want: "31/12/2017"},
	{name: "toDate invalid", text: `{{toDate "2006-01-02" "31.12.2017"}}`, wantErr: "toDate: parsing time"},
	{name: "unixEpoch", text: `{{unixEpoch .when}} {{unixEpoch .app.metadata.creationTimestamp}} [{{unixEpoch "junk"}}]`, want: "1795422600 1795424400 []"},
	{name: "ago", text: `{{ago .when}} {{ago .app.metadata.creationTimestamp}}`, want: "1h30m0s 1h0m0s"},
	{name: "duration", text: `{{duration 95}} {{duration "95"}} {{duration .n.three}}`, want: "1m35s 1m35s 3s"},
	{name: "durationRound", text: `{{durationRound "2h10m5s"}} {{durationRound "2400h10m5s"}} {{durationRound .dur}} {{durationRound .when}} {{durationRound "24h5s"}} {{durationRound "-3h30m"}} {{durationRound "junk"}}`, want: "2h 3mo 1h 1h 1d 3h 0s"},
	// repository URLs
	{name: "repo", text: `{{.app.spec.source.repoURL | repoURLToHTTPS}} {{repoFullName .app.spec.source.repoURL}}`, want: "https://github.com/org/guestbook org/guestbook"},
}

func TestFuncs(t *testing.T) {
	for _, tt := range funcTests {
		t.Run(tt.name, func(t *testing.T) {
			checkRender(t, tt.text, funcVars(), tt.want, tt.wantErr)
		})
	}
}

// checkRender renders text as a message with vars at fixedNow and compares
// the message, or the error when wantErr is set.
func checkRender(t *testing.T, text string, vars map[string]any, want, wantErr string) {
	t.Helper()
	n, err := render.Once(notify.Template{Name: "t", Message: text}, vars, render.WithClock(func() time.Time { return fixedNow }))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, n.Message); diff != "" {
		t.Errorf("%s (-want +got):\n%s", text, diff)
	}
}

// TestFuncTestsCoverEveryFunction keeps funcTests honest: every function a
// template may call is exercised by at least one row.
func TestFuncTestsCoverEveryFunction(t *testing.T) {
	for _, name := range config.TemplateFuncNames {
		call := regexp.MustCompile(`(\{\{-?|\(|\|)\s*` + regexp.QuoteMeta(name) + `(\s|\}\}|\))`)
		if !slices.ContainsFunc(funcTests, func(tt struct{ name, text, want, wantErr string }) bool {
			return call.MatchString(tt.text)
		}) {
			t.Errorf("no funcTests row calls %s", name)
		}
	}
}

// TestSetNeverWritesData: set and unset refuse the variables a render is
// given, which are shared with the informer's cache and other renders.
func TestSetNeverWritesData(t *testing.T) {
	vars := funcVars()
	for _, text := range []string{`{{set .app.metadata "name" "x"}}`, `{{unset .app.metadata "name"}}`, `{{$m := .app.metadata}}{{$_ := set $m "name" "x"}}`} {
		if _, err := render.Once(notify.Template{Name: "t", Message: text}, vars); err == nil {
			t.Errorf("%s rendered, want an error", text)
		}
	}
	if got := vars["app"].(map[string]any)["metadata"].(map[string]any)["name"]; got != "guestbook" {
		t.Errorf("app name is %v after the renders, want guestbook", got)
	}
}
