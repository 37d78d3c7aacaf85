package faults

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// exfiltrationTimeout bounds how long a credential row waits for every
// refusal and every permitted update to show.
const exfiltrationTimeout = 90 * time.Second

// authLog keeps every Authorization header a registry received, Basic
// credentials decoded.
type authLog struct {
	mu   sync.Mutex
	seen []string
}

func (a *authLog) record(r *http.Request) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return
	}
	if b, ok := strings.CutPrefix(h, "Basic "); ok {
		if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
			h = string(raw)
		}
	}
	a.mu.Lock()
	a.seen = append(a.seen, h)
	a.mu.Unlock()
}

func (a *authLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// An annotation author tries to have crowsnest send others' credentials to
// a registry the author controls (it records every Authorization header):
// a Secret in another team's namespace, an Argo CD cluster Secret, its
// own environment (env:), credentials the registries config assigns
// to another registry, and the team's own Secret made for another registry
// (its url). crowsnest runs against the apiserver with an admin
// kubeconfig, so only its tenancy rules stand in the way. Each is refused
// with a log line and an Event naming the rule, none of the values reaches
// the registry, a log line or an Event, and the same Applications' other
// image is still updated; in a run and under --dry-run.
func TestHostileCredentialExfiltration(t *testing.T) {
	hostileTest(t)
	for _, mode := range []struct {
		name string
		args []string
	}{{"run", nil}, {"dry run", []string{"--dry-run"}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			exfiltration(t, mode.name, mode.args)
		})
	}
}

// exfiltrationAttack is one application of the credential rows.
type exfiltrationAttack struct {
	attack, tried string
	ns, app       string
	pullSecret    string
	secret        string // the value that must not leak
	rule          string // what the refusal says
}

func exfiltration(t *testing.T, mode string, args []string) {
	t.Helper()
	start := time.Now()
	team := env.CreateNamespace(t, "hostile-team")
	other := env.CreateNamespace(t, "hostile-other")
	argo := env.CreateNamespace(t, "hostile-argocd")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	dyn := dynamic.NewForConfigOrDie(env.Config)

	attackerAuth := &authLog{}
	attacker := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "team", Password: "TEAM-OWN-pw"})
	attacker.SetFault(func(_ http.ResponseWriter, r *http.Request) bool { attackerAuth.record(r); return false })
	loot := pushImage(t, attacker, "loot/app", "1.0.0", "1.1.0")
	own := pushImage(t, attacker, "team/own", "1.0.0", "1.1.0")
	trusted := testreg.StartOCI(t, testreg.OCIOptions{})
	pub := testreg.StartOCI(t, testreg.OCIOptions{})
	pubImg := pushImage(t, pub, "team/pub", "1.0.0", "1.1.0")

	suffix := strings.ReplaceAll(mode, " ", "-")
	attacks := []exfiltrationAttack{{
		attack: "credential exfiltration: Secret in another namespace", tried: "pull-secret: secret:<other team's namespace>/creds#token, from a team's Application",
		ns: team, app: "other-namespace", pullSecret: "secret:" + other + "/creds#token", secret: "OTHER-NS-S3CR3T-" + suffix,
		rule: "is not in the Application's namespace",
	}, {
		attack: "credential exfiltration: Argo CD cluster Secret", tried: "pull-secret: secret:<argocd>/prod-cluster#auth (label argocd.argoproj.io/secret-type: cluster), from an Application in Argo CD's namespace",
		ns: argo, app: "cluster-secret", pullSecret: "secret:" + argo + "/prod-cluster#auth", secret: "CLUSTER-S3CR3T-" + suffix,
		rule: "reserved for Argo CD or Kubernetes",
	}, {
		attack: "credential exfiltration: env: source", tried: "pull-secret: env:CROWSNEST_HOSTILE_ENV_TOKEN (crowsnest's own environment)",
		ns: team, app: "environment", pullSecret: "env:CROWSNEST_HOSTILE_ENV_TOKEN", secret: "ENV-S3CR3T-" + suffix,
		rule: "credentials from annotations are off",
	}, {
		attack: "credential exfiltration: config-scoped credential, another registry", tried: "pull-secret: secret:<argocd>/robot#token, which the registries config assigns to another registry, from an Application in the Secret's own namespace",
		ns: argo, app: "assigned-elsewhere", pullSecret: "secret:" + argo + "/robot#token", secret: "ASSIGNED-S3CR3T-" + suffix,
		rule: "assigns these credentials to other repositories",
	}, {
		attack: "credential exfiltration: own Secret, another registry", tried: "pull-secret: secret:<own namespace>/deploy-robot#token, a Secret whose url names another registry, on an image of the attacker's registry",
		ns: team, app: "own-elsewhere", pullSecret: "secret:" + team + "/deploy-robot#token", secret: "OWN-ELSEWHERE-S3CR3T-" + suffix,
		rule: "the Secret is not for this registry",
	}}
	for i := range attacks {
		a := &attacks[i]
		a.attack += " (" + mode + ")"
		if len(args) > 0 {
			a.tried += "; --dry-run"
		}
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "creds"}, StringData: map[string]string{"token": "thief:" + attacks[0].secret}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: argo, Name: "prod-cluster", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
			StringData: map[string]string{"auth": "admin:" + attacks[1].secret}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: argo, Name: "robot"}, StringData: map[string]string{"token": "robot:" + attacks[3].secret}},
		// A team's deploy robot for the registry it is for (its url): an
		// annotation must not send it to another.
		{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "deploy-robot"}, StringData: map[string]string{"token": "robot:" + attacks[4].secret, "url": trusted.Host()}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			StringData: map[string]string{corev1.DockerConfigJsonKey: fmt.Sprintf(`{"auths":{%q:{"username":"team","password":"TEAM-OWN-pw"}}}`, attacker.Host())}},
	}
	for _, s := range secrets {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createApp := func(a appFile) {
		t.Helper()
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(a.String()), &obj); err != nil {
			t.Fatal(err)
		}
		// Created with its status in one write: Argo CD's CRD has no
		// status subresource.
		apps := dyn.Resource(watcher.ApplicationsResource).Namespace(a.ns)
		if _, err := apps.Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range attacks {
		app := kubeApp(a.ns, a.app, map[string]string{"app": loot, "pub": pubImg})
		app.annotations[annPullSecret] = a.pullSecret
		createApp(app)
	}
	ownApp := kubeApp(team, "own", map[string]string{"app": own})
	ownApp.annotations[annPullSecret] = "pullsecret:" + team + "/regcred"
	createApp(ownApp)

	dir := t.TempDir()
	kubeconfig, cfg := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "crowsnest.yaml")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, cfg, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseNamespace: %s}
registries:
  pollInterval: 1h
  list:
  - prefix: %s
    credentials: secret:%s/robot#token
`, team, trusted.Host(), argo))
	p := startCrowsnest(t, []string{"CROWSNEST_HOSTILE_ENV_TOKEN=ci:" + attacks[2].secret},
		append([]string{"run", "--kubeconfig", kubeconfig, "--config", cfg, "--namespace", team, "--namespace", argo,
			"--argocd-namespace", argo, "--log-format", "json", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--webhook-bind-address", "0", "--git-cache-dir", filepath.Join(dir, "git")}, args...)...)

	dryRun := len(args) > 0
	// updatedTo reports whether image (of ns/app) was updated to 1.1.0:
	// the Application patched, or under --dry-run the decision logged.
	updatedTo := func(ns, app, image string) bool {
		if dryRun {
			return p.count(`"msg":"dry run: would update images"`, `"app":"`+ns+"/"+app+`"`, image) > 0
		}
		u, err := dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Get(t.Context(), app, metav1.GetOptions{})
		if err != nil {
			return false
		}
		images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
		return slices.Contains(images, image+":1.1.0")
	}
	refused := func(a exfiltrationAttack) bool {
		return p.count(`"app":"`+a.ns+"/"+a.app+`"`, a.rule) > 0
	}
	ownUsed := func() bool { return slices.Contains(attackerAuth.all(), "team:TEAM-OWN-pw") }
	listEvents := func() []logEvent {
		var evs []logEvent
		for _, ns := range []string{team, argo} {
			list, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				e := &list.Items[i]
				evs = append(evs, logEvent{App: ns + "/" + e.InvolvedObject.Name, Type: e.Type, Reason: e.Reason, Message: e.Message})
			}
		}
		return evs
	}
	// Events are written after the engine's work (at most 10 s later):
	// the refusals' Warnings are part of what must show.
	warned := func(a exfiltrationAttack) bool {
		return slices.ContainsFunc(eventsOf(listEvents(), a.ns+"/"+a.app, ""), func(e logEvent) bool { return strings.Contains(e.Message, a.rule) })
	}
	settled := testwait.Until(t.Context(), exfiltrationTimeout, func() bool {
		if !ownUsed() || !updatedTo(team, "own", own) {
			return false
		}
		for _, a := range attacks {
			if !refused(a) || !updatedTo(a.ns, a.app, pubImg) || !warned(a) {
				return false
			}
		}
		return true
	})
	if !settled {
		t.Errorf("not every refusal, its Warning and permitted update showed within %s", exfiltrationTimeout)
	}
	evs := listEvents()
	seen := attackerAuth.all()
	lines := p.logLines()
	evTexts := make([]string, len(evs))
	for i, e := range evs {
		evTexts[i] = e.String()
	}
	for _, a := range attacks {
		t.Run(a.app, func(t *testing.T) {
			v := newVerdict(t, a.attack, a.tried).since(start)
			key := a.ns + "/" + a.app
			own := slices.ContainsFunc(eventsOf(evs, key, ""), func(e logEvent) bool { return strings.Contains(e.Message, a.rule) })
			v.answer("%s", firstMessage(warnings(evs, key), a.rule))
			n, first := occurrences(seen, a.secret)
			v.leak(n, "the attacker's registry received it %d times: %s", n, first)
			n, first = occurrences(lines, a.secret)
			v.leak(n, "log: %s", first)
			n, first = occurrences(evTexts, a.secret)
			v.leak(n, "Events: %s", first)
			v.expect(refused(a), "no log line refusing it (%q)", a.rule)
			v.expect(own, "no Event on %s naming the rule (%q): %v", key, a.rule, warnings(evs, key))
			v.expect(ownUsed(), "the team's own pull secret never reached the registry: the path that would leak was not live")
			v.loseUnless(updatedTo(a.ns, a.app, pubImg), "%s's other image (no pull-secret) was not updated", key)
			v.credited(foreignEvents(evs, key, a.pullSecret))
			v.done()
		})
	}
}
