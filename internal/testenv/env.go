package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// BinDirEnv names the environment variable that points at a folder holding
// etcd and kube-apiserver, skipping the build script.
const BinDirEnv = "CROWSNEST_KUBE_BIN"

// startTimeout bounds how long the control plane may take to come up; the
// apiserver serves /readyz in about 4 s here, CI machines may be slower.
const startTimeout = 90 * time.Second

// Resources the CRDs serve, for tests and for waiting on discovery.
var (
	ApplicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectsGVR  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Env is a running etcd + kube-apiserver pair.
type Env struct {
	// Config is an admin rest.Config for the apiserver.
	Config *rest.Config
	// Dir holds certificates, data and the process logs.
	Dir string

	etcd      *Process
	apiserver *Process
	warnings  *warningLog
}

// BinDir returns the folder with the etcd and kube-apiserver binaries,
// building them first if they are not cached yet.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("locating hack/kube/build.sh: no caller information")
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", "hack", "kube", "build.sh")
	out, err := exec.Command("bash", script).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("building kube binaries with %s: %w\n%s", script, err, ee.Stderr)
		}
		return "", fmt.Errorf("building kube binaries with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// Start runs etcd and kube-apiserver under dir and installs the CRDs.
func Start(ctx context.Context, dir string) (*Env, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	p, err := writePKI(dir)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdURL := "http://" + hostPort(ports[0])
	e := &Env{Dir: dir, warnings: &warningLog{}}
	e.etcd = etcdProcess(bin, dir, etcdURL, "http://"+hostPort(ports[1]))
	e.apiserver = apiserverProcess(bin, dir, etcdURL, ports[2], p)
	e.Config = &rest.Config{
		Host:            "https://" + hostPort(ports[2]),
		BearerToken:     p.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM},
		QPS:             200,
		Burst:           400,
		WarningHandler:  e.warnings,
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := e.etcd.Start(); err != nil {
		return nil, err
	}
	if err := e.etcd.WaitReady(ctx, HTTPOK(http.DefaultClient, etcdURL+"/health")); err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.startAPIServer(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	if err := e.installCRDs(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func etcdProcess(bin, dir, etcdURL, peerURL string) *Process {
	return &Process{
		Name:    "etcd",
		Path:    filepath.Join(bin, "etcd"),
		LogPath: filepath.Join(dir, "etcd.log"),
		Args: []string{
			"--name=default",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + etcdURL,
			"--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--unsafe-no-fsync=true", // test data is thrown away; fsync only costs time
			"--log-level=warn",
		},
	}
}

func apiserverProcess(bin, dir, etcdURL string, port int, p *pki) *Process {
	return &Process{
		Name:    "kube-apiserver",
		Path:    filepath.Join(bin, "kube-apiserver"),
		LogPath: filepath.Join(dir, "kube-apiserver.log"),
		Args: []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
			"--tls-cert-file=" + p.servingCert,
			"--tls-private-key-file=" + p.servingKey,
			"--token-auth-file=" + p.tokenAuthFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + p.saPublicKey,
			"--service-account-signing-key-file=" + p.saPrivateKey,
			"--service-cluster-ip-range=10.0.0.0/24",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
			"-v=0",
		},
	}
}

// Stop ends both processes. It is safe to call more than once.
func (e *Env) Stop() {
	_ = e.apiserver.Stop()
	_ = e.etcd.Stop()
}

// StopAPIServer ends the kube-apiserver process and leaves etcd running, to
// test clients surviving an apiserver restart.
func (e *Env) StopAPIServer() error {
	return e.apiserver.Stop()
}

// StartAPIServer starts the kube-apiserver again on the same address and
// waits until it is ready.
func (e *Env) StartAPIServer(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return e.startAPIServer(ctx)
}

func (e *Env) startAPIServer(ctx context.Context) error {
	if err := e.apiserver.Start(); err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return fmt.Errorf("building apiserver client: %w", err)
	}
	return e.apiserver.WaitReady(ctx, HTTPOK(client, e.Config.Host+"/readyz"))
}

// APIServerLog returns the tail of the kube-apiserver log, for failing tests.
func (e *Env) APIServerLog() string { return e.apiserver.LogTail() }

func (e *Env) installCRDs(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return fmt.Errorf("building dynamic client: %w", err)
	}
	crds, err := argoCDCRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	// A CRD is usable once its resource is served; list until it is.
	for _, gvr := range []schema.GroupVersionResource{ApplicationsGVR, AppProjectsGVR} {
		for {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if backoff.Sleep(ctx, 50*time.Millisecond) != nil {
				return fmt.Errorf("waiting for %s to be served: %w (last error: %w)", gvr.Resource, ctx.Err(), err)
			}
		}
	}
	return nil
}

// HTTPOK is the readiness check of a process that serves a health
// endpoint (Process.WaitReady): a GET of url through client answers 200.
func HTTPOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}
