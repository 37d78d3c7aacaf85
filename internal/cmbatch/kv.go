package cmbatch

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// maxShardBytes keeps a shard under the 1 MiB a ConfigMap may hold.
const maxShardBytes = 900 << 10

// KV keeps one string per key (an Application ID or key) in
// ConfigMaps <Prefix>-<shard> in Namespace, sharded by key so a write
// rewrites one small object. The puts that arrive while a shard's write is
// in flight go out together in its next write (many workers write a
// handful of shards at once on a cold start); writes are guarded by
// resourceVersion and retried on conflict, so replicas and restarts lose
// no update.
type KV struct {
	Client    kubecore.ConfigMapsGetter
	Namespace string
	Prefix    string
	Shards    int
	// Full is returned when a shard has no room left.
	Full error

	once sync.Once
	set  *Shards
}

// LazyKV makes a store's KV on first use and keeps it,
// so its Writers (and the objects they last wrote) last as long as the
// store.
type LazyKV struct {
	once sync.Once
	kv   *KV
}

// Get returns the store's KV, made with these settings on the first call.
func (l *LazyKV) Get(client kubecore.ConfigMapsGetter, namespace, prefix string, shards int, full error) *KV {
	l.once.Do(func() {
		l.kv = &KV{Client: client, Namespace: namespace, Prefix: prefix, Shards: shards, Full: full}
	})
	return l.kv
}

func (s *KV) writers() *Shards {
	s.once.Do(func() {
		s.set = NewShards(s.Client, s.Namespace, s.Prefix, s.Shards,
			map[string]string{"app.kubernetes.io/managed-by": "crowsnest"})
	})
	return s.set
}

// dataKey turns an Application ID (a UID, or namespace/name) into a
// ConfigMap data key: neither part holds '_'.
func dataKey(app string) string { return strings.ReplaceAll(app, "/", "_") }

func appOfKey(k string) string { return strings.Replace(k, "_", "/", 1) }

// LoadAll returns every value by key. The shards are read at once: a
// cold start waits for this before its first write, and one GET after
// another cost it a round trip per shard (8 by default, 34 ms on the
// benchmark's busy apiserver). A key found in two shards (the shard
// count changed) takes the later shard's value, as read in order.
func (s *KV) LoadAll(ctx context.Context) (map[string]string, error) {
	set := s.writers()
	data := make([]map[string]string, set.Len())
	g, gctx := errgroup.WithContext(ctx)
	for shard := range set.Len() {
		g.Go(func() error {
			cm, err := s.Client.ConfigMaps(s.Namespace).Get(gctx, set.Name(shard), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, set.Name(shard), err)
			}
			data[shard] = cm.Data
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range data {
		for k, v := range d {
			out[appOfKey(k)] = v
		}
	}
	return out, nil
}

// Put stores val under key; "" deletes it.
func (s *KV) Put(ctx context.Context, app, val string) error {
	set := s.writers()
	shard, key := set.Of(app), dataKey(app)
	return set.Writer(shard).Apply(ctx, func(b *Batch) (bool, error) {
		cur, ok := b.Data[key]
		if ok == (val != "") && cur == val {
			return false, nil
		}
		if val == "" {
			delete(b.Data, key)
			return true, nil
		}
		size := 0
		for k, v := range b.Data {
			size += len(k) + len(v)
		}
		if size-len(cur)+len(val)+len(key) > maxShardBytes {
			return false, fmt.Errorf("%w: %s/%s", s.Full, s.Namespace, set.Name(shard))
		}
		b.Data[key] = val
		return true, nil
	})
}
