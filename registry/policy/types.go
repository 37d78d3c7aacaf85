package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Platform is an image platform as written in policies and manifests:
// os/arch with an optional variant ("linux/arm64/v8").
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

// Metadata is what selection may need to know about one tag beyond its
// name. It is immutable for a digest, so the registry client caches it by digest.
type Metadata struct {
	// Digest of the manifest or index the tag points to.
	Digest string
	// Created is the newest image config "created" time among the
	// manifests considered (only children matching the wanted platforms
	// for an index); zero when unknown.
	Created time.Time
	// Platforms the tag is built for: every child of an index, or the one
	// platform of a single manifest's config. Empty when unknown.
	Platforms []Platform
	// CreatedByPlatform holds each index child's created time, so
	// newest-build can count only the wanted platforms.
	CreatedByPlatform map[Platform]time.Time
	// Revision and Source are the commit and the repository the image was
	// built from (org.opencontainers.image.revision and .source, from its
	// annotations or config labels), where stated and valid; "" otherwise.
	// Selection ignores them: pull request bodies show them.
	Revision, Source string
}

// MetadataFunc looks up a tag's metadata on demand. Selection calls it
// only when a policy needs metadata (newest-build, digest, platforms), and
// only for the candidates it must inspect.
type MetadataFunc func(ctx context.Context, tag string) (Metadata, error)

// VerifyFunc checks the signature of the manifest (or index) a tag points
// to: it returns "" when digest passes, or why it does not. Selection
// calls it lazily, best candidate first, only until one passes; an error
// (the registry could not be asked) stops the selection.
type VerifyFunc func(ctx context.Context, digest string) (refused string, err error)

// Facts are the lookups a selection may make: metadata by tag, and, when
// the image's signatures must be verified, a signature check by digest.
type Facts struct {
	Metadata MetadataFunc
	// Verify, when set, makes a signature that does not verify a filter:
	// the newest tag that passes wins.
	Verify VerifyFunc
}

// String writes the platform the way policies do: "os/arch[/variant]".
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform reads "os/arch[/variant]" as written in policies and
// --platform flags. Values are lower-cased, as OCI writes them.
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(strings.ToLower(s), "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Platform{}, fmt.Errorf("invalid platform %q: want os/arch[/variant]", s)
	}
	for _, part := range parts {
		if part == "" || strings.ContainsFunc(part, unicode.IsSpace) {
			return Platform{}, fmt.Errorf("invalid platform %q: empty or blank part", s)
		}
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// runsOn reports whether an image built for have runs where want asks; a
// want without variant accepts every variant ("linux/arm64" takes v8).
func runsOn(want, have Platform) bool {
	return want.OS == have.OS && want.Architecture == have.Architecture &&
		(want.Variant == "" || want.Variant == have.Variant)
}

// builtForAny reports whether md lists a platform one of the wanted ones
// runs, as argocd-image-updater requires (registry-scanner's
// TagInfoFromReferences: "at least one reference that matches requested
// platforms"); no platform wanted accepts every tag. Unknown platforms
// (none listed) never qualify: crowsnest does not deploy an image it
// cannot show runs where it must.
func builtForAny(want []Platform, md Metadata) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if slices.ContainsFunc(md.Platforms, func(h Platform) bool { return runsOn(w, h) }) {
			return true
		}
	}
	return false
}

// createdFor is md's created time counting only index children built for
// a wanted platform; a single manifest's own time otherwise.
func createdFor(want []Platform, md Metadata) time.Time {
	if len(want) == 0 || len(md.CreatedByPlatform) == 0 {
		return md.Created
	}
	var newest time.Time
	for p, t := range md.CreatedByPlatform {
		if t.After(newest) && slices.ContainsFunc(want, func(w Platform) bool { return runsOn(w, p) }) {
			newest = t
		}
	}
	return newest
}
