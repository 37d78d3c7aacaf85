package notifyctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// OutboxStore is the daemon's outbox in the cluster of kubeconfig (empty:
// $KUBECONFIG or in-cluster): the ConfigMaps in namespace (the kubeconfig
// context's when empty).
func OutboxStore(kubeconfig, namespace string) (*outbox.ConfigMapStore, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kube config (--kubeconfig, $KUBECONFIG or in-cluster): %w", err)
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
		}
	}
	cs, err := kubecore.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	return &outbox.ConfigMapStore{Client: cs, Namespace: namespace}, nil
}

// Redeliver marks the delivery whose ID starts with id pending again in
// store's outbox and returns its record before and after. A delivery
// that is missing, ambiguous or still pending is an error that says what
// to do instead.
func Redeliver(ctx context.Context, store *outbox.ConfigMapStore, id string) (before, after outbox.Record, err error) {
	out := &outbox.Outbox{Store: store}
	before, err = out.Find(ctx, id)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return before, after, fmt.Errorf("no delivery %s in the outbox of namespace %s; list delivery IDs with \"crowsnest notify log\"", id, store.Namespace)
	case errors.Is(err, outbox.ErrAmbiguousID):
		return before, after, fmt.Errorf("%w; give more characters of the ID", err)
	case err != nil:
		return before, after, err
	}
	after, err = out.Redeliver(ctx, before.ID)
	switch {
	case errors.Is(err, outbox.ErrPending):
		return before, after, fmt.Errorf("delivery %s (%s to %s) is still pending%s: crowsnest is still delivering it; only delivered or dead deliveries can be redelivered",
			after.ID, after.App, after.Destination(), progress(after))
	case errors.Is(err, outbox.ErrNotFound):
		return before, after, fmt.Errorf("delivery %s is gone from the outbox of namespace %s (trimmed from the log meanwhile)", before.ID, store.Namespace)
	}
	return before, after, err
}

// progress says how far a pending delivery got, for the error above.
func progress(r outbox.Record) string {
	if r.Attempts == 0 {
		return ""
	}
	s := fmt.Sprintf(" after %d failed attempt(s)", r.Attempts)
	if !r.NextAttempt.IsZero() {
		s += ", next at " + r.NextAttempt.UTC().Format(time.RFC3339)
	}
	return s
}
