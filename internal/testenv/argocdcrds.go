package testenv

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// DefaultArgoCDVersion is the Argo CD release the tests run against unless
// the environment names another: the one whose CRDs the control plane
// installs, so the apiserver validates what tests and crowsnest write with
// Argo CD's own schema. hack/argocd (its checked-in wrapper module) and
// test/conformance/go.mod pin the same version; change them together.
const DefaultArgoCDVersion = "v3.6.1"

// ArgoCDVersion is the Argo CD release the tests run against: the
// environment's ARGOCD_VERSION (the compatibility matrix, `make
// e2e-argocd ARGOCD_VERSION=v3.6.0`), else DefaultArgoCDVersion.
// hack/argocd/build.sh reads the same variable.
func ArgoCDVersion() string {
	if v := os.Getenv("ARGOCD_VERSION"); v != "" {
		return v
	}
	return DefaultArgoCDVersion
}

// argoCDModule is the Go module that carries the CRD manifests.
const argoCDModule = "github.com/argoproj/argo-cd/v3"

// argoCDCRDFiles are the manifests installed, from the module's
// manifests/crds folder. ApplicationSet is left out: crowsnest never reads
// it, and its schema (1.6 MB of YAML) would add about two seconds to every
// control plane's start.
var argoCDCRDFiles = []string{
	"application-crd.yaml",
	"appproject-crd.yaml",
}

// argoCDCRDs reads and parses the CRDs once per process: every control
// plane a test binary starts installs the same objects.
var argoCDCRDs = sync.OnceValues(loadArgoCDCRDs)

// moduleDownload is the part of `go mod download -json` output we read.
type moduleDownload struct {
	Zip   string
	Error string
}

// loadArgoCDCRDs finds the Argo CD module in the Go module cache
// (downloading it through the module proxy if needed) and parses the CRD
// manifests from its zip.
//
// It reads the verified zip rather than the extracted directory: the go
// command leaves Dir empty when it is older than the module's go line
// (Argo CD v3.6.1 asks for go 1.27, crowsnest builds with an older one and
// GOTOOLCHAIN=local), but it has fetched and checked the zip by then.
func loadArgoCDCRDs() ([]*unstructured.Unstructured, error) {
	crds := make([]*unstructured.Unstructured, 0, len(argoCDCRDFiles))
	for _, name := range argoCDCRDFiles {
		path := "manifests/crds/" + name
		data, err := ArgoCDModuleFile(path)
		if err != nil {
			return nil, fmt.Errorf("getting Argo CD CRDs: %w", err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		crds = append(crds, obj)
	}
	return crds, nil
}

// ArgoCDModuleFile returns the file at path (slash-separated, relative to
// the module root, e.g. "notifications_catalog/install.yaml") of the Argo
// CD module of ArgoCDVersion, read from its verified zip in the module
// cache: tests use Argo CD's own manifests without a copy in this repo.
func ArgoCDModuleFile(path string) ([]byte, error) {
	zipPath, err := argoCDModuleZip()
	if err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	data, err := readZipFile(&zr.Reader, argoCDModule+"@"+ArgoCDVersion()+"/"+path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", zipPath, err)
	}
	return data, nil
}

// argoCDModuleZip finds the Argo CD module's zip in the Go module cache,
// downloading it through the module proxy if needed, once per process.
var argoCDModuleZip = sync.OnceValues(func() (string, error) {
	ref := argoCDModule + "@" + ArgoCDVersion()
	cmd := exec.Command("go", "mod", "download", "-json", ref)
	// Outside any module or workspace, so the crowsnest go.mod and go.sum
	// are neither read nor touched.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var m moduleDownload
	if err := json.Unmarshal(out, &m); err != nil {
		if runErr != nil {
			return "", fmt.Errorf("go mod download -json %s: %w; stderr: %s", ref, runErr, stderr.Bytes())
		}
		return "", fmt.Errorf("reading go mod download -json %s: %w", ref, err)
	}
	if m.Zip == "" {
		return "", fmt.Errorf("go mod download -json %s fetched no zip: %s; stderr: %s", ref, m.Error, stderr.Bytes())
	}
	return m.Zip, nil
})

// maxCRDBytes bounds one file read from the zip; the largest CRD
// (ApplicationSet) is about 1.6 MB as YAML.
const maxCRDBytes = 16 << 20

func readZipFile(zr *zip.Reader, path string) ([]byte, error) {
	f, err := zr.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCRDBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxCRDBytes {
		return nil, errors.New(path + " is larger than expected")
	}
	return data, nil
}
