package main

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

const (
	testVersion  = "v0.0.0-imagetest"
	testRevision = "0123456789abcdef"
	testCreated  = 1700000000
)

// TestImage builds the real image once (two cross-compiles of
// ./cmd/crowsnest, as `make image` does) and checks what a cluster relies
// on: the platforms, a non-root user, the entrypoint, a static binary of
// the right architecture, nothing writable but /tmp and the home folder,
// and that the image pushed to a registry and pulled back runs.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles crowsnest for two platforms")
	}
	caFile, caPEM := testCABundle(t)
	out := filepath.Join(t.TempDir(), "image")
	var log bytes.Buffer
	err := run(t.Context(), []string{
		"-out", out, "-dir", "../..", "-version", testVersion, "-revision", testRevision,
		"-created", "1700000000", "-ca-certs", caFile,
	}, &log)
	if err != nil {
		t.Fatalf("building: %v\n%s", err, log.String())
	}
	idx := readLayout(t, out, testVersion)

	t.Run("index", func(t *testing.T) {
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if im.MediaType != types.OCIImageIndex {
			t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
		}
		var got []string
		for i := range im.Manifests {
			d := &im.Manifests[i]
			if d.Platform == nil {
				t.Fatalf("manifest %s has no platform", d.Digest)
			}
			got = append(got, d.Platform.String())
			if d.MediaType != types.OCIManifestSchema1 {
				t.Errorf("%s: media type %s, want %s", d.Platform, d.MediaType, types.OCIManifestSchema1)
			}
		}
		if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
			t.Errorf("platforms (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantLabels(), im.Annotations); diff != "" {
			t.Errorf("index annotations (-want +got):\n%s", diff)
		}
	})

	for _, tc := range []struct {
		arch    string
		machine elf.Machine
	}{
		{"amd64", elf.EM_X86_64},
		{"arm64", elf.EM_AARCH64},
	} {
		t.Run("linux/"+tc.arch, func(t *testing.T) {
			img := platformOf(t, idx, tc.arch)
			checkConfig(t, img, tc.arch)
			fsys := flatten(t, img)
			checkFilesystem(t, fsys, caPEM)
			checkBinary(t, fsys["usr/local/bin/crowsnest"].data, tc.machine)
		})
	}

	t.Run("push, pull and run", func(t *testing.T) {
		arch := runtime.GOARCH
		if runtime.GOOS != "linux" || (arch != "amd64" && arch != "arm64") {
			t.Skipf("the image's binaries do not run on %s/%s", runtime.GOOS, arch)
		}
		t.Setenv("DOCKER_CONFIG", t.TempDir()) // anonymous, whatever the host's docker login
		reg := testreg.StartOCI(t, testreg.OCIOptions{})
		ref := reg.Ref(t, "crowsnest:"+testVersion)
		if err := push(t.Context(), idx, ref, time.Minute); err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Index(ref, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := idx.Digest()
		if got, _ := pulled.Digest(); got != want {
			t.Errorf("pulled index %s, pushed %s", got, want)
		}
		img, err := remote.Image(ref, remote.WithContext(t.Context()),
			remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "crowsnest")
		e, ok := flatten(t, img)["usr/local/bin/crowsnest"]
		if !ok {
			t.Fatal("no /usr/local/bin/crowsnest in the pulled image")
		}
		if err := os.WriteFile(bin, e.data, os.FileMode(e.hdr.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
		got, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("crowsnest version: %v\n%s", err, got)
		}
		if !strings.HasPrefix(string(got), "crowsnest "+testVersion+" ") || !strings.Contains(string(got), "linux/"+arch+")") {
			t.Errorf("crowsnest version printed %q, want version %s on linux/%s", got, testVersion, arch)
		}
	})
}

func wantLabels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "crowsnest",
		"org.opencontainers.image.source":   defaultSource,
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.revision": testRevision,
		"org.opencontainers.image.created":  time.Unix(testCreated, 0).UTC().Format(time.RFC3339),
	}
}

// readLayout opens the layout as other tools would: index.json holds one
// index, tagged.
func readLayout(t *testing.T, dir, tag string) v1.ImageIndex {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(im.Manifests))
	}
	if got := im.Manifests[0].Annotations[refNameAnnotation]; got != tag {
		t.Errorf("layout tag %q, want %q", got, tag)
	}
	idx, err := root.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func platformOf(t *testing.T, idx v1.ImageIndex, arch string) v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for i := range im.Manifests {
		if d := &im.Manifests[i]; d.Platform != nil && d.Platform.Architecture == arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("no %s image in the index", arch)
	return nil
}

func checkConfig(t *testing.T, img v1.Image, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("config platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root, numeric so runAsNonRoot can verify it)", c.User)
	}
	if diff := cmp.Diff([]string{"/usr/local/bin/crowsnest"}, c.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"run"}, c.Cmd); diff != "" {
		t.Errorf("cmd (-want +got):\n%s", diff)
	}
	if c.WorkingDir != "/home/nonroot" {
		t.Errorf("working dir %q", c.WorkingDir)
	}
	if len(c.Volumes) != 0 {
		t.Errorf("volumes %v: the image should not ask for anonymous volumes", c.Volumes)
	}
	if diff := cmp.Diff(wantLabels(), c.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got := time.Unix(testCreated, 0).UTC(); !cf.Created.Equal(got) {
		t.Errorf("created %s, want %s", cf.Created, got)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
		t.Errorf("manifest config %s with %d layers, want %s with 2", m.Config.MediaType, len(m.Layers), types.OCIConfigJSON)
	}
	for i := range m.Layers {
		if l := &m.Layers[i]; l.MediaType != types.OCILayer {
			t.Errorf("layer %s: media type %s", l.Digest, l.MediaType)
		}
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// flatten reads the image's filesystem as a container would see it,
// keyed by path with directories ending in "/".
func flatten(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := h.Name // mutate.Extract drops directories' trailing "/"
		if h.Typeflag == tar.TypeDir {
			name = strings.TrimSuffix(name, "/") + "/"
		}
		out[name] = entry{hdr: h, data: data}
	}
}

// checkFilesystem checks every path in the image: the expected set, owned
// by root and not writable by the runtime user except /tmp and the home
// folder, so the image runs with readOnlyRootFilesystem (an emptyDir on
// /tmp) and cannot modify its own binary.
func checkFilesystem(t *testing.T, fsys map[string]entry, caPEM []byte) {
	t.Helper()
	var paths []string
	for p := range fsys {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	want := []string{
		"etc/", "etc/group", "etc/passwd", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt",
		"home/", "home/nonroot/", "tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/crowsnest",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	var writable []string
	for _, p := range paths {
		h := fsys[p].hdr
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			t.Errorf("%s: type %c, want only directories and regular files", p, h.Typeflag)
		}
		if writableBy(h, 65532, 65532) {
			writable = append(writable, p)
		}
		if p != "home/nonroot/" && (h.Uid != 0 || h.Gid != 0) {
			t.Errorf("%s: owner %d:%d, want root", p, h.Uid, h.Gid)
		}
	}
	if diff := cmp.Diff([]string{"home/nonroot/", "tmp/"}, writable); diff != "" {
		t.Errorf("paths writable by 65532 (-want +got):\n%s", diff)
	}
	if m := fsys["tmp/"].hdr.Mode; m != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", m)
	}
	if !strings.Contains(string(fsys["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no 65532 user:\n%s", fsys["etc/passwd"].data)
	}
	if !strings.Contains(string(fsys["etc/group"].data), "nonroot:x:65532:") {
		t.Errorf("/etc/group has no 65532 group:\n%s", fsys["etc/group"].data)
	}
	if !bytes.Equal(fsys["etc/ssl/certs/ca-certificates.crt"].data, caPEM) {
		t.Error("the image's CA bundle is not the one given with -ca-certs")
	}
	if h := fsys["usr/local/bin/crowsnest"].hdr; h.Mode != 0o755 {
		t.Errorf("binary mode %o, want 755", h.Mode)
	}
}

func writableBy(h *tar.Header, uid, gid int) bool {
	switch {
	case h.Uid == uid:
		return h.Mode&0o200 != 0
	case h.Gid == gid:
		return h.Mode&0o020 != 0
	default:
		return h.Mode&0o002 != 0
	}
}

// checkBinary checks the ELF header: the architecture the index claims
// and static (no interpreter, no shared libraries), as an image without
// libc needs.
func checkBinary(t *testing.T, data []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("binary is not ELF: %v", err)
	}
	defer f.Close()
	if f.Machine != machine || f.Class != elf.ELFCLASS64 {
		t.Errorf("ELF machine %s class %s, want %s 64-bit", f.Machine, f.Class, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has an ELF interpreter: dynamically linked, it would not start on a libc-less image")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
}

// testCABundle writes a self-signed CA so the test does not depend on the
// host's bundle and can tell it apart.
func testCABundle(t *testing.T) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "crowsnest image test CA"},
		NotBefore:             time.Unix(testCreated, 0),
		NotAfter:              time.Unix(testCreated, 0).Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, p, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, p
}
