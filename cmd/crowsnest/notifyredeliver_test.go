package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// The command against the outbox ConfigMaps with no daemon running: it
// marks what it is asked to and refuses, naming the problem, what it
// cannot do.
func TestNotifyRedeliverCommand(t *testing.T) {
	ns := env.CreateNamespace(t, "redeliver-cmd")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	store := &outbox.ConfigMapStore{Client: kubecoretest.Wrap(cs), Namespace: ns} // the CLI's defaults
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	mk := func(id, app string, state outbox.State, attempts int, lastError string) {
		t.Helper()
		r := outbox.Record{Delivery: outbox.Delivery{ID: id, Key: id, App: app, Trigger: "on-deployed", Service: "webhook.hook"},
			State: state, Attempts: attempts, LastError: lastError, CreatedAt: t0, UpdatedAt: t0}
		if state != outbox.StatePending {
			r.DoneAt = t0
		}
		if _, err := store.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	const (
		dead    = "abcd1111111111111111111111111111"
		twin    = "abcd2222222222222222222222222222"
		pending = "ef01333333333333333333333333333f"
	)
	mk(dead, "argocd/web", outbox.StateDead, 5, "webhook hook: 502 Bad Gateway")
	mk(twin, "argocd/api", outbox.StateDelivered, 1, "")
	mk(pending, "argocd/db", outbox.StatePending, 2, "webhook hook: 503")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		out, _, err := execute(t, append([]string{"notify", "redeliver", "--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		return out, err
	}

	out, err := run("abcd1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"delivery " + dead + " marked pending", "argocd/web", "on-deployed", "webhook.hook:",
		"dead after 5 attempt(s): webhook hook: 502 Bad Gateway", "redeliveries:  1", "notify log --app argocd/web"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if r, err := store.Get(t.Context(), dead); err != nil || r.State != outbox.StatePending || r.Attempts != 0 || r.LastError != "" || r.Redeliveries != 1 {
		t.Errorf("record after redeliver = %+v, %v; want pending, fresh attempts, 1 redelivery", r, err)
	}

	out, err = run(twin, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rec outbox.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.ID != twin || rec.State != outbox.StatePending || rec.Redeliveries != 1 {
		t.Errorf("-o json = %+v, %v:\n%s", rec, err, out)
	}

	tests := []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{name: "still pending", args: []string{"ef01"}, want: []string{pending, "argocd/db", "still pending after 2 failed attempt(s)", "only delivered or dead"}},
		{name: "redelivered, not sent yet", args: []string{dead}, want: []string{"still pending"}},
		{name: "unknown", args: []string{"ffff"}, want: []string{"no delivery ffff", "namespace " + ns, "crowsnest notify log"}},
		{name: "ambiguous prefix", args: []string{"abcd"}, want: []string{"ambiguous", dead, twin, "more characters"}},
		{name: "too short", args: []string{"ab"}, want: []string{`"ab"`, "4 to 32 hexadecimal digits"}},
		{name: "bad output", args: []string{dead, "-o", "yaml"}, want: []string{"--output", "yaml"}},
		{name: "no ID", args: nil, want: []string{"accepts 1 arg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(tt.args...)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if r, _ := store.Get(t.Context(), pending); r.Redeliveries != 0 || r.Attempts != 2 {
		t.Errorf("a refused redelivery changed the record: %+v", r)
	}
}
