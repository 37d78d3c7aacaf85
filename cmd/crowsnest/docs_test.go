package main

// docs/ is the reference for every CLI flag, annotation and metric, and
// README.md links to it; these tests read the code's own lists and fail,
// naming what is missing and where it goes, when the docs fall behind.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowsnest-dev/crowsnest/config/reload"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/webhook"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

const moduleRoot = "../.."

// The docs pages that hold each reference, relative to the module root.
const (
	commandsDoc      = "docs/commands.md"
	imageUpdatesDoc  = "docs/image-updates.md"
	notificationsDoc = "docs/notifications.md"
	operationsDoc    = "docs/operations.md"
)

// doc returns the text of a file under the module root (a docs page, or
// README.md).
func doc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// section returns the part of the markdown text under the heading line
// exactly equal to heading, up to the next heading of the same or a higher
// level. A missing heading fails the test: the page's structure is part of
// what these tests rely on. name is the file, for the message.
func section(t *testing.T, name, text, heading string) string {
	t.Helper()
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != heading {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if h := strings.IndexFunc(lines[j], func(r rune) bool { return r != '#' }); h > 0 && h <= level && strings.HasPrefix(lines[j][h:], " ") {
				end = j
				break
			}
		}
		return strings.Join(lines[i+1:end], "\n")
	}
	t.Fatalf("%s has no %q heading", name, heading)
	return ""
}

// mentions reports whether text contains word with no name character
// right after it ("--namespace" is not mentioned by "--namespaces").
func mentions(text, word string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(word) + `([^A-Za-z0-9_-]|$)`).MatchString(text)
}

// flagSections says where the flags of a command are documented: the
// commands with their own section of docs/commands.md; every other command
// has its own row in the table of its "## Commands" section.
var flagSections = map[string]string{
	"crowsnest run":  "## `crowsnest run` flags",
	"crowsnest test": "## `crowsnest test`",
}

const commandsSection = "## Commands"

// commandRow returns the row of the Commands table for the command path
// ("| `crowsnest notify log ...` | ... |").
func commandRow(table, path string) (string, bool) {
	for _, l := range strings.Split(table, "\n") {
		rest, ok := strings.CutPrefix(l, "| `"+path)
		if ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "`")) {
			return l, true
		}
	}
	return "", false
}

func TestDocsDocumentEveryFlag(t *testing.T) {
	text := doc(t, commandsDoc)
	commands := section(t, commandsDoc, text, commandsSection)
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() {
			return
		}
		path := c.CommandPath()
		var ref, where string
		if heading, ok := flagSections[path]; ok {
			ref, where = section(t, commandsDoc, text, heading), "the flag table of "+commandsDoc+" section "+strconv.Quote(heading)
		} else {
			row, ok := commandRow(commands, path)
			if !ok {
				t.Errorf("`%s` has no row in the table of %s section %q: add `| `%s [flags]` | what it does |`", path, commandsDoc, commandsSection, path)
				return
			}
			ref, where = row, "the `"+path+"` row of the table in "+commandsDoc+" section "+strconv.Quote(commandsSection)
		}
		flags := pflag.NewFlagSet(path, pflag.ContinueOnError)
		flags.AddFlagSet(c.LocalFlags())
		flags.AddFlagSet(c.InheritedFlags())
		flags.VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			checked++
			if !mentions(ref, "--"+f.Name) {
				t.Errorf("`%s --%s` (%s) is not documented: add `--%s` to %s", path, f.Name, f.Usage, f.Name, where)
			}
			if f.Shorthand != "" && !regexp.MustCompile("(^|[\\s`\\[(,|])-"+f.Shorthand+"([\\s,`\\]|)\\\\]|$)").MatchString(ref) {
				t.Errorf("`%s -%s` (shorthand of --%s) is not documented: add `-%s` next to `--%s` in %s", path, f.Shorthand, f.Name, f.Shorthand, f.Name, where)
			}
		})
	}
	walk(newRootCommand())
	if checked < 20 {
		t.Fatalf("walked only %d flags; the command tree was not read", checked)
	}
}

// annotationForm is how the annotation table of docs/image-updates.md
// writes a key: with
// an optional alias when it works per image and app-wide, with a required
// one when it works only per image.
func annotationForm(key string) (string, bool) {
	app := imageupdate.KeyKind(imageupdate.Prefix+key) == key
	image := imageupdate.KeyKind(imageupdate.Prefix+"alias."+key) == key
	switch {
	case app && image:
		return "`[<alias>.]" + key + "`", true
	case image:
		return "`<alias>." + key + "`", true
	case app:
		return "`" + key + "`", true
	}
	return "", false
}

// annotationKeys returns the values of the Key* constants of
// controller/imageupdate/annotations.go: every annotation key crowsnest
// reads after argocd-image-updater's prefix.
func annotationKeys(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(moduleRoot, "controller", "imageupdate", "annotations.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Key") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, v)
			}
		}
	}
	return keys
}

func TestDocsDocumentEveryAnnotation(t *testing.T) {
	images := section(t, imageUpdatesDoc, doc(t, imageUpdatesDoc), "## Annotations")
	notifications := doc(t, notificationsDoc)
	keys := annotationKeys(t)
	if len(keys) < 10 {
		t.Fatalf("found only %d annotation keys in controller/imageupdate/annotations.go: %v", len(keys), keys)
	}
	for _, k := range keys {
		form, known := annotationForm(k)
		if !known {
			t.Errorf("annotation key %q is a Key constant in controller/imageupdate/annotations.go but imageupdate.KeyKind does not know it", k)
			continue
		}
		if !strings.Contains(images, form) {
			t.Errorf("annotation %s%s is not documented: add a row with %s to the annotation table in %s section \"## Annotations\"", imageupdate.Prefix, k, form, imageUpdatesDoc)
		}
	}
	for _, a := range []string{
		triggers.SubscribePrefix + "<trigger>.<service>",
		triggers.SubscribePrefix + "<service>",
		triggers.SubscriptionsAnnotation,
	} {
		if !strings.Contains(notifications, "`"+a+"`") {
			t.Errorf("annotation %s is not documented: add `%s` to the subscription table of %s", a, a, notificationsDoc)
		}
	}
}

// describing is a Registerer that also collects the name of every metric
// a collector describes: vectors appear in Gather only once a label set is
// used, but Describe names them all.
type describing struct {
	reg   *prometheus.Registry
	names map[string]bool
}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for desc := range ch {
		// Desc has no name getter; its String is stable and names it.
		if m := fqNameRE.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		} else {
			d.names["unparsed "+desc.String()] = true
		}
	}
	return d.reg.Register(c)
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

func (d *describing) Unregister(c prometheus.Collector) bool { return d.reg.Unregister(c) }

// registeredMetrics builds every metric set `crowsnest run` builds (see
// run.go, registries.go, notifications.go) on a fresh registry and returns
// the names of all the metrics.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	d := &describing{reg: prometheus.NewRegistry(), names: map[string]bool{}}
	d.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reload.NewMetrics(d)
	controller.NewMetrics(d)
	controller.NewImageMetrics(d)
	controller.NewWindowMetrics(d)
	pipeline.NewMetrics(d)
	registry.NewMetrics(d)
	webhook.NewMetrics(d)
	outbox.NewMetrics(d)
	gitwb.NewMetrics(d)
	watcher.NewMetrics(d)
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		d.names[mf.GetName()] = true
	}
	for n := range d.names {
		if strings.HasPrefix(n, "unparsed ") {
			t.Fatalf("cannot read the metric name from %s", n)
		}
	}
	return d.names
}

// definedMetricNames finds every `Name: "crowsnest_..."` in the module's
// non-test Go files, so a metric set registeredMetrics does not build is
// checked too.
func definedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	err := filepath.WalkDir(moduleRoot, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name := e.Name(); path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if id, ok := kv.Key.(*ast.Ident); !ok || id.Name != "Name" {
				return true
			}
			if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "crowsnest_") {
					found[v] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestDocsDocumentEveryMetric(t *testing.T) {
	metrics := section(t, operationsDoc, doc(t, operationsDoc), "## Metrics")
	// The metric sets `crowsnest run` builds, and every metric name
	// written in the module's code, in case a set is missing above.
	names := registeredMetrics(t)
	for name := range definedMetricNames(t) {
		names[name] = true
	}
	sorted := slices.Sorted(maps.Keys(names))
	crowsnest := 0
	for _, name := range sorted {
		switch {
		case strings.HasPrefix(name, "crowsnest_"):
			crowsnest++
			if !mentions(metrics, "`"+name) {
				t.Errorf("metric %s is not documented: add `%s{<labels>}` and its meaning to the table in %s section \"## Metrics\"", name, name, operationsDoc)
			}
		case strings.HasPrefix(name, "go_"), strings.HasPrefix(name, "process_"):
			prefix := name[:strings.Index(name, "_")+1]
			if !strings.Contains(metrics, "`"+prefix+"*`") {
				t.Errorf("metric %s is not documented: %s section \"## Metrics\" should list `%s*` under the Go and process collectors", name, operationsDoc, prefix)
			}
		default:
			t.Errorf("metric %s has no crowsnest_, go_ or process_ prefix", name)
		}
	}
	if crowsnest < 30 {
		t.Fatalf("found only %d crowsnest metrics; the metric sets were not built", crowsnest)
	}
}
