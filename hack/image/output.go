package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refNameAnnotation tags the index inside the layout, as
// `crane push LAYOUT` and skopeo's oci:DIR:TAG read it.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// writeLayout replaces dir with an OCI layout holding only idx. A folder
// that is not empty and not an OCI layout is left alone: -out pointed at
// the wrong place must not delete someone's files.
func writeLayout(dir string, idx v1.ImageIndex, tag string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("-out: %w", err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("-out %s: not empty and not an OCI layout; refusing to replace it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("-out: %w", err)
		}
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("-out %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: tag})); err != nil {
		return fmt.Errorf("-out %s: writing the index: %w", dir, err)
	}
	return nil
}

// push writes the index and every image in it to ref with the Docker
// config's credentials (`docker login`, credential helpers).
func push(ctx context.Context, idx v1.ImageIndex, ref name.Reference, timeout time.Duration, opts ...remote.Option) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(ref, idx, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
