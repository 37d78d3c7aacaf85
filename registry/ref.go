package registry

import (
	"errors"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/crowsnest-dev/crowsnest/registry/imageref"
)

// Image is a parsed image reference (imageref.Image): callers of the
// registry client name it here, and decision code imports imageref alone.
type Image = imageref.Image

// Repository names a repository (imageref.Repository); the client's
// methods take it and turn it into go-containerregistry's name at the edge.
type Repository = imageref.Repository

// ParseImage parses an image reference (see imageref.Parse).
func ParseImage(s string) (Image, error) { return imageref.Parse(s) }

// ParseRepo parses a repository key or any reference naming one.
func ParseRepo(s string) (Repository, error) { return imageref.ParseRepository(s) }

// RepoKey names a repository the way users write it, with Docker Hub as
// docker.io: the key of caches, metrics and poller state.
func RepoKey(r Repository) string { return r.String() }

// Host names a go-containerregistry registry the way users write it:
// go-containerregistry says index.docker.io for Docker Hub, users and
// Argo CD say docker.io.
func Host(r name.Registry) string {
	if h := r.RegistryStr(); h != name.DefaultRegistry {
		return h
	}
	return imageref.DockerHub
}

// errNoRepository is the zero Repository handed to the client.
var errNoRepository = errors.New("no repository given")

// ggcrRepository is repo as go-containerregistry names it, for remote
// calls. imageref accepts only what go-containerregistry reads the same
// way (TestImagerefMatchesGGCR), so this fails only for the zero
// Repository.
func ggcrRepository(repo Repository, opts ...name.Option) (name.Repository, error) {
	if repo == (Repository{}) {
		return name.Repository{}, errNoRepository
	}
	return name.NewRepository(repo.String(), opts...)
}
