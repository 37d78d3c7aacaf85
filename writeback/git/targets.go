package git

import (
	"fmt"
	"strings"
)

// TargetKind is where an Application's image overrides are written.
type TargetKind int

// Write-back targets, as argocd-image-updater's write-back-target names
// them: the parameter-override file Argo CD reads next to the source
// (default), a kustomization's images list, or a Helm values file.
const (
	TargetArgoCDSource TargetKind = iota
	TargetKustomization
	TargetHelmValues
)

func (k TargetKind) String() string {
	switch k {
	case TargetKustomization:
		return "kustomization"
	case TargetHelmValues:
		return "helmvalues"
	default:
		return "argocd-source"
	}
}

// SourceType is the Application source's tool; it decides which section of
// .argocd-source-<app>.yaml is written.
type SourceType int

// Source tools.
const (
	SourceKustomize SourceType = iota
	SourceHelm
)

// Image is one image update.
type Image struct {
	// Alias is the image-list alias, for messages only.
	Alias string
	// Name is the image repository as deployed, e.g. ghcr.io/org/app.
	Name string
	// KustomizeName is the kustomize images[].name the update applies to
	// (argocd-image-updater's kustomize.image-name); "" means Name.
	KustomizeName string
	// NewName replaces the repository (kustomize newName); "" keeps Name.
	NewName string
	NewTag  string
	Digest  string
	// HelmImageName, HelmImageTag and HelmImageSpec are dotted Helm keys
	// (helm.image-name, helm.image-tag, helm.image-spec). With none set,
	// image.name and image.tag are written, as argocd-image-updater does.
	HelmImageName string
	HelmImageTag  string
	HelmImageSpec string
	// Revision and Source are the new image's source revision and
	// repository (its org.opencontainers.image.revision and .source),
	// where known: pull request bodies show them (Update's).
	Revision, Source string
}

// repo is the repository written: NewName if set, else Name.
func (im Image) repo() string {
	if im.NewName != "" {
		return im.NewName
	}
	return im.Name
}

// version is ":tag", "@digest" or ":tag@digest".
func (im Image) version() string {
	v := ""
	if im.NewTag != "" {
		v = ":" + im.NewTag
	}
	if im.Digest != "" {
		v += "@" + im.Digest
	}
	return v
}

// shown is the new version for messages.
func (im Image) shown() string {
	if im.NewTag != "" {
		return im.NewTag
	}
	return im.Digest
}

// helmKeys maps each Helm key to its value.
func (im Image) helmKeys() [][2]string {
	if im.HelmImageSpec != "" {
		return [][2]string{{im.HelmImageSpec, im.repo() + im.version()}}
	}
	name, tag := im.HelmImageName, im.HelmImageTag
	if name == "" && tag == "" {
		name, tag = "image.name", "image.tag"
	}
	var kv [][2]string
	if name != "" {
		kv = append(kv, [2]string{name, im.repo()})
	}
	if tag != "" {
		t := im.NewTag
		if t == "" {
			t = im.Digest
		}
		kv = append(kv, [2]string{tag, t})
	}
	return kv
}

// kustomizeImageName is the part of an Argo CD kustomize image override
// ("[name=]repo[:tag][@digest]") that says which image it replaces.
func kustomizeImageName(s string) string {
	if n, _, ok := strings.Cut(s, "="); ok {
		return n
	}
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		s = s[:i]
	}
	return s
}

// edits is how one image update changes a target file.
func imageEdits(kind TargetKind, src SourceType, im Image) []edit {
	kname := im.KustomizeName
	if kname == "" {
		kname = im.Name
	}
	switch {
	case kind == TargetKustomization:
		// kustomize edit set image semantics: a tag drops a digest and
		// the other way round; newName only when it differs.
		var es []edit
		base := []step{key("images"), item("name", kname)}
		at := func(k string) []step { return append(append([]step(nil), base...), key(k)) }
		if im.NewName != "" && im.NewName != kname {
			es = append(es, edit{path: at("newName"), set: str(im.NewName)})
		}
		if im.NewTag != "" {
			es = append(es, edit{path: at("newTag"), set: str(im.NewTag), version: true})
		} else {
			es = append(es, edit{path: at("newTag"), del: true})
		}
		if im.Digest != "" {
			es = append(es, edit{path: at("digest"), set: str(im.Digest), version: im.NewTag == ""})
		} else {
			es = append(es, edit{path: at("digest"), del: true})
		}
		return es
	case kind == TargetHelmValues:
		var es []edit
		for i, kv := range im.helmKeys() {
			es = append(es, edit{path: dotted(kv[0]), set: str(kv[1]), version: i == len(im.helmKeys())-1})
		}
		return es
	case src == SourceHelm:
		var es []edit
		for i, kv := range im.helmKeys() {
			base := []step{key("helm"), key("parameters"), item("name", kv[0])}
			es = append(es,
				edit{path: append(append([]step(nil), base...), key("value")), set: str(kv[1]), version: i == len(im.helmKeys())-1},
				edit{path: append(append([]step(nil), base...), key("forcestring")), set: leaf{value: "true", tag: "!!bool"}},
			)
		}
		return es
	default:
		override := im.repo() + im.version()
		if im.KustomizeName != "" {
			override = im.KustomizeName + "=" + override
		}
		return []edit{{
			path:    []step{key("kustomize"), key("images"), scalarItem(func(s string) bool { return kustomizeImageName(s) == kname })},
			set:     str(override),
			version: true,
		}}
	}
}

// Update is one value changed in a file, for commit messages and results.
type Update struct {
	App string
	// Key is the change's Key (Change.Key, or App when it had none).
	Key   string
	Image string
	Alias string
	File  string
	From  string
	To    string
	// Revision and Source are the Image's: the new value's source
	// revision and repository, where known.
	Revision, Source string
}

// editFile applies one image's edits to a target file's content.
func editFile(content []byte, kind TargetKind, src SourceType, im Image) (out []byte, from string, changed bool, err error) {
	out = content
	for _, e := range imageEdits(kind, src, im) {
		var old string
		var ch bool
		out, old, ch, _, err = editYAML(out, e)
		if err != nil {
			return nil, "", false, fmt.Errorf("setting %s: %w", pathString(e.path), err)
		}
		changed = changed || ch
		if e.version {
			from = versionOf(old)
		}
	}
	return out, from, changed, nil
}

// versionOf is the tag (or digest) in a value that may be a whole image
// reference ("name=repo:tag", "repo@sha256:...") or just a tag.
func versionOf(s string) string {
	if _, r, ok := strings.Cut(s, "="); ok {
		s = r
	}
	repo, digest, hasDigest := strings.Cut(s, "@")
	if i := strings.LastIndexByte(repo, ':'); i >= 0 && i > strings.LastIndexByte(repo, '/') {
		return repo[i+1:]
	}
	if hasDigest {
		return digest
	}
	if strings.Contains(repo, "/") {
		return ""
	}
	return repo
}
