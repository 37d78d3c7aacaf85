// Package argocdenv runs a real Argo CD, its application controller and
// repo server with a Redis, against a test control plane (internal/testenv),
// so end-to-end tests can check what Argo CD itself does with what
// crowsnest writes: the Deployment it syncs, the operationState it
// records, the status it reports.
//
// The binaries come from hack/argocd/build.sh (built from the module proxy
// once and cached); redis-server is Debian's (hack/apt.sh). Every process
// listens on 127.0.0.1 except the application controller's metrics
// server, which Argo CD binds to all interfaces on the free port given.
//
// There is no kubelet: nothing Argo CD applies ever runs, so by Argo CD's
// own rules a Deployment would stay Progressing for ever. argocd-cm
// carries resource health customizations (Argo CD's documented
// `resource.customizations.health.<group_kind>` Lua) that report a
// Deployment Healthy once applied, and a ConfigMap Degraded when its data
// says `health: Degraded`, so tests can drive health transitions.
package argocdenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// Version is the Argo CD version the tests run: ARGOCD_VERSION from the
// environment, else the pinned default (testenv.ArgoCDVersion).
// hack/argocd/build.sh builds the same one, and the control plane installs
// its CRDs.
func Version() string { return testenv.ArgoCDVersion() }

// Namespace is where Argo CD runs and its Applications live, unless
// Options say otherwise.
const Namespace = "argocd"

// healthDeployment and healthConfigMap are the health customizations
// (see the package comment).
const (
	healthDeployment = `hs = {}
hs.status = "Healthy"
hs.message = "crowsnest test environment: no kubelet; a Deployment is healthy once applied"
return hs
`
	healthConfigMap = `hs = {}
hs.status = "Healthy"
if obj.data ~= nil and obj.data.health == "Degraded" then
  hs.status = "Degraded"
  hs.message = "the test set data.health to Degraded"
end
return hs
`
)

// Options configure Start.
type Options struct {
	// Namespace for Argo CD and its Applications; empty is Namespace.
	Namespace string
	// AppResync is the controller's --app-resync (how often it compares
	// every Application with Git); zero is 10 s, short so tests do not
	// wait Argo CD's default three minutes.
	AppResync time.Duration
	// Repositories are registered with Argo CD as repository Secrets.
	Repositories []Repository
	// ConfigMap entries added to argocd-cm.
	ConfigMap map[string]string
}

// Repository is a Git repository Argo CD may read, with its credentials.
type Repository struct {
	URL, Username, Password string
}

// ArgoCD is a running Argo CD.
type ArgoCD struct {
	Namespace string
	dir       string
	procs     []*testenv.Process
	// sockDir holds the repo server's askpass socket (see Start).
	sockDir string
}

// BinDir builds (first run) or finds the cached Argo CD (of Version),
// kustomize and helm binaries and returns their folder.
func BinDir() (string, error) {
	binOnce.Do(func() {
		if dir := os.Getenv("CROWSNEST_ARGOCD_BIN"); dir != "" {
			binDir = dir
			return
		}
		root, err := testenv.ModuleRoot()
		if err != nil {
			binErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "argocd", "build.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			binErr = fmt.Errorf("hack/argocd/build.sh: %w\n%s", err, stderr.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		binDir = lines[len(lines)-1]
		// The cache folder is named by the version it holds.
		if !strings.HasPrefix(filepath.Base(binDir), Version()+"-") {
			binErr = fmt.Errorf("hack/argocd/build.sh built %s, not Argo CD %s", binDir, Version())
		}
	})
	return binDir, binErr
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// New starts Argo CD for a test and stops it when the test ends.
func New(tb testing.TB, env *testenv.Env, opts Options) *ArgoCD {
	tb.Helper()
	a, err := Start(tb.Context(), env, tb.TempDir(), opts)
	if err != nil {
		tb.Fatalf("starting Argo CD %s: %v", Version(), err)
	}
	tb.Logf("Argo CD %s running in namespace %s", Version(), a.Namespace)
	tb.Cleanup(a.Stop)
	return a
}

// Start runs Redis, the repo server and the application controller
// against env's apiserver, with their files and logs under dir. It
// returns once all three answer.
func Start(ctx context.Context, env *testenv.Env, dir string, opts Options) (_ *ArgoCD, err error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	redisPath, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found (hack/apt.sh installs it): %w", err)
	}
	kubeBin, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	a := &ArgoCD{Namespace: opts.Namespace, dir: dir}
	if a.Namespace == "" {
		a.Namespace = Namespace
	}
	defer func() {
		if err != nil {
			a.Stop()
		}
	}()
	if err := a.configure(ctx, env, opts); err != nil {
		return nil, err
	}
	l, err := a.prepare(env, bin)
	if err != nil {
		return nil, err
	}
	l.redisPath, l.kubeBin, l.resync = redisPath, kubeBin, opts.AppResync
	if l.resync <= 0 {
		l.resync = 10 * time.Second
	}
	if err := a.run(ctx, l); err != nil {
		return nil, err
	}
	return a, nil
}

// layout is where the processes of one Argo CD find their binaries,
// files and ports.
type layout struct {
	bin, redisPath, kubeBin string
	kubeconfig, tmp         string
	env                     []string
	ports                   []int
	resync                  time.Duration
}

// prepare writes the kubeconfig, makes the processes' folders and picks
// their environment and ports.
func (a *ArgoCD) prepare(env *testenv.Env, bin string) (*layout, error) {
	l := &layout{bin: bin, kubeconfig: filepath.Join(a.dir, "kubeconfig")}
	if err := env.WriteKubeconfig(l.kubeconfig); err != nil {
		return nil, err
	}
	home := filepath.Join(a.dir, "home")
	l.tmp = filepath.Join(a.dir, "tmp")
	for _, d := range []string{home, l.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// The repo server hands Git credentials to git through a Unix socket
	// whose path defaults to a fixed /tmp/reposerver-ask-pass.sock: two
	// Argo CDs on one machine (parallel tests) would take it from each
	// other, and every fetch of the first fails with "unknown nonce". A
	// folder of its own, short enough for a socket path.
	var err error
	if a.sockDir, err = os.MkdirTemp("", "argocd-askpass-"); err != nil {
		return nil, err
	}
	l.env = append(os.Environ(),
		"ARGOCD_ASK_PASS_SOCK="+filepath.Join(a.sockDir, "askpass.sock"),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "TMPDIR="+l.tmp, "KUBECONFIG="+l.kubeconfig,
		// No gpg here, and no signed commits to verify.
		"ARGOCD_GPG_ENABLED=false",
		// The in-cluster destination (https://kubernetes.default.svc) is
		// the test apiserver, reached through KUBECONFIG: Argo CD's own
		// switch for running outside a cluster.
		"ARGOCD_FAKE_IN_CLUSTER=true",
	)
	if l.ports, err = freePorts(5); err != nil {
		return nil, err
	}
	return l, nil
}

// run starts the processes in order, each once the one before answers.
func (a *ArgoCD) run(ctx context.Context, l *layout) error {
	dir, ports, kubeconfig := a.dir, l.ports, l.kubeconfig
	proc := func(name, path string, args ...string) *testenv.Process {
		return &testenv.Process{Name: name, Path: path, Dir: dir, Env: l.env, LogPath: filepath.Join(dir, name+".log"), Args: args}
	}
	redisAddr := hostPort(ports[0])
	repoAddr := hostPort(ports[1])
	redis := proc("redis", l.redisPath,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--save", "", "--appendonly", "no",
		"--dir", l.tmp,
	)
	repo := proc("repo-server", filepath.Join(l.bin, "argocd"),
		"repo-server", "--address", "127.0.0.1", "--port", strconv.Itoa(ports[1]),
		"--metrics-address", "127.0.0.1", "--metrics-port", strconv.Itoa(ports[2]),
		"--disable-tls", "--client-ca-path", "", "--redis", redisAddr, "--loglevel", "info",
	)
	ctrl := proc("application-controller", filepath.Join(l.bin, "argocd"),
		"application-controller", "--kubeconfig", kubeconfig, "--namespace", a.Namespace,
		"--repo-server", repoAddr, "--repo-server-plaintext", "--redis", redisAddr,
		"--app-resync", strconv.Itoa(int(l.resync.Seconds())), "--app-resync-jitter", "0",
		"--status-processors", "4", "--operation-processors", "2",
		"--metrics-port", strconv.Itoa(ports[3]), "--loglevel", "info",
	)
	// The Deployment and ReplicaSet controllers make the Pods (Pending:
	// no kubelet) whose images Argo CD reports in status.summary.images;
	// the ServiceAccount controller the "default" ServiceAccount Pods need.
	kcm := proc("kube-controller-manager", filepath.Join(l.kubeBin, "kube-controller-manager"),
		"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--authentication-skip-lookup",
		"--controllers", "deployment-controller,replicaset-controller,serviceaccount-controller",
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[4]),
		"--cert-dir", filepath.Join(dir, "kcm"), "--use-service-account-credentials=false",
	)
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	steps := []struct {
		p     *testenv.Process
		ready func(context.Context) error
	}{
		{kcm, httpsUp(hostPort(ports[4]))},
		{redis, tcpUp(redisAddr)},
		{repo, testenv.HTTPOK(http.DefaultClient, "http://"+hostPort(ports[2])+"/healthz")},
		{ctrl, testenv.HTTPOK(http.DefaultClient, "http://"+hostPort(ports[3])+"/healthz")},
	}
	for _, s := range steps {
		if err := s.p.Start(); err != nil {
			return err
		}
		a.procs = append(a.procs, s.p)
		if err := s.p.WaitReady(startCtx, s.ready); err != nil {
			return err
		}
	}
	return nil
}

// configure creates Argo CD's namespace, ConfigMaps, Secret and
// repository Secrets.
func (a *ArgoCD) configure(ctx context.Context, env *testenv.Env, opts Options) error {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", a.Namespace, err)
	}
	cm := map[string]string{
		"resource.customizations.health.apps_Deployment": healthDeployment,
		"resource.customizations.health.ConfigMap":       healthConfigMap,
	}
	for k, v := range opts.ConfigMap {
		cm[k] = v
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	objs := []any{
		&corev1.ConfigMap{ObjectMeta: a.meta("argocd-cm"), Data: cm},
		&corev1.ConfigMap{ObjectMeta: a.meta("argocd-rbac-cm")},
		&corev1.ConfigMap{ObjectMeta: a.meta("argocd-cmd-params-cm")},
		&corev1.Secret{ObjectMeta: a.meta("argocd-secret"), Data: map[string][]byte{"server.secretkey": []byte(hex.EncodeToString(key))}},
	}
	for i, r := range opts.Repositories {
		m := a.meta("repo-" + strconv.Itoa(i))
		m.Labels["argocd.argoproj.io/secret-type"] = "repository"
		objs = append(objs, &corev1.Secret{ObjectMeta: m, StringData: map[string]string{
			"type": "git", "url": r.URL, "username": r.Username, "password": r.Password,
		}})
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.ConfigMap:
			_, err = cs.CoreV1().ConfigMaps(a.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = cs.CoreV1().Secrets(a.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("creating Argo CD's configuration: %w", err)
		}
	}
	return nil
}

func (a *ArgoCD) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "argocd"}}
}

// Stop stops the processes, the controller first.
func (a *ArgoCD) Stop() {
	for i := len(a.procs) - 1; i >= 0; i-- {
		_ = a.procs[i].Stop()
	}
	a.procs = nil
	if a.sockDir != "" {
		_ = os.RemoveAll(a.sockDir)
		a.sockDir = ""
	}
}

// Logs returns the tail of each process's log, for a failing test.
func (a *ArgoCD) Logs() string {
	var b strings.Builder
	for _, p := range a.procs {
		fmt.Fprintf(&b, "== %s\n%s\n", p.Name, p.LogTail())
	}
	return b.String()
}

// Log returns the whole log of the process called name
// ("application-controller", "repo-server", "redis",
// "kube-controller-manager"), for tests that assert on what Argo CD
// only logs (a sync a window prevented).
func (a *ArgoCD) Log(name string) string {
	for _, p := range a.procs {
		if p.Name == name {
			data, err := os.ReadFile(p.LogPath)
			if err != nil {
				return "(no log: " + err.Error() + ")"
			}
			return string(data)
		}
	}
	return ""
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		p, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

func tcpUp(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// httpsUp reports whether something serves TLS at addr (the controller
// manager's self-signed port).
func httpsUp(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // a liveness probe of a local test process
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}
