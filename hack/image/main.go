package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// options are the command's flags, validated.
type options struct {
	out       string         // OCI layout folder; "" skips it
	push      name.Reference // registry reference; nil skips the push
	platforms []v1.Platform
	version   string
	revision  string
	source    string
	created   time.Time // image and file times; reproducible by default
	caCerts   string    // PEM bundle copied into the image
	pkg       string    // Go package of the binary
	dir       string    // module root the build runs in
	goCmd     string
	timeout   time.Duration // for the push
}

// defaultPlatforms are the platforms Kubernetes nodes commonly run.
const defaultPlatforms = "linux/amd64,linux/arm64"

// defaultPushTimeout bounds a push of two ~20 MB layers to a slow registry.
const defaultPushTimeout = 10 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "crowsnest-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	idx, err := build(ctx, o, work, stderr)
	if err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := writeLayout(o.out, idx, o.version); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s (index %s)\n", o.out, d)
	}
	if o.push != nil {
		if err := push(ctx, idx, o.push, o.timeout); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "pushed %s@%s\n", o.push, d)
	}
	return nil
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var platforms, pushRef, created string
	var insecure bool
	fs.StringVar(&o.out, "out", "", "write the image index to this OCI layout folder (replaced if it holds one)")
	fs.StringVar(&pushRef, "push", "", "push the image index to this reference (registry/repo:tag); credentials from the Docker config")
	fs.BoolVar(&insecure, "insecure", false, "allow plain HTTP for -push")
	fs.DurationVar(&o.timeout, "push-timeout", defaultPushTimeout, "give up pushing after this long")
	fs.StringVar(&platforms, "platforms", defaultPlatforms, "comma-separated linux/ARCH[/VARIANT] platforms")
	fs.StringVar(&o.version, "version", "dev", "version stamped into the binary (main.version) and the labels")
	fs.StringVar(&o.revision, "revision", "", "source revision for the org.opencontainers.image.revision label")
	fs.StringVar(&o.source, "source", defaultSource, "source repository URL for the org.opencontainers.image.source label")
	fs.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "image creation time and file times, Unix seconds (default $SOURCE_DATE_EPOCH, else 0 for reproducible output)")
	fs.StringVar(&o.caCerts, "ca-certs", caBundlePath, "PEM CA bundle to ship in the image")
	fs.StringVar(&o.pkg, "package", "./cmd/crowsnest", "Go package to build")
	fs.StringVar(&o.dir, "dir", ".", "module root to build in")
	fs.StringVar(&o.goCmd, "go", "go", "go command")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.platforms, err = parsePlatforms(platforms); err != nil {
		return options{}, fmt.Errorf("-platforms: %w", err)
	}
	if o.created, err = parseCreated(created); err != nil {
		return options{}, fmt.Errorf("-created: %w", err)
	}
	if strings.TrimSpace(o.version) == "" {
		return options{}, errors.New("-version: must not be empty")
	}
	if pushRef != "" {
		var nameOpts []name.Option
		if insecure {
			nameOpts = append(nameOpts, name.Insecure)
		}
		if o.push, err = name.ParseReference(pushRef, nameOpts...); err != nil {
			return options{}, fmt.Errorf("-push %q: %w", pushRef, err)
		}
	}
	if o.out == "" && o.push == nil {
		return options{}, errors.New("nothing to do: set -out, -push or both")
	}
	if o.timeout <= 0 {
		return options{}, fmt.Errorf("-push-timeout: %s is not positive", o.timeout)
	}
	return o, nil
}

// parsePlatforms accepts "linux/amd64,linux/arm64/v8"; only Linux images
// make sense for a Kubernetes controller, and each platform once.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := v1.ParsePlatform(part)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		switch {
		case p.OS != "linux":
			return nil, fmt.Errorf("%q: only linux images are built", part)
		case p.Architecture == "":
			return nil, fmt.Errorf("%q: missing architecture (want linux/ARCH)", part)
		case seen[p.String()]:
			return nil, fmt.Errorf("%q: listed twice", part)
		}
		seen[p.String()] = true
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, errors.New("no platforms given")
	}
	return out, nil
}

// parseCreated reads Unix seconds; empty means the epoch, so two builds of
// the same source give the same digests.
func parseCreated(s string) (time.Time, error) {
	if strings.TrimSpace(s) == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("%q is not Unix seconds (a non-negative integer)", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
