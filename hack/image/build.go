package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// build compiles the binary for every platform into work and assembles
// the index. The layers are read lazily from files in work, so work must
// stay until the index has been written or pushed.
func build(ctx context.Context, o options, work string, log io.Writer) (v1.ImageIndex, error) {
	caPEM, err := readCABundle(o.caCerts)
	if err != nil {
		return nil, err
	}
	binaries := make([]string, len(o.platforms))
	for i, p := range o.platforms {
		binaries[i] = filepath.Join(work, "crowsnest-"+strings.ReplaceAll(p.String(), "/", "-"))
		fmt.Fprintf(log, "building %s for %s\n", o.pkg, p)
		if err := compile(ctx, o, p, binaries[i]); err != nil {
			return nil, err
		}
	}
	return assemble(o, caPEM, binaries, work)
}

// readCABundle reads the CA bundle and refuses one without a certificate:
// an image that cannot verify TLS fails only later, at the first registry.
func readCABundle(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-ca-certs: %w", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("-ca-certs %s: no PEM certificates in the file", path)
	}
	return b, nil
}

// compile runs go build for one platform: static (CGO off, so it runs on
// an image without libc), -trimpath (no build-host paths), stripped, with
// the baseline instruction set so any node of that architecture runs it.
func compile(ctx context.Context, o options, p v1.Platform, out string) error {
	ldflags := "-s -w -X main.version=" + o.version
	c := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-ldflags", ldflags, "-o", out, o.pkg)
	c.Dir = o.dir
	c.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOARM="+goarm(p.Variant))
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = &stderr, &stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", o.pkg, p, err, stderr.String())
	}
	return nil
}

// goarm maps the OCI variant of linux/arm ("v6", "v7") to GOARM.
func goarm(variant string) string {
	if v := strings.TrimPrefix(variant, "v"); v == "5" || v == "6" || v == "7" {
		return v
	}
	return "7"
}

// assemble puts each binary on the shared base layer and builds the
// index. Everything is a function of its inputs: same binaries, CA bundle
// and options give the same digests.
func assemble(o options, caPEM []byte, binaries []string, work string) (v1.ImageIndex, error) {
	base, err := newLayer(filepath.Join(work, "base.tar"), baseFiles(caPEM), o.created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	var adds []mutate.IndexAddendum
	for i, p := range o.platforms {
		app, err := newLayer(filepath.Join(work, fmt.Sprintf("app-%d.tar", i)), appFiles(binaries[i]), o.created)
		if err != nil {
			return nil, fmt.Errorf("%s layer: %w", p, err)
		}
		img, err := platformImage(o, p, base, app)
		if err != nil {
			return nil, fmt.Errorf("%s image: %w", p, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, labels(o)).(v1.ImageIndex), nil
}

func platformImage(o options, p v1.Platform, base, app v1.Layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: o.created}
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "hack/image: passwd, group, CA certificates, /tmp, " + homeDir}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, CreatedBy: "hack/image: go build " + o.pkg + " -> " + binaryPath}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	ports := map[string]struct{}{}
	for _, port := range exposedPorts {
		ports[port] = struct{}{}
	}
	cf.Config = v1.Config{
		User:         runAsUser,
		Entrypoint:   entrypoint,
		Cmd:          cmd,
		WorkingDir:   homeDir,
		Env:          env,
		Labels:       labels(o),
		ExposedPorts: ports,
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations registries and scanners read.
func labels(o options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   "crowsnest",
		"org.opencontainers.image.source":  o.source,
		"org.opencontainers.image.version": o.version,
		"org.opencontainers.image.created": o.created.Format(time.RFC3339),
	}
	if o.revision != "" {
		l["org.opencontainers.image.revision"] = o.revision
	}
	return l
}
