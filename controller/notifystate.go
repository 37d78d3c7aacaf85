package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/crowsnest-dev/crowsnest/triggers"
)

// NotifyState is what the notifications of one Application remember: the
// trigger state and a counter of level firings, which makes each firing of
// a condition without oncePer a distinct delivery while a replay of the
// same firing (after a crash between enqueue and save) keeps its key.
type NotifyState struct {
	triggers.State
	Seq uint64 `json:"seq,omitempty"`
}

// NotifyStateStore persists NotifyState per Application, outside the
// Application (whose annotations other controllers rewrite).
type NotifyStateStore interface {
	// LoadAll returns every saved state by Application ID.
	LoadAll(ctx context.Context) (map[string]NotifyState, error)
	// Save stores st for app; a zero st deletes it.
	Save(ctx context.Context, app string, st NotifyState) error
}

// MemoryNotifyState is a NotifyStateStore in process memory (local mode,
// tests): state lasts as long as the process.
type MemoryNotifyState struct {
	mu sync.Mutex
	m  map[string]NotifyState
}

var (
	_ NotifyStateStore = (*MemoryNotifyState)(nil)
	_ NotifyStateStore = (*ConfigMapNotifyState)(nil)
)

// LoadAll implements NotifyStateStore.
func (s *MemoryNotifyState) LoadAll(context.Context) (map[string]NotifyState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m), nil
}

// Save implements NotifyStateStore.
func (s *MemoryNotifyState) Save(_ context.Context, app string, st NotifyState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.isZero() {
		delete(s.m, app)
		return nil
	}
	if s.m == nil {
		s.m = map[string]NotifyState{}
	}
	st.Fired = append([]string(nil), st.Fired...)
	s.m[app] = st
	return nil
}

func (st NotifyState) isZero() bool { return !st.Seen && len(st.Fired) == 0 && st.Seq == 0 }

// ConfigMapNotifyState defaults. Eight shards of at most 900 KiB hold
// thousands of Applications at the Notifier's default of 64 keys (about
// 1.3 KB) each; a ConfigMap cannot exceed 1 MiB.
const (
	DefaultNotifyStatePrefix = "crowsnest-notify-state"
	DefaultNotifyStateShards = 8
	maxNotifyStateShardBytes = 900 << 10
)

// ErrNotifyStateFull is returned when a state shard has no room left.
var ErrNotifyStateFull = errors.New("notification state ConfigMap is full")

// ConfigMapNotifyState keeps NotifyState in ConfigMaps <Prefix>-<shard> in
// Namespace (crowsnest's own), one data key per Application, sharded by
// Application so a save rewrites one small object. Writes are guarded by
// resourceVersion and retried on conflict.
type ConfigMapNotifyState struct {
	Client    kubernetes.Interface
	Namespace string
	// Prefix names the ConfigMaps; DefaultNotifyStatePrefix when empty.
	Prefix string
	// Shards is the number of ConfigMaps; DefaultNotifyStateShards when
	// zero. Keep it fixed for an installation.
	Shards int
}

func (s *ConfigMapNotifyState) shards() int {
	if s.Shards > 0 {
		return s.Shards
	}
	return DefaultNotifyStateShards
}

func (s *ConfigMapNotifyState) name(shard int) string {
	p := s.Prefix
	if p == "" {
		p = DefaultNotifyStatePrefix
	}
	return fmt.Sprintf("%s-%d", p, shard)
}

func (s *ConfigMapNotifyState) shardOf(app string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(app))
	return int(h.Sum32() % uint32(s.shards()))
}

// dataKey turns an Application ID (a UID, or namespace/name) into a
// ConfigMap data key: neither part holds '_'.
func dataKey(app string) string { return strings.ReplaceAll(app, "/", "_") }

func appOfKey(k string) string { return strings.Replace(k, "_", "/", 1) }

// LoadAll implements NotifyStateStore. Undecodable entries are skipped:
// the Application is then seen afresh.
func (s *ConfigMapNotifyState) LoadAll(ctx context.Context) (map[string]NotifyState, error) {
	out := map[string]NotifyState{}
	for shard := range s.shards() {
		cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.name(shard), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, s.name(shard), err)
		}
		for k, v := range cm.Data {
			var st NotifyState
			if json.Unmarshal([]byte(v), &st) == nil {
				out[appOfKey(k)] = st
			}
		}
	}
	return out, nil
}

// Save implements NotifyStateStore.
func (s *ConfigMapNotifyState) Save(ctx context.Context, app string, st NotifyState) error {
	var val string
	if !st.isZero() {
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		val = string(b)
	}
	shard, key := s.shardOf(app), dataKey(app)
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
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
			if size+len(key)+len(val) > maxNotifyStateShardBytes {
				return fmt.Errorf("%w: %s/%s", ErrNotifyStateFull, s.Namespace, s.name(shard))
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
