package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, o options)
		wantErr string // substring; "" means success
	}{
		{
			name: "defaults",
			args: []string{"-out", "bin/image"},
			check: func(t *testing.T, o options) {
				t.Helper()
				var got []string
				for _, p := range o.platforms {
					got = append(got, p.String())
				}
				if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
					t.Errorf("platforms (-want +got):\n%s", diff)
				}
				if !o.created.Equal(time.Unix(0, 0)) || o.version != "dev" || o.source != defaultSource || o.push != nil {
					t.Errorf("unexpected defaults %+v", o)
				}
			},
		},
		{
			name: "push only, insecure",
			args: []string{"-push", "127.0.0.1:5000/crowsnest:v1", "-insecure", "-created", "1700000000"},
			check: func(t *testing.T, o options) {
				t.Helper()
				if o.push.Context().Scheme() != "http" || o.push.Identifier() != "v1" {
					t.Errorf("push %v scheme %s", o.push, o.push.Context().Scheme())
				}
				if !o.created.Equal(time.Unix(1700000000, 0)) {
					t.Errorf("created %s", o.created)
				}
			},
		},
		{name: "nothing to do", args: nil, wantErr: "nothing to do"},
		{name: "windows", args: []string{"-out", "x", "-platforms", "linux/amd64,windows/amd64"}, wantErr: `-platforms: "windows/amd64": only linux`},
		{name: "no arch", args: []string{"-out", "x", "-platforms", "linux"}, wantErr: `-platforms: "linux": missing architecture`},
		{name: "twice", args: []string{"-out", "x", "-platforms", "linux/arm64,linux/arm64"}, wantErr: "listed twice"},
		{name: "empty platforms", args: []string{"-out", "x", "-platforms", " , "}, wantErr: "-platforms: no platforms"},
		{name: "bad created", args: []string{"-out", "x", "-created", "yesterday"}, wantErr: `-created: "yesterday" is not Unix seconds`},
		{name: "negative created", args: []string{"-out", "x", "-created", "-5"}, wantErr: "-created"},
		{name: "empty version", args: []string{"-out", "x", "-version", " "}, wantErr: "-version: must not be empty"},
		{name: "bad push ref", args: []string{"-push", "UPPER/Case:tag"}, wantErr: `-push "UPPER/Case:tag"`},
		{name: "bad timeout", args: []string{"-out", "x", "-push-timeout", "0s"}, wantErr: "-push-timeout"},
		{name: "stray argument", args: []string{"-out", "x", "extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", "")
			o, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestReadCABundle(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readCABundle(bad); err == nil || !strings.Contains(err.Error(), "no PEM certificates") {
		t.Errorf("bundle without certificates: err = %v", err)
	}
	if _, err := readCABundle(filepath.Join(dir, "missing.pem")); err == nil || !strings.HasPrefix(err.Error(), "-ca-certs: ") {
		t.Errorf("missing bundle: err = %v", err)
	}
}

// TestAssembleReproducible: the same binaries and options give the same
// index digest wherever the work folder is, and each input changes it.
func TestAssembleReproducible(t *testing.T) {
	dir := t.TempDir()
	bins := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for i, b := range bins {
		if err := os.WriteFile(b, []byte{0x7f, 'E', 'L', 'F', byte(i)}, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	o := options{
		platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}},
		version:   "v1", source: defaultSource, created: time.Unix(1700000000, 0).UTC(), pkg: "./cmd/crowsnest",
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
	digest := func(o options, ca []byte, bins []string) v1.Hash {
		t.Helper()
		idx, err := assemble(o, ca, bins, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return mustDigest(t, idx)
	}
	first := digest(o, ca, bins)
	if again := digest(o, ca, bins); again != first {
		t.Fatalf("two assemblies differ: %s vs %s", first, again)
	}
	later := o
	later.created = o.created.Add(time.Second)
	if digest(later, ca, bins) == first {
		t.Error("a different creation time gave the same digest")
	}
	if digest(o, ca, []string{bins[1], bins[0]}) == first {
		t.Error("swapped binaries gave the same digest")
	}
	if digest(o, append([]byte("# other\n"), ca...), bins) == first {
		t.Error("a different CA bundle gave the same digest")
	}
}

func TestWriteLayoutRefusesOtherFolders(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := options{platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}, version: "v1"}
	idx, err := assemble(o, []byte("ca"), []string{bin}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(other, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(other, idx, "v1"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("non-layout folder: err = %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("the folder's file is gone: %v", err)
	}

	out := filepath.Join(dir, "layout")
	for range 2 { // the second write replaces the first layout
		if err := writeLayout(out, idx, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := readLayout(t, out, "v1").Digest(); got != mustDigest(t, idx) {
		t.Errorf("layout holds index %s, wrote %s", got, mustDigest(t, idx))
	}
}

func mustDigest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
