package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
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

	shards cmbatch.LazyKV
}

func (s *ConfigMapNotifyState) kv() *cmbatch.KV {
	return s.shards.Get(s.Client, s.Namespace, cmp.Or(s.Prefix, DefaultNotifyStatePrefix), cmp.Or(s.Shards, DefaultNotifyStateShards), ErrNotifyStateFull)
}

// LoadAll implements NotifyStateStore. Undecodable entries are skipped:
// the Application is then seen afresh.
func (s *ConfigMapNotifyState) LoadAll(ctx context.Context) (map[string]NotifyState, error) {
	data, err := s.kv().LoadAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]NotifyState, len(data))
	for app, v := range data {
		var st NotifyState
		if json.Unmarshal([]byte(v), &st) == nil {
			out[app] = st
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
	return s.kv().Put(ctx, app, val)
}
