package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crowsnest-dev/crowsnest/registry"
)

// ErrBadPayload marks a body that is not a valid notification of its
// source's format.
var ErrBadPayload = errors.New("invalid webhook payload")

// pushed is one push as a payload states it, before normalisation.
type pushed struct {
	// ref names the repository with its host ("quay.io/org/app", tag or
	// digest allowed), or host and path are given apart (host may be
	// empty when the payload names none).
	ref        string
	host, path string
	tags       []string
	digest     string
}

// parser reads one product's payload; no pushes and no error means the
// notification is not a push (a pull, a ping, a scan result).
type parser func(h http.Header, body []byte) ([]pushed, error)

var parsers = map[SourceType]parser{
	DockerHub:    parseDockerHub,
	GHCR:         parseGitHub,
	Harbor:       parseHarbor,
	Quay:         parseQuay,
	Distribution: parseDistribution,
	Generic:      parseGeneric,
}

// parse reads a payload into push events with normalised repositories,
// one event per repository.
func parse(src *Source, h http.Header, body []byte) ([]PushEvent, error) {
	ps, err := parsers[src.Type](h, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadPayload, src.Type, err)
	}
	var events []PushEvent
	index := map[string]int{}
	for _, p := range ps {
		ev, err := normalize(src, p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadPayload, src.Type, err)
		}
		i, seen := index[ev.Repository]
		if !seen {
			index[ev.Repository] = len(events)
			events = append(events, ev)
			continue
		}
		events[i].Tags = append(events[i].Tags, ev.Tags...)
		if ev.Digest != "" {
			events[i].Digest = ev.Digest
		}
	}
	for i := range events {
		slices.Sort(events[i].Tags)
		events[i].Tags = slices.Compact(events[i].Tags)
	}
	return events, nil
}

// tagPattern is the OCI distribution spec's tag grammar.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

func normalize(src *Source, p pushed) (PushEvent, error) {
	host, repoPath := p.host, p.path
	if p.ref != "" {
		repo, err := registry.ParseRepo(p.ref)
		if err != nil {
			return PushEvent{}, fmt.Errorf("repository %q: %w", p.ref, err)
		}
		host, repoPath = repo.Host(), repo.Path()
	}
	if src.Registry != "" {
		host = src.Registry
	}
	if host == "" {
		return PushEvent{}, fmt.Errorf("repository %q: the payload names no registry host; set the source's registry", repoPath)
	}
	if repoPath == "" {
		return PushEvent{}, errors.New("repository is missing")
	}
	repo, err := registry.ParseRepo(host + "/" + repoPath)
	if err != nil {
		return PushEvent{}, fmt.Errorf("repository %q: %w", host+"/"+repoPath, err)
	}
	ev := PushEvent{Source: src.Type, Repository: registry.RepoKey(repo), Digest: p.digest}
	for _, t := range p.tags {
		if t == "" {
			continue
		}
		if !tagPattern.MatchString(t) {
			return PushEvent{}, fmt.Errorf("invalid tag %q", t)
		}
		ev.Tags = append(ev.Tags, t)
	}
	if ev.Digest != "" {
		if _, err := v1.NewHash(ev.Digest); err != nil {
			return PushEvent{}, fmt.Errorf("invalid digest %q: %w", ev.Digest, err)
		}
	}
	return ev, nil
}

// orEmpty returns a one-element slice, or nil for "".
func orEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
