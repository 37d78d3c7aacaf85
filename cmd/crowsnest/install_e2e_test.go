package main

import (
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
)

// installDir is examples/install, the kustomization users apply.
const installDir = "../../examples/install"

// installed is the example install applied to the test apiserver, and how
// to run crowsnest as its ServiceAccount.
type installed struct {
	// own and argocd stand in for the namespaces crowsnest and argocd.
	own, argocd string
	// args are the Deployment's container args with this test's files,
	// addresses and namespaces, plus a kubeconfig holding a token of the
	// example ServiceAccount.
	args      []string
	probeAddr string
}

// applyInstall renders examples/install/<overlay> with kustomize's engine
// (the one `kubectl kustomize` embeds), lets edit change the objects, and
// creates every object in the test apiserver, each namespace and
// cluster-wide name made unique to the test. No kubelet runs, so the
// Deployment starts nothing: the test runs its args itself.
func applyInstall(t *testing.T, overlay string, edit func([]*unstructured.Unstructured)) *installed {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(installDir, overlay))
	if err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	in := &installed{own: "crowsnest-" + rand.String(6), argocd: env.CreateNamespace(t, "argocd")}
	namespaces := map[string]string{"crowsnest": in.own, "argocd": in.argocd}
	var objs []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		m, err := res.Map()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		relocate(t, u, namespaces, "-"+in.own)
		objs = append(objs, u)
	}
	if edit != nil {
		edit(objs)
	}

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(env.Config)))
	dyn := dynamic.NewForConfigOrDie(env.Config)
	var dep appsv1.Deployment
	var cm corev1.ConfigMap
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, u.GetName(), err)
		}
		// Strict: a field the apiserver does not know is an error, not
		// silently dropped.
		opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
		if _, err := dyn.Resource(mapping.Resource).Namespace(u.GetNamespace()).Create(t.Context(), u, opts); err != nil {
			t.Fatalf("creating %s %s/%s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
		switch gvk.Kind {
		case "Deployment":
			fromUnstructured(t, u, &dep)
		case "ConfigMap":
			fromUnstructured(t, u, &cm)
		}
	}

	dir := t.TempDir()
	kubeconfig := serviceAccountKubeconfig(t, in.own, "crowsnest", dir)
	containers := dep.Spec.Template.Spec.Containers
	if len(containers) != 1 || len(containers[0].Args) == 0 || containers[0].Args[0] != "run" {
		t.Fatalf("the Deployment's container does not run `crowsnest run`: %+v", containers)
	}
	in.probeAddr = freeAddr(t)
	for _, arg := range containers[0].Args[1:] {
		name, value, _ := strings.Cut(arg, "=")
		switch name {
		case "--config":
			// The mounted ConfigMap's key, as kubelet would project it.
			p := filepath.Join(dir, "config", path.Base(value))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, cm.Data[path.Base(value)])
			value = p
		case "--git-cache-dir":
			value = filepath.Join(dir, "git")
		case "--state-dir":
			value = filepath.Join(dir, "state")
		case "--metrics-bind-address", "--webhook-bind-address":
			value = freeAddr(t)
		case "--health-probe-bind-address":
			value = in.probeAddr
		case "--argocd-namespace":
			value = namespaces[value]
		}
		if value != "" {
			arg = name + "=" + value
		}
		in.args = append(in.args, arg)
	}
	in.args = append(in.args, "--kubeconfig="+kubeconfig,
		// A pod reads its namespace from the service account mount.
		"--leader-election-namespace="+in.own,
		// Earlier tests' Applications stay in the shared apiserver.
		"--namespace="+in.argocd)
	return in
}

// relocate moves u from the namespaces the install names to the test's
// and renames cluster-wide objects with suffix.
func relocate(t *testing.T, u *unstructured.Unstructured, namespaces map[string]string, suffix string) {
	t.Helper()
	moved := func(ns string) string {
		to, ok := namespaces[ns]
		if !ok {
			t.Fatalf("%s %s names namespace %q; the test knows %v", u.GetKind(), u.GetName(), ns, namespaces)
		}
		return to
	}
	switch {
	case u.GetKind() == "Namespace":
		u.SetName(moved(u.GetName()))
	case u.GetNamespace() != "":
		u.SetNamespace(moved(u.GetNamespace()))
	default:
		u.SetName(u.GetName() + suffix)
	}
	if u.GetKind() == "ClusterRoleBinding" {
		name, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		if err := unstructured.SetNestedField(u.Object, name+suffix, "roleRef", "name"); err != nil {
			t.Fatal(err)
		}
	}
	subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
	for _, s := range subjects {
		if s, ok := s.(map[string]any); ok && s["namespace"] != nil {
			s["namespace"] = moved(s["namespace"].(string))
		}
	}
	if subjects != nil {
		if err := unstructured.SetNestedSlice(u.Object, subjects, "subjects"); err != nil {
			t.Fatal(err)
		}
	}
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// serviceAccountKubeconfig mints a token for the ServiceAccount with the
// TokenRequest API, as kubelet does for a pod, writes a kubeconfig that
// holds only that token, and checks the apiserver sees that identity.
func serviceAccountKubeconfig(t *testing.T, namespace, name, dir string) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	expiry := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: name}
	cfg.CurrentContext = "testenv"
	p := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", p)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kubernetes.NewForConfigOrDie(rc).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := review.Status.UserInfo.Username, "system:serviceaccount:"+namespace+":"+name; got != want {
		t.Fatalf("the kubeconfig authenticates as %q, want %q", got, want)
	}
	return p
}

// hasAppEvent reports whether an Event with reason on the Application
// names text.
func hasAppEvent(t *testing.T, ns, app, reason, text string) bool {
	t.Helper()
	list, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name == app && e.Reason == reason && strings.Contains(e.Message, text)
	})
}

// The HA install applied as is, crowsnest run with the Deployment's args
// (and --leader-elect) as the example ServiceAccount, notifications off:
// it takes the Lease, patches an annotated Application to the newest
// allowed tag and records an Event, and nothing it does is forbidden.
func TestE2EInstallUpdatesAsServiceAccount(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0", "2.0.0")
	in := applyInstall(t, "overlays/ha", nil)
	if !slices.Contains(in.args, "--leader-elect") {
		t.Fatalf("the ha overlay's args %q have no --leader-elect", in.args)
	}
	createApp(t, in.argocd, annotatedApp("web", "    argocd-image-updater.argoproj.io/image-list: web="+image+":~1"), image+":1.0.0")
	d := startDaemon(t, in.args...)

	waitFor(t, "web to be patched to 1.1.0", func() bool {
		return slices.Equal(kustomizeImages(t, in.argocd, "web"), []string{image + ":1.1.0"})
	})
	waitFor(t, "an ImagesUpdated Event on web", func() bool {
		return hasAppEvent(t, in.argocd, "web", "ImagesUpdated", image+": 1.0.0 -> 1.1.0")
	})
	lease, err := kubernetes.NewForConfigOrDie(env.Config).CoordinationV1().Leases(in.own).Get(t.Context(), "crowsnest", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the leader's Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s/crowsnest has no holder", in.own)
	}
	waitFor(t, "/readyz to answer 200", func() bool {
		code, _ := httpGet(t.Context(), "http://"+in.probeAddr+"/readyz")
		return code == http.StatusOK
	})
	noneForbidden(t, d)
}

// The same install with one verb crowsnest needs taken out of the
// ClusterRole (patch on applications): the update fails visibly, with the
// apiserver's refusal in the log and an Event, and the Application keeps
// its image. So the RBAC the first test ran under is what was enforced.
func TestE2EInstallWithoutPatchVerbFails(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0")
	in := applyInstall(t, "", func(objs []*unstructured.Unstructured) {
		removeVerb(t, objs, "ClusterRole", "applications", "patch")
	})
	createApp(t, in.argocd, annotatedApp("web", "    argocd-image-updater.argoproj.io/image-list: web="+image+":~1"), image+":1.0.0")
	d := startDaemon(t, in.args...)

	d.waitLog(t, "reconcile failed", "cannot patch resource", "system:serviceaccount:"+in.own+":crowsnest")
	waitFor(t, "an ImageUpdateFailed Event on web", func() bool {
		return hasAppEvent(t, in.argocd, "web", "ImageUpdateFailed", "forbidden")
	})
	if got := kustomizeImages(t, in.argocd, "web"); len(got) != 0 {
		t.Errorf("web's images = %q although patch is not allowed", got)
	}
}

// The base install with notifications turned on in its config: the
// outbox and trigger state ConfigMaps are created and updated in
// crowsnest's namespace under the Role, and the webhook gets its message.
func TestE2EInstallNotifiesAsServiceAccount(t *testing.T) {
	sink := testnotify.NewRecorder(t, testnotify.RecorderOptions{})
	updateSent := func() bool {
		return slices.ContainsFunc(sink.Bodies(), func(b string) bool { return strings.Contains(b, "1.1.0") })
	}
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0")
	in := applyInstall(t, "", func(objs []*unstructured.Unstructured) {
		for _, u := range objs {
			if u.GetKind() == "ConfigMap" {
				cfg, _, _ := unstructured.NestedString(u.Object, "data", "config.yaml")
				cfg += fmt.Sprintf("notifications:\n  catalog: true\n  services:\n    hook:\n      webhook: {url: %s/notify}\n", sink.URL)
				if err := unstructured.SetNestedField(u.Object, cfg, "data", "config.yaml"); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	createApp(t, in.argocd, annotatedApp("web", fmt.Sprintf(`    argocd-image-updater.argoproj.io/image-list: web=%s:~1
    notifications.argoproj.io/subscribe.on-image-updated.hook: ""`, image)), image+":1.0.0")
	d := startDaemon(t, in.args...)

	waitFor(t, "the image-updated message", updateSent)
	cms, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ConfigMaps(in.own).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wroteOutbox, state bool
	for _, cm := range cms.Items {
		wroteOutbox = wroteOutbox || strings.HasPrefix(cm.Name, outbox.DefaultConfigMapPrefix+"-")
		state = state || strings.HasPrefix(cm.Name, pipeline.DefaultStatePrefix+"-")
	}
	if !wroteOutbox || !state {
		t.Errorf("outbox ConfigMap written: %v, trigger state ConfigMap written: %v; want both in %s", wroteOutbox, state, in.own)
	}
	noneForbidden(t, d)
}

// noneForbidden fails the test for each request the apiserver refused.
func noneForbidden(t *testing.T, d *daemon) {
	t.Helper()
	for _, l := range d.lines() {
		if strings.Contains(l, "forbidden") {
			t.Errorf("the install's RBAC refused a request: %s", l)
		}
	}
}

// removeVerb takes verb out of the rules of the kind object that grant it
// on resource, and fails the test if none did.
func removeVerb(t *testing.T, objs []*unstructured.Unstructured, kind, resource, verb string) {
	t.Helper()
	removed := false
	for _, u := range objs {
		if u.GetKind() != kind {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if !slices.Contains(resources, resource) || !slices.Contains(verbs, verb) {
				continue
			}
			verbs = slices.DeleteFunc(verbs, func(v string) bool { return v == verb })
			if err := unstructured.SetNestedStringSlice(rule, verbs, "verbs"); err != nil {
				t.Fatal(err)
			}
			removed = true
		}
		if err := unstructured.SetNestedSlice(u.Object, rules, "rules"); err != nil {
			t.Fatal(err)
		}
	}
	if !removed {
		t.Fatalf("no %s grants %s on %s", kind, verb, resource)
	}
}
