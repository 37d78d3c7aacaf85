package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "crowsnest"
	// haValues is the chart's values file for two replicas with leader
	// election, the counterpart of installHA.
	haValues = "crowsnest/ha-values.yaml"
	// The kustomize install and its HA overlay.
	installBase = "../examples/install"
	installHA   = "../examples/install/overlays/ha"
	// The release name and namespace that give the kustomize install's
	// object names.
	release      = "crowsnest"
	ownNamespace = "crowsnest"
	argoCDNS     = "argocd"
)

var helmPath = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("bash", "../hack/tools.sh").Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return "", fmt.Errorf("hack/tools.sh: %w\n%s", err, exitErr.Stderr)
		}
		return "", fmt.Errorf("hack/tools.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], "helm"), nil
})

// helm runs the helm CLI installed by hack/tools.sh (`make deps`), with
// its config, cache and data folders in a temporary folder so that nothing
// of the user's helm setup takes part.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := helmPath()
	if err != nil {
		t.Fatalf("installing helm: %v", err)
	}
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// values writes a values file for one test.
func values(t *testing.T, y string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// object is one rendered object: decoded strictly into its Kubernetes Go
// type when client-go knows the kind, and as a generic map for comparing.
type object struct {
	typed runtime.Object // nil for kinds client-go does not know (ServiceMonitor)
	u     map[string]any
}

// objects are rendered objects by "Kind namespace/name".
type objects map[string]object

func key(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// crdKinds are the kinds the chart may render that client-go's scheme
// does not hold; they are checked field by field instead.
var crdKinds = map[string]bool{"monitoring.coreos.com/v1, Kind=ServiceMonitor": true}

// decode turns one YAML document into an object: strictly (unknown or
// misspelt fields are errors) for the kinds client-go knows.
func decode(doc []byte) (string, object, error) {
	u := &unstructured.Unstructured{}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return "", object{}, err
	}
	if err := u.UnmarshalJSON(j); err != nil {
		return "", object{}, fmt.Errorf("not a Kubernetes object: %w\n%s", err, doc)
	}
	k := key(u)
	if u.GetName() == "" {
		return "", object{}, fmt.Errorf("%s has no name", k)
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	typed, _, err := decoder.Decode(doc, nil, nil)
	switch {
	case err == nil:
	case runtime.IsNotRegisteredError(err) && crdKinds[u.GroupVersionKind().String()]:
		typed = nil
	default:
		return "", object{}, fmt.Errorf("%s is not a valid Kubernetes object of a known kind: %w", k, err)
	}
	return k, object{typed: typed, u: u.Object}, nil
}

// parse decodes a multi-document YAML stream; documents holding only
// comments are skipped, two objects with one key are an error.
func parse(stream []byte) (objects, error) {
	out := objects{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var probe any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, doc)
		}
		if probe == nil {
			continue
		}
		k, obj, err := decode(doc)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s rendered twice", k)
		}
		out[k] = obj
	}
}

// render runs `helm template` on the chart in crowsnest's namespace with
// the release name that gives the kustomize install's object names.
func render(t *testing.T, args ...string) objects {
	t.Helper()
	objs, err := renderRelease(t, release, ownNamespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renderRelease runs `helm template` as release name in namespace.
func renderRelease(t *testing.T, name, namespace string, args ...string) (objects, error) {
	t.Helper()
	out, err := helm(t, append([]string{"template", name, chartDir, "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, err
	}
	objs, err := parse([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("helm template %q: %w", args, err)
	}
	return objs, nil
}

// kustomize renders a kustomization with kustomize's engine, the one
// `kubectl kustomize` embeds.
func kustomize(t *testing.T, dir string) objects {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	y, err := resMap.AsYaml()
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	objs, err := parse(y)
	if err != nil {
		t.Fatalf("kustomize %s: %v", dir, err)
	}
	return objs
}
