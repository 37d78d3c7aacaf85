package controller

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// maxShardBytes keeps a shard under the 1 MiB a ConfigMap may hold.
const maxShardBytes = 900 << 10

// shardConflictBackoff spaces the retries of a write that met another
// writer of the same shard: many workers write a handful of shards at once
// on a cold start, and client-go's DefaultRetry (5 tries within about
// 50ms) gave up under that contention, which dropped write intents (the
// fault suite lost announcements after SIGKILL). Jittered, up to about 5s.
var shardConflictBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.6, Jitter: 0.5, Cap: time.Second}

// configMapShards keeps one string per key (an Application ID or key) in
// ConfigMaps <Prefix>-<shard> in Namespace, sharded by key so a write
// rewrites one small object. Writes are guarded by resourceVersion and
// retried on conflict, so replicas and restarts lose no update.
type configMapShards struct {
	Client    kubernetes.Interface
	Namespace string
	Prefix    string
	Shards    int
	// Full is returned when a shard has no room left.
	Full error
}

func (s *configMapShards) name(shard int) string { return fmt.Sprintf("%s-%d", s.Prefix, shard) }

func (s *configMapShards) shardOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(s.Shards))
}

// dataKey turns an Application ID (a UID, or namespace/name) into a
// ConfigMap data key: neither part holds '_'.
func dataKey(app string) string { return strings.ReplaceAll(app, "/", "_") }

func appOfKey(k string) string { return strings.Replace(k, "_", "/", 1) }

// loadAll returns every value by key.
func (s *configMapShards) loadAll(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for shard := range s.Shards {
		cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.name(shard), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, s.name(shard), err)
		}
		for k, v := range cm.Data {
			out[appOfKey(k)] = v
		}
	}
	return out, nil
}

// put stores val under key; "" deletes it.
func (s *configMapShards) put(ctx context.Context, app, val string) error {
	shard, key := s.shardOf(app), dataKey(app)
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	return retry.RetryOnConflict(shardConflictBackoff, func() error {
		cm, err := cms.Get(ctx, s.name(shard), metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create && val == "":
			return nil
		case create:
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: s.name(shard), Namespace: s.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "crowsnest"},
			}}
		case err != nil:
			return fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, s.name(shard), err)
		}
		if cur, ok := cm.Data[key]; ok == (val != "") && cur == val {
			return nil
		}
		if val == "" {
			delete(cm.Data, key)
		} else {
			size := 0
			for k, v := range cm.Data {
				size += len(k) + len(v)
			}
			if size+len(key)+len(val) > maxShardBytes {
				return fmt.Errorf("%w: %s/%s", s.Full, s.Namespace, s.name(shard))
			}
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[key] = val
		}
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another writer created it first: retry as a conflict.
				return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
			}
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("writing ConfigMap %s/%s: %w", s.Namespace, cm.Name, err)
		}
		return err
	})
}
