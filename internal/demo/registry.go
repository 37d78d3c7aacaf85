package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// images are the tags the registry starts with; push is pushed
// mid-run.
var (
	images = map[string][]string{
		"demo/web":    {"1.0.0", "1.1.0"},
		"demo/api":    {"2.0.0", "2.1.0", "3.0.0"},
		"demo/worker": {"3.0.0", "3.1.0"},
	}
	push = "demo/web:1.2.0"
)

// startRegistry serves go-containerregistry's in-memory registry on
// 127.0.0.1.
func startRegistry() (host string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("starting the demo registry: %w", err)
	}
	srv := &http.Server{
		Handler:           ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// pushImage pushes a small random linux/amd64 image built at created.
func pushImage(ctx context.Context, host, repoTag string, created time.Time) error {
	ref, err := name.ParseReference(host+"/"+repoTag, name.Insecure)
	if err != nil {
		return err
	}
	img, err := random.Image(256, 1)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", repoTag, err)
	}
	return nil
}
