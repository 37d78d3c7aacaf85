package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
)

// NewNotifications builds the Notifier and its Outbox from cfg: services
// with their secrets resolved, the argocd-notifications-cm merged in when
// the config names it, and state and outbox in ConfigMaps of namespace
// (crowsnest's own) in a cluster, in memory otherwise. With dryRun the
// triggers are evaluated as usual but nothing is sent or stored: each
// message is logged ("dry run: would notify") and its state kept in
// memory. The config is applied once here; call Notifier.Apply on reload.
// apps, when not nil, is handed each config's services once they are in
// force (the Git writer lends their GitHub App).
func NewNotifications(_ context.Context, cfg *config.Config, clientset kubecore.Interface, namespace string, dryRun bool,
	reg prometheus.Registerer, log *slog.Logger, apps *setup.NotificationApps) (*pipeline.Notifier, *outbox.Outbox, error) {
	if log == nil {
		log = slog.Default()
	}
	out := &outbox.Outbox{Metrics: outbox.NewMetrics(reg), Logger: log}
	ns := &notificationSetup{clientset: clientset, namespace: namespace, dryRun: dryRun, log: log, apps: apps}
	n := &pipeline.Notifier{Outbox: out, Log: log, Metrics: pipeline.NewMetrics(reg), Setup: ns}
	if clientset != nil && !dryRun {
		store := &outbox.ConfigMapStore{Client: clientset, Namespace: namespace}
		out.Store, ns.store = store, store
		n.State = &pipeline.ConfigMapState{Client: clientset, Namespace: namespace}
	} else {
		out.Store = &outbox.MemoryStore{}
		ns.store = out.Store
		n.State = &pipeline.MemoryState{}
	}
	out.DeadLetters = deadLetterLog{log}
	if err := n.Apply(cfg); err != nil {
		return nil, nil, err
	}
	return n, out, nil
}

// dryRunService stands in for every service under --dry-run: it logs
// what would be sent and sends nothing.
type dryRunService struct {
	name string
	log  *slog.Logger
}

func (d dryRunService) Send(ctx context.Context, n notify.Notification, dest notify.Destination) (notify.Receipt, error) {
	d.log.Info("dry run: would notify", "service", d.name, "recipient", dest.Recipient, "delivery", notify.DeliveryIDFrom(ctx), "message", n.Message)
	return notify.Receipt{Skipped: true, Detail: "dry run"}, nil
}

// notificationSetup is the Notifier's Setup in crowsnest run.
type notificationSetup struct {
	clientset kubecore.Interface
	namespace string
	// store is the outbox's, which some senders keep state in.
	store  outbox.Store
	dryRun bool
	log    *slog.Logger
	// apps keeps the services put in force, for the Git writer.
	apps *setup.NotificationApps
}

// Services builds the senders of nc; under --dry-run each only logs. The
// notifier puts nc in force when they build: so does apps then.
func (st *notificationSetup) Services(nc *config.Notifications) (map[string]notify.Service, error) {
	svcs, err := setup.BuildServices(nc, st.store)
	if err == nil && st.apps != nil {
		st.apps.Applied(nc)
	}
	if st.dryRun {
		for name := range svcs {
			svcs[name] = dryRunService{name: name, log: st.log}
		}
	}
	return svcs, err
}

// Prepare merges the argocd-notifications-cm the config names under the
// config's own entries and resolves `$key` references from its Secret. It
// never changes the config it is given.
func (st *notificationSetup) Prepare(ctx context.Context, in *config.Notifications) (*config.Notifications, error) {
	clientset, namespace := st.clientset, st.namespace
	n := *in
	n.Services = maps.Clone(in.Services)
	for name, s := range n.Services {
		n.Services[name] = setup.CloneService(s)
	}
	ref := n.ArgoCDConfigMap
	var secret map[string][]byte
	if ref.Name != "" {
		if clientset == nil {
			return nil, fmt.Errorf("argocdConfigMap %s: reading it needs a cluster", ref.Name)
		}
		ns := ref.Namespace
		if ns == "" {
			ns = namespace
		}
		if ref.Secret != "" {
			s, err := clientset.Secrets(ns).Get(ctx, ref.Secret, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				// No Secret: only `$key` references fail, below.
			case err != nil:
				return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, ref.Secret, err)
			default:
				secret = s.Data
			}
		}
		cm, err := clientset.ConfigMaps(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", ns, ref.Name, err)
		}
		parsed, err := config.ParseArgoCDConfigMap(cm.Data, secret)
		if err != nil {
			return nil, err
		}
		n.Merge(parsed)
	}
	if err := n.ResolveSecrets(secret); err != nil {
		return nil, err
	}
	return &n, nil
}

// deadLetterLog logs each notification the outbox gave up on.
type deadLetterLog struct{ log *slog.Logger }

func (d deadLetterLog) DeadLettered(r outbox.Record) {
	d.log.Error("notification given up", "app", r.App, "trigger", r.Trigger, "service", r.Service, "attempts", r.Attempts, "error", r.LastError)
}
