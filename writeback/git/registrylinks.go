package git

import (
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// RegistryLinks gives an image's page on its registry, for pull request
// bodies: image as deployed ("nginx", "ghcr.io/org/app"), version as
// written (a tag, "tag@digest" or "@digest"); "" when there is none.
type RegistryLinks interface {
	Link(image, version string) string
}

// WellKnownRegistryLink is the page of image at version on the public
// registries whose pages are known by host: Docker Hub, Quay, GitHub's,
// Google's, Amazon's public gallery and Microsoft's; "" on any other.
// The image must be qualified as the registry configuration reads it (a
// name without a host is Docker Hub's).
func WellKnownRegistryLink(image, version string) string {
	repo, err := name.NewRepository(image)
	if err != nil {
		return ""
	}
	host, path := repo.RegistryStr(), repo.RepositoryStr()
	tag, _, _ := strings.Cut(version, "@")
	switch {
	case host == name.DefaultRegistry:
		page := "https://hub.docker.com/r/" + path
		if p, ok := strings.CutPrefix(path, "library/"); ok {
			page = "https://hub.docker.com/_/" + p
		}
		if tag == "" {
			return page + "/tags"
		}
		return page + "/tags?name=" + url.QueryEscape(tag)
	case host == "quay.io":
		page := "https://quay.io/repository/" + path + "?tab=tags"
		if tag != "" {
			page += "&tag=" + url.QueryEscape(tag)
		}
		return page
	case host == "ghcr.io", host == "gcr.io", strings.HasSuffix(host, ".gcr.io"), strings.HasSuffix(host, "-docker.pkg.dev"):
		// These hosts send a browser to the image's page.
		return "https://" + host + "/" + path
	case host == "public.ecr.aws":
		return "https://gallery.ecr.aws/" + path
	case host == "mcr.microsoft.com":
		return "https://mcr.microsoft.com/en-us/artifact/mar/" + path + "/tags"
	}
	return ""
}

// wellKnownLinks is RegistryLinks without configuration.
type wellKnownLinks struct{}

func (wellKnownLinks) Link(image, version string) string {
	return WellKnownRegistryLink(image, version)
}

// registryLinks is w.RegistryLinks, or the well-known registries' links.
func (w *Writer) registryLinks() RegistryLinks {
	if w.RegistryLinks != nil {
		return w.RegistryLinks
	}
	return wellKnownLinks{}
}
