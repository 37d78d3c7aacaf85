package webhook

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Each product's payload, reduced to the fields a refresh needs. Unknown
// fields are ignored: the products add fields over time.

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding JSON: %w", err)
	}
	return nil
}

// parseDockerHub reads a Docker Hub repository webhook; it fires only on
// pushes.
func parseDockerHub(_ http.Header, body []byte) ([]pushed, error) {
	var p struct {
		PushData struct {
			Tag string `json:"tag"`
		} `json:"push_data"`
		Repository struct {
			RepoName string `json:"repo_name"`
		} `json:"repository"`
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	if p.Repository.RepoName == "" {
		return nil, errors.New("repository.repo_name is missing")
	}
	return []pushed{{host: "docker.io", path: p.Repository.RepoName, tags: orEmpty(p.PushData.Tag)}}, nil
}

type githubPackage struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	PackageType string `json:"package_type"`
	Ecosystem   string `json:"ecosystem"`
	Owner       struct {
		Login string `json:"login"`
	} `json:"owner"`
	PackageVersion struct {
		Version           string `json:"version"`
		PackageURL        string `json:"package_url"`
		ContainerMetadata struct {
			Tag struct {
				Name   string `json:"name"`
				Digest string `json:"digest"`
			} `json:"tag"`
		} `json:"container_metadata"`
	} `json:"package_version"`
}

// parseGitHub reads GitHub's "package" event, or the older
// "registry_package" one, for container packages.
func parseGitHub(h http.Header, body []byte) ([]pushed, error) {
	switch h.Get("X-GitHub-Event") {
	case "", "package", "registry_package":
	default: // ping and events the hook was not meant for
		return nil, nil
	}
	var p struct {
		Action          string         `json:"action"`
		Package         *githubPackage `json:"package"`
		RegistryPackage *githubPackage `json:"registry_package"`
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	pkg := cmp.Or(p.Package, p.RegistryPackage)
	if pkg == nil {
		return nil, errors.New("neither package nor registry_package is present")
	}
	kind := strings.ToLower(cmp.Or(pkg.PackageType, pkg.Ecosystem))
	if (p.Action != "published" && p.Action != "updated") || (kind != "container" && kind != "docker") {
		return nil, nil
	}
	v := pkg.PackageVersion
	ps := pushed{tags: orEmpty(v.ContainerMetadata.Tag.Name), digest: v.ContainerMetadata.Tag.Digest}
	if ps.digest == "" && strings.HasPrefix(v.Version, "sha256:") {
		ps.digest = v.Version
	}
	owner := cmp.Or(pkg.Namespace, pkg.Owner.Login)
	switch {
	case v.PackageURL != "":
		ps.ref = v.PackageURL
	case owner != "" && pkg.Name != "":
		// GHCR lower-cases owners and names in image references.
		ps.host, ps.path = "ghcr.io", strings.ToLower(owner+"/"+pkg.Name)
	default:
		return nil, errors.New("package names no package_url, owner or name")
	}
	return []pushed{ps}, nil
}

type harborData struct {
	Resources []struct {
		Digest      string `json:"digest"`
		Tag         string `json:"tag"`
		ResourceURL string `json:"resource_url"`
	} `json:"resources"`
	Repository struct {
		RepoFullName string `json:"repo_full_name"`
	} `json:"repository"`
}

// parseHarbor reads Harbor's default payload and its CloudEvents form.
func parseHarbor(_ http.Header, body []byte) ([]pushed, error) {
	var p struct {
		Type      string      `json:"type"`
		EventData *harborData `json:"event_data"` // default format
		Data      *harborData `json:"data"`       // CloudEvents format
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	if p.Type != "PUSH_ARTIFACT" && p.Type != "harbor.artifact.pushed" {
		if p.Type == "" {
			return nil, errors.New("type is missing")
		}
		return nil, nil
	}
	data := cmp.Or(p.EventData, p.Data)
	if data == nil {
		return nil, errors.New("event_data is missing")
	}
	repo := data.Repository.RepoFullName
	if len(data.Resources) == 0 {
		return []pushed{{path: repo}}, nil
	}
	var ps []pushed
	for _, r := range data.Resources {
		ev := pushed{path: repo, ref: r.ResourceURL, digest: r.Digest}
		if !strings.HasPrefix(r.Tag, "sha256:") { // untagged artifacts carry their digest
			ev.tags = orEmpty(r.Tag)
		}
		ps = append(ps, ev)
	}
	return ps, nil
}

// parseQuay reads Quay's "repository push" notification. Other events
// (build queued, build failed) carry no updated_tags and are ignored.
func parseQuay(_ http.Header, body []byte) ([]pushed, error) {
	var p struct {
		DockerURL   string          `json:"docker_url"`
		Repository  string          `json:"repository"`
		UpdatedTags json.RawMessage `json:"updated_tags"`
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	if len(p.UpdatedTags) == 0 {
		return nil, nil
	}
	// A list of tags today; older Quay sent an object of tag -> image ID.
	var tags []string
	if err := json.Unmarshal(p.UpdatedTags, &tags); err != nil {
		var byTag map[string]json.RawMessage
		if err := json.Unmarshal(p.UpdatedTags, &byTag); err != nil {
			return nil, errors.New("updated_tags is neither a list nor an object")
		}
		for t := range byTag {
			tags = append(tags, t)
		}
		slices.Sort(tags)
	}
	switch {
	case p.DockerURL != "":
		return []pushed{{ref: p.DockerURL, tags: tags}}, nil
	case p.Repository != "":
		return []pushed{{host: "quay.io", path: p.Repository, tags: tags}}, nil
	default:
		return nil, errors.New("docker_url and repository are missing")
	}
}

// parseDistribution reads a notifications envelope. Only manifest pushes
// by tag count: blob pushes, pulls, deletes and the digest-only pushes of
// an index's children change no tag.
func parseDistribution(_ http.Header, body []byte) ([]pushed, error) {
	var p struct {
		Events []struct {
			Action string `json:"action"`
			Target struct {
				Digest     string `json:"digest"`
				Repository string `json:"repository"`
				URL        string `json:"url"`
				Tag        string `json:"tag"`
			} `json:"target"`
			Request struct {
				Host string `json:"host"`
			} `json:"request"`
		} `json:"events"`
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	if p.Events == nil {
		return nil, errors.New("events is missing")
	}
	var ps []pushed
	for i, ev := range p.Events {
		if ev.Action != "push" || ev.Target.Tag == "" {
			continue
		}
		if ev.Target.Repository == "" {
			return nil, fmt.Errorf("events[%d].target.repository is missing", i)
		}
		host := ev.Request.Host
		if u, err := url.Parse(ev.Target.URL); host == "" && err == nil {
			host = u.Host
		}
		ps = append(ps, pushed{host: host, path: ev.Target.Repository, tags: []string{ev.Target.Tag}, digest: ev.Target.Digest})
	}
	return ps, nil
}

// parseGeneric reads {"repository": "host/path", "tag": "...", "tags":
// [...], "digest": "..."}.
func parseGeneric(_ http.Header, body []byte) ([]pushed, error) {
	var p struct {
		Repository string   `json:"repository"`
		Tag        string   `json:"tag"`
		Tags       []string `json:"tags"`
		Digest     string   `json:"digest"`
	}
	if err := decode(body, &p); err != nil {
		return nil, err
	}
	if p.Repository == "" {
		return nil, errors.New("repository is missing")
	}
	return []pushed{{ref: p.Repository, tags: append(orEmpty(p.Tag), p.Tags...), digest: p.Digest}}, nil
}
