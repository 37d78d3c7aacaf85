package render

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Source types, as Argo CD names them (AppDetail.Type).
const (
	SourceHelm      = "Helm"
	SourceKustomize = "Kustomize"
	SourceDirectory = "Directory"
	SourcePlugin    = "Plugin"
)

// kustomizationNames are the file names kustomize reads, as Argo CD
// recognizes them.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// SourceFiles is what BuildAppDetail needs of a source's directory at its
// revision: whether it exists, the files directly in it, and the contents
// of those SourceReads asked for (by name, value files by their
// repository path with a leading "/").
type SourceFiles struct {
	Found bool
	Names []string
	Files map[string][]byte
}

// NeedsRepo reports whether GetAppDetails must read the source's
// repository: not for a chart from a Helm repository.
func NeedsRepo(source map[string]any) bool { return fieldStr(source, "chart") == "" }

// SourceReads returns what BuildAppDetail reads of source's directory:
// the file names (kustomization, values.yaml) and the selected value
// files (spec.source.helm.valueFiles relative to the source's path; URLs
// and $ref files are not read).
func SourceReads(source map[string]any) (read func(name string) bool, extra []string) {
	read = func(name string) bool {
		return name == "values.yaml" || isKustomization(name)
	}
	helm, _ := source["helm"].(map[string]any)
	vfs, _ := helm["valueFiles"].([]any)
	for _, v := range vfs {
		vf, _ := v.(string)
		if vf == "" || strings.Contains(vf, "://") || strings.HasPrefix(vf, "$") {
			continue
		}
		extra = append(extra, path.Clean("/"+path.Join(fieldStr(source, "path"), vf)))
	}
	return read, extra
}

func isKustomization(name string) bool {
	for _, k := range kustomizationNames {
		if name == k {
			return true
		}
	}
	return false
}

// BuildAppDetail answers GetAppDetails for source (an Application's
// spec.source, or spec.sources[0]) from its files, as Argo CD's repo
// server does without running Helm or kustomize: the type from the
// source's explicit helm/kustomize/directory/plugin field, else from the
// directory (a kustomization wins over a Chart.yaml), else Directory.
// For Helm: the values files in the directory, values.yaml's text, the
// parameters of values.yaml and the selected value files flattened, the
// file parameters and the Application's parameter overrides. For
// Kustomize: the images the kustomization sets, with the Application's
// image overrides applied.
func BuildAppDetail(source map[string]any, f SourceFiles) (AppDetail, error) {
	typ, err := sourceType(source, f)
	if err != nil {
		return AppDetail{}, err
	}
	d := AppDetail{Type: typ}
	switch typ {
	case SourceHelm:
		d.Helm, err = helmDetail(source, f)
	case SourceKustomize:
		d.Kustomize, err = kustomizeDetail(source, f)
	case SourceDirectory:
		d.Directory = &DirectoryAppSpec{}
	}
	return d, err
}

func sourceType(source map[string]any, f SourceFiles) (string, error) {
	var explicit []string
	for _, k := range []struct{ field, typ string }{
		{"kustomize", SourceKustomize}, {"helm", SourceHelm}, {"directory", SourceDirectory}, {"plugin", SourcePlugin},
	} {
		if v, ok := source[k.field]; ok && v != nil {
			explicit = append(explicit, k.typ)
		}
	}
	switch {
	case len(explicit) > 1:
		return "", fmt.Errorf("multiple application sources defined: %s", strings.Join(explicit, ","))
	case len(explicit) == 1:
		return explicit[0], nil
	case !NeedsRepo(source):
		return SourceHelm, nil
	case !f.Found:
		return "", fmt.Errorf("path %q not found in the repository", fieldStr(source, "path"))
	}
	typ := SourceDirectory
	names := append([]string(nil), f.Names...)
	sort.Strings(names) // Argo CD walks the directory in lexical order; the last match wins
	for _, n := range names {
		if strings.HasSuffix(n, "Chart.yaml") {
			typ = SourceHelm
		}
		if isKustomization(n) {
			typ = SourceKustomize
		}
	}
	return typ, nil
}

func helmDetail(source map[string]any, f SourceFiles) (*CustomHelmAppSpec, error) {
	h := &CustomHelmAppSpec{}
	for _, n := range f.Names {
		ext := strings.ToLower(path.Ext(n))
		if strings.Contains(n, "values") && (ext == ".yaml" || ext == ".yml") {
			h.HelmAppSpec.ValueFiles = append(h.HelmAppSpec.ValueFiles, n)
		}
	}
	params := map[string]string{}
	if v, ok := f.Files["values.yaml"]; ok {
		h.HelmAppSpec.Values = string(v)
		if err := flattenValues(v, params); err != nil {
			return nil, fmt.Errorf("values.yaml: %w", err)
		}
	}
	_, extra := SourceReads(source)
	for _, p := range extra {
		if v, ok := f.Files[p]; ok {
			if err := flattenValues(v, params); err != nil {
				return nil, fmt.Errorf("%s: %w", strings.TrimPrefix(p, "/"), err)
			}
		}
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		h.HelmAppSpec.Parameters = append(h.HelmAppSpec.Parameters, &HelmParameter{Name: k, Value: params[k]})
	}
	helm, _ := source["helm"].(map[string]any)
	for _, p := range mapList(helm, "fileParameters") {
		h.HelmAppSpec.FileParameters = append(h.HelmAppSpec.FileParameters, &HelmFileParameter{Name: fieldStr(p, "name"), Path: fieldStr(p, "path")})
	}
	for _, p := range mapList(helm, "parameters") {
		fs, _ := p["forceString"].(bool)
		h.HelmParameterOverrides = append(h.HelmParameterOverrides, HelmParameter{Name: fieldStr(p, "name"), Value: fieldStr(p, "value"), ForceString: fs})
	}
	return h, nil
}

// flattenValues adds values' leaves to out as Argo CD flattens them:
// keys joined with ".", list items as name[i], values printed with %v
// (numbers as JSON reads them).
func flattenValues(values []byte, out map[string]string) error {
	m := map[string]any{}
	if err := yaml.Unmarshal(values, &m); err != nil {
		return err
	}
	flatten(m, out, nil)
	return nil
}

func flatten(v any, out map[string]string, prefix []string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			flatten(e, out, append(append([]string(nil), prefix...), k))
		}
	case []any:
		if len(prefix) == 0 {
			return
		}
		for i, e := range t {
			p := append([]string(nil), prefix...)
			p[len(p)-1] = fmt.Sprintf("%s[%d]", p[len(p)-1], i)
			flatten(e, out, p)
		}
	default:
		out[strings.Join(prefix, ".")] = fmt.Sprintf("%v", t)
	}
}

func kustomizeDetail(source map[string]any, f SourceFiles) (*KustomizeAppSpec, error) {
	k := &KustomizeAppSpec{}
	type image struct{ name, ref string }
	var images []image
	for _, n := range kustomizationNames {
		text, ok := f.Files[n]
		if !ok {
			continue
		}
		var kz struct {
			Images []struct {
				Name    string `json:"name"`
				NewName string `json:"newName"`
				NewTag  string `json:"newTag"`
				Digest  string `json:"digest"`
			} `json:"images"`
		}
		if err := yaml.Unmarshal(text, &kz); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		for _, i := range kz.Images {
			ref := i.Name
			if i.NewName != "" {
				ref = i.NewName
			}
			if i.NewTag != "" {
				ref += ":" + i.NewTag
			}
			if i.Digest != "" {
				ref += "@" + i.Digest
			}
			images = append(images, image{name: i.Name, ref: ref})
		}
		break
	}
	kust, _ := source["kustomize"].(map[string]any)
	overrides, _ := kust["images"].([]any)
	for _, o := range overrides {
		s, _ := o.(string)
		if s == "" {
			continue
		}
		name, ref, ok := strings.Cut(s, "=")
		if !ok {
			ref = s
			name = imageName(s)
		}
		replaced := false
		for i := range images {
			if images[i].name == name {
				images[i].ref, replaced = ref, true
			}
		}
		if !replaced {
			images = append(images, image{name: name, ref: ref})
		}
	}
	for _, i := range images {
		k.Images = append(k.Images, i.ref)
	}
	return k, nil
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func fieldStr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func mapList(m map[string]any, k string) []map[string]any {
	l, _ := m[k].([]any)
	var out []map[string]any
	for _, e := range l {
		if em, ok := e.(map[string]any); ok {
			out = append(out, em)
		}
	}
	return out
}
