package policy

import (
	"context"
	"time"
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
}

// MetadataFunc looks up a tag's metadata on demand. Selection calls it
// only when a policy needs metadata (newest-build, digest, platforms), and
// only for the candidates it must inspect.
type MetadataFunc func(ctx context.Context, tag string) (Metadata, error)
