package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/config"
	crowsnestd "github.com/crowsnest-dev/crowsnest/internal/daemon"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// TestUnsupportedServiceFailsVisibly runs the daemon's notifications on
// the real apiserver with an argocd-notifications-cm whose subscription
// goes to a service type crowsnest cannot send to (carrierpigeon, as
// Argo CD has none crowsnest lacks; a ConfigMap's unknown type is read
// the same way): the daemon
// starts, warns about the service, sets the unsupported metric, and the
// message is dead-lettered with the reason in the delivery log instead of
// going nowhere.
func TestUnsupportedServiceFailsVisibly(t *testing.T) {
	ns := env.CreateNamespace(t, "notify-unsupported")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: config.DefaultArgoCDNotificationsConfigMap},
		Data: map[string]string{
			"service.carrierpigeon": "loft: rooftop-4\n",
			"subscriptions":         "- recipients: [carrierpigeon:deploys]\n  triggers: [on-created]\n",
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Notifications.Catalog = true
	cfg.Notifications.ArgoCDConfigMap = config.ArgoCDConfigMapRef{Name: config.DefaultArgoCDNotificationsConfigMap}
	logs := &testenv.LogBuffer{}
	reg := prometheus.NewRegistry()
	n, out, err := crowsnestd.NewNotifications(ctx, cfg, kubecoretest.Wrap(cs), ns, false, reg, slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatalf("an unsupported service must not stop the daemon: %v", err)
	}
	if !strings.Contains(logs.String(), "service.carrierpigeon") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning about service.carrierpigeon:\n%s", logs.String())
	}
	if v := gatherGauge(t, reg, "crowsnest_notify_config_unsupported"); v != 1 {
		t.Errorf("crowsnest_notify_config_unsupported = %v, want 1", v)
	}
	done := make(chan struct{}, 2)
	runCtx, cancel := context.WithCancel(ctx)
	go func() { _ = out.Start(runCtx); done <- struct{}{} }()
	go func() { _ = n.Start(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	n.MarkSynced()
	n.OnTransition(nil, notifyApp(t, "web"))
	store := &outbox.ConfigMapStore{Client: kubecoretest.Wrap(cs), Namespace: ns}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) { // sleep-ok: poll interval
		recs, err := store.List(ctx, outbox.ListOptions{State: outbox.StateDead})
		if err == nil && len(recs) == 1 {
			if r := recs[0]; r.Service != "carrierpigeon" || !strings.Contains(r.LastError, `"carrierpigeon" is not supported`) || r.Attempts != 1 {
				t.Fatalf("dead letter: service %s attempts %d error %q", r.Service, r.Attempts, r.LastError)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead-lettered delivery for the carrierpigeon subscription: %v %v\n%s", recs, err, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "notification given up") {
		t.Errorf("no error log for the dead letter:\n%s", logs.String())
	}
}

func gatherGauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
