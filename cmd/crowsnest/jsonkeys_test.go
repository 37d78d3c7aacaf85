package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/notifycmd"
	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/testcmd"
	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/windowscmd"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/demo"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// lowerCamelRE is the key style of all of crowsnest's JSON output, as
// Kubernetes' and Argo CD's JSON use.
var lowerCamelRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// TestJSONOutputKeysAreLowerCamel walks the JSON of every command that
// prints JSON (test -o json, windows -o json, notify log -o json, notify
// redeliver -o json, run --dry-run --plan-format json, demo -o json), each
// with every field filled so omitempty ones show too, and checks every
// key's style. A new field without a lowerCamel json tag fails here.
func TestJSONOutputKeysAreLowerCamel(t *testing.T) {
	outputs := map[string]any{
		"test -o json":                     &testcmd.Report{},
		"windows -o json":                  &windowscmd.Report{},
		"notify log -o json":               &[]outbox.Record{},
		"notify redeliver -o json":         &outbox.Record{},
		"run --dry-run --plan-format json": &imageupdate.WritePlan{},
		"demo -o json":                     &demo.Report{},
		"notify send -o json":              &notifycmd.SendReport{},
	}
	for name, v := range outputs {
		t.Run(name, func(t *testing.T) {
			fill(reflect.ValueOf(v).Elem(), 0)
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			checkJSONKeys(t, b)
		})
	}
}

// TestWindowsJSONKeysAreLowerCamel checks the keys of a real run of
// `crowsnest windows -o json` with Applications and a window.
func TestWindowsJSONKeysAreLowerCamel(t *testing.T) {
	dir := t.TempDir()
	apps := filepath.Join(dir, "apps")
	if err := os.Mkdir(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apps, "apps.yaml"), []byte(windowsApps), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "crowsnest.yaml")
	if err := os.WriteFile(cfg, []byte(windowsConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// The fixture holds an invalid window on purpose (the command then
	// exits non-zero); the report is printed all the same.
	stdout, stderr, _ := execute(t, "windows", "--config", cfg, "--apps-dir", apps, "-o", "json")
	if !strings.Contains(stdout, `"applications"`) || !strings.Contains(stdout, `"problems"`) {
		t.Fatalf("want applications and problems in:\n%s\n%s", stdout, stderr)
	}
	checkJSONKeys(t, []byte(stdout))
}

// checkJSONKeys fails for every object key in data (any depth) that is not
// lowerCamel, naming where it is.
func checkJSONKeys(t *testing.T, data []byte) {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !lowerCamelRE.MatchString(k) {
					t.Errorf("key %q at %s is not lowerCamel", k, path)
				}
				walk(e, path+"."+k)
			}
		case []any:
			for _, e := range v {
				walk(e, path+"[]")
			}
		}
	}
	walk(v, "$")
}

// fill sets every field reachable from v to a non-zero value (slices and
// maps get one element, map keys are "key"), so that no omitempty field
// hides from the key check. JSON-valued fields get an empty object.
func fill(v reflect.Value, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)))
		return
	case reflect.TypeFor[json.RawMessage]():
		v.Set(reflect.ValueOf(json.RawMessage(`{}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		if k.Kind() == reflect.String {
			k.SetString("key")
		}
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
