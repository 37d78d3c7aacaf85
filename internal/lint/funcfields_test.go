package lint_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// funcFieldsAllowed lists the exported func-typed fields of exported
// structs that stay, each with its reason; the key is
// "dir/of/package.Struct.Field" from the module root. Every other such
// field is a dependency an editor cannot follow: make it a small named
// interface, declared by the package that calls it and passed to the
// constructor (docs/architecture.md, rules of the house).
var funcFieldsAllowed = map[string]string{
	// Clocks: a test's fake time, nil is time.Now.
	"controller.ImageReconciler.Now":            "clock",
	"controller.WindowTimer.Now":                "clock",
	"controller/imageupdaters.StatusWriter.Now": "clock",
	"notify/outbox.Outbox.Now":                  "clock",
	"notify/pipeline.Notifier.Now":              "clock",
	"notify/pipeline.Repo.Now":                  "clock",
	"notify/services/svc.Options.Now":           "clock",
	"registry.Client.Now":                       "clock",
	"registry.Poller.Now":                       "clock",
	"registry/creds.Resolver.Now":               "clock",
	// The config in force: a getter, as a reload swaps the config.
	"controller.Engine.Config":        "config getter",
	"controller.PolicySource.Config":  "config getter",
	"controller.WindowSource.Config":  "config getter",
	"controller/tenancy.Rules.Config": "config getter",
	// Constructor tables: a Kind (with its servicetypes.Type) is one
	// service type's row: how to read its settings and build its
	// sender, not a dependency wired by a builder.
	"notify/services/svc.Kind.New":           "constructor table",
	"notify/services/svc.Kind.BlockDefaults": "constructor table",
	"notify/services/svc.Kind.Repository":    "constructor table",
	"config/servicetypes.Type.Settings":      "constructor table",
	"config/servicetypes.Type.Block":         "constructor table",
	// One selection's lookups, built per call by the caller (like
	// MetadataFunc, which Select already takes), never wired into a
	// long-lived component.
	"registry/policy.Facts.Metadata": "per-call lookup",
	"registry/policy.Facts.Verify":   "per-call lookup",
	// strictyaml's hooks into the decoder's walk of one document.
	"config/internal/strictyaml.Decoder.Report": "decoder hook",
	"config/internal/strictyaml.Decoder.Self":   "decoder hook",
	"config/internal/strictyaml.Decoder.Extra":  "decoder hook",
	// Test support: a test's own answer, never wired by the daemon.
	"internal/testnotify.RecorderOptions.Answer":        "test support",
	"internal/testwait.Wait.Detail":                     "test support",
	"notify/services/internal/svctest.Sink.Route":       "test support",
	"notify/services/internal/svctest.StatusCase.Setup": "test support",
	"notify/services/internal/svctest.StatusCase.Route": "test support",
	// Left for their owners.
	"registry/creds.Resolver.LookupEnv": "os.LookupEnv, replaced only by tests",
}

// funcFieldsSkipped are folders from the module root whose code the
// check does not read: the benchmark driver and scripts, and
// test/conformance, a module of its own.
var funcFieldsSkipped = []string{"bench/", "hack/", "test/conformance/"}

// TestNoExportedFuncFields fails for every exported func-typed field of
// an exported struct in the module's non-test code (a func type, or a
// type of the module declared as one) that funcFieldsAllowed does not
// list, and for every entry of the list that no longer names such a
// field, so that the list stays true.
func TestNoExportedFuncFields(t *testing.T) {
	root := moduleRoot(t)
	module := modulePath(t, root)
	pkgs := map[string]*parsedPkg{} // dir -> its files
	err := walkGoFiles(root, func(p, rel string) error {
		if strings.HasSuffix(rel, "_test.go") || slices.ContainsFunc(funcFieldsSkipped, func(s string) bool { return strings.HasPrefix(rel, s) }) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		pkg := pkgs[dir]
		if pkg == nil {
			pkg = &parsedPkg{name: f.Name.Name, funcTypes: map[string]bool{}}
			pkgs[dir] = pkg
		}
		pkg.files = append(pkg.files, f)
		for _, name := range funcTypeDecls(f) {
			pkg.funcTypes[name] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for dir, pkg := range pkgs {
		for _, f := range pkg.files {
			imports := moduleImports(f, module, pkgs)
			isFunc := func(e ast.Expr) bool {
				switch e := e.(type) {
				case *ast.FuncType:
					return true
				case *ast.Ident:
					return pkg.funcTypes[e.Name]
				case *ast.SelectorExpr:
					x, ok := e.X.(*ast.Ident)
					return ok && imports[x.Name] != nil && imports[x.Name].funcTypes[e.Sel.Name]
				}
				return false
			}
			for _, field := range exportedStructFields(f) {
				if isFunc(field.typ) {
					found = append(found, dir+"."+field.name)
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("no exported func field found; the check would pass on anything")
	}
	slices.Sort(found)
	for _, f := range found {
		if _, ok := funcFieldsAllowed[f]; !ok {
			t.Errorf("%s is an exported func field: make it a small named interface passed to the constructor, or add it to funcFieldsAllowed with the reason it stays", f)
		}
	}
	for f, why := range funcFieldsAllowed {
		if why == "" {
			t.Errorf("funcFieldsAllowed lists %s without a reason", f)
		}
		if !slices.Contains(found, f) {
			t.Errorf("funcFieldsAllowed lists %s, which is no longer an exported func field: remove the entry", f)
		}
	}
}

// parsedPkg is one package's non-test files and the names of the func
// types it declares.
type parsedPkg struct {
	name      string
	files     []*ast.File
	funcTypes map[string]bool
}

// structField is "Struct.Field" and the field's type.
type structField struct {
	name string
	typ  ast.Expr
}

// typeSpecs yields the types a file declares at its top level.
func typeSpecs(f *ast.File) iter.Seq[*ast.TypeSpec] {
	return func(yield func(*ast.TypeSpec) bool) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				if !yield(s.(*ast.TypeSpec)) {
					return
				}
			}
		}
	}
}

// funcTypeDecls returns the names of the types a file declares as func
// types (type Option func(*T) error).
func funcTypeDecls(f *ast.File) []string {
	var out []string
	for ts := range typeSpecs(f) {
		if _, ok := ts.Type.(*ast.FuncType); ok && ts.Assign == 0 {
			out = append(out, ts.Name.Name)
		}
	}
	return out
}

// exportedStructFields returns the exported fields of the exported
// structs a file declares at its top level.
func exportedStructFields(f *ast.File) []structField {
	var out []structField
	for ts := range typeSpecs(f) {
		st, ok := ts.Type.(*ast.StructType)
		if !ok || !ts.Name.IsExported() {
			continue
		}
		for _, field := range st.Fields.List {
			for _, n := range field.Names {
				if n.IsExported() {
					out = append(out, structField{name: ts.Name.Name + "." + n.Name, typ: field.Type})
				}
			}
		}
	}
	return out
}

// moduleImports maps the names a file uses for the module's packages it
// imports to those packages.
func moduleImports(f *ast.File, module string, pkgs map[string]*parsedPkg) map[string]*parsedPkg {
	out := map[string]*parsedPkg{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		dir, ok := strings.CutPrefix(p, module+"/")
		if !ok || pkgs[dir] == nil {
			continue
		}
		name := pkgs[dir].name
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = pkgs[dir]
	}
	return out
}
