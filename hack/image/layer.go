package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one layer entry. Paths are relative to / and directories end
// in "/", as in layers docker and ko produce.
type file struct {
	path     string
	mode     int64 // permission bits, plus 01000 for the sticky bit
	uid, gid int
	data     []byte // a regular file's content, or
	src      string // a file on the build host copied in
}

func (f file) dir() bool { return strings.HasSuffix(f.path, "/") }

// The non-root user's uid and gid as numbers, for file ownership.
const nonrootID = 65532

// passwd and group name the user 65532 so tools that look the user up
// (git, ssh, `id`) find it; nobody is there for tools that expect it.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:" + homeDir + ":/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// baseFiles is the distroless-like filesystem every platform shares.
// Nothing in it needs writing at runtime: /tmp (for --git-cache-dir's
// default) and the home folder are the only places the user may write,
// and a read-only-root Pod mounts an emptyDir on /tmp.
func baseFiles(caPEM []byte) []file {
	return []file{
		{path: "etc/", mode: 0o755},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/ssl/", mode: 0o755},
		{path: "etc/ssl/certs/", mode: 0o755},
		{path: strings.TrimPrefix(caBundlePath, "/"), mode: 0o644, data: caPEM},
		{path: "home/", mode: 0o755},
		{path: strings.TrimPrefix(homeDir, "/") + "/", mode: 0o700, uid: nonrootID, gid: nonrootID},
		{path: "tmp/", mode: 0o1777},
	}
}

// appFiles is the layer holding one platform's binary, owned by root so
// the process cannot replace itself.
func appFiles(binary string) []file {
	return []file{
		{path: "usr/", mode: 0o755},
		{path: "usr/local/", mode: 0o755},
		{path: "usr/local/bin/", mode: 0o755},
		{path: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, src: binary},
	}
}

// newLayer writes files as a tar at path (in the order given, every time
// mtime, no user or group names) and returns it as a gzip OCI layer.
func newLayer(path string, files []file, mtime time.Time) (v1.Layer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(f)
	for _, e := range files {
		if err := writeEntry(tw, e, mtime); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("%s: %w", e.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromFile(path,
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.DefaultCompression),
		tarball.WithCompressedCaching)
}

func writeEntry(tw *tar.Writer, e file, mtime time.Time) error {
	h := &tar.Header{
		Name:    e.path,
		Mode:    e.mode,
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: mtime,
		Format:  tar.FormatPAX,
	}
	if e.dir() {
		h.Typeflag = tar.TypeDir
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	var r io.Reader
	if e.src != "" {
		src, err := os.Open(e.src)
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.Stat()
		if err != nil {
			return err
		}
		h.Size, r = st.Size(), src
	} else {
		h.Size, r = int64(len(e.data)), bytes.NewReader(e.data)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}
