package lint_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architectureDoc is the map the test keeps true; the HTML comment at its
// top says what the test reads.
const architectureDoc = "docs/architecture.md"

var (
	// htmlComment is a comment in the doc, which the checks skip: the
	// doc's own description of them shows examples.
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	// backticked is one span in backticks.
	backticked = regexp.MustCompile("`([^`\n]+)`")
	// goFileRef is a path with at least one directory that ends in .go.
	goFileRef = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+\.go$`)
	// fileAndName is a backticked .go path followed, after spaces only,
	// by a backticked Go name or Type.Method.
	fileAndName = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.go)` +`([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`")
)

// TestArchitectureMapPackages fails for every Go package of the module
// that the package table of docs/architecture.md does not name, and for
// every name in it that is no package: a map with a room missing sends
// a newcomer looking in the wrong place.
func TestArchitectureMapPackages(t *testing.T) {
	root := moduleRoot(t)
	doc := readDoc(t, root)
	listed := tablePackages(t, doc)

	cmd := exec.CommandContext(t.Context(), "go", "list", "-e", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	module := modulePath(t, root)
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if rel, ok := strings.CutPrefix(line, module+"/"); ok {
			pkgs = append(pkgs, rel)
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list ./... named no package of %s", module)
	}
	for _, p := range pkgs {
		if !slices.Contains(listed, p) {
			t.Errorf("%s: package %s is missing from the package table: add a row (or add it to a row) saying what it does", architectureDoc, p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(pkgs, p) {
			t.Errorf("%s: the package table names %s, which is not a package of the module", architectureDoc, p)
		}
	}
}

// TestArchitectureMapFiles fails for every file path the map names that
// no longer exists, and for every name given next to a file that the
// file does not declare.
func TestArchitectureMapFiles(t *testing.T) {
	root := moduleRoot(t)
	doc := readDoc(t, root)

	var files []string
	for _, m := range backticked.FindAllStringSubmatch(doc, -1) {
		if goFileRef.MatchString(m[1]) && !slices.Contains(files, m[1]) {
			files = append(files, m[1])
		}
	}
	if len(files) == 0 {
		t.Fatalf("%s names no file; the check would pass on anything", architectureDoc)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			t.Errorf("%s names %s, which does not exist: %v", architectureDoc, f, err)
		}
	}

	decls := map[string][]string{} // file -> its top-level names
	seen := map[string]bool{}
	for _, m := range fileAndName.FindAllStringSubmatch(doc, -1) {
		file, name := m[1], m[2]
		if seen[file+" "+name] {
			continue
		}
		seen[file+" "+name] = true
		names, ok := decls[file]
		if !ok {
			names = declared(filepath.Join(root, filepath.FromSlash(file)))
			decls[file] = names
		}
		if names == nil {
			continue // reported above: the file does not exist
		}
		if !slices.Contains(names, name) {
			t.Errorf("%s names %s next to %s, which does not declare it", architectureDoc, name, file)
		}
	}
}

// readDoc returns docs/architecture.md without its HTML comments.
func readDoc(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(architectureDoc)))
	if err != nil {
		t.Fatal(err)
	}
	return htmlComment.ReplaceAllString(string(data), "")
}

// tablePackages returns the backticked names in the first column of the
// table under "## Packages".
func tablePackages(t *testing.T, doc string) []string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		t.Fatalf("%s has no \"## Packages\" section", architectureDoc)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: the package table names no package", architectureDoc)
	}
	return out
}

// modulePath is the module line of root's go.mod.
func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// declared returns the top-level names of a Go file: funcs, types, vars
// and consts as Name, methods as Type.Method. It returns nil when the
// file cannot be read or parsed.
func declared(path string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	names := []string{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				names = append(names, d.Name.Name)
				continue
			}
			names = append(names, receiverType(d.Recv.List[0].Type)+"."+d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// receiverType is the name of a method's receiver type, without pointer
// or type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
