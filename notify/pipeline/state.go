package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// State is what the notifications of one Application remember: the
// trigger state and a counter of level firings, which makes each firing of
// a condition without oncePer a distinct delivery while a replay of the
// same firing (after a crash between enqueue and save) keeps its key.
type State struct {
	triggers.State
	Seq uint64 `json:"seq,omitempty"`
}

// StateStore persists State per Application, outside the
// Application (whose annotations other controllers rewrite).
type StateStore interface {
	// LoadAll returns every saved state by Application ID.
	LoadAll(ctx context.Context) (map[string]State, error)
	// Save stores st for app; a zero st deletes it.
	Save(ctx context.Context, app string, st State) error
}

// MemoryState is a StateStore in process memory (local mode,
// tests): state lasts as long as the process.
type MemoryState struct {
	mu sync.Mutex
	m  map[string]State
}

var (
	_ StateStore = (*MemoryState)(nil)
	_ StateStore = (*ConfigMapState)(nil)
)

// LoadAll implements StateStore.
func (s *MemoryState) LoadAll(context.Context) (map[string]State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m), nil
}

// Save implements StateStore.
func (s *MemoryState) Save(_ context.Context, app string, st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.isZero() {
		delete(s.m, app)
		return nil
	}
	if s.m == nil {
		s.m = map[string]State{}
	}
	st.Fired = append([]string(nil), st.Fired...)
	s.m[app] = st
	return nil
}

func (st State) isZero() bool { return !st.Seen && len(st.Fired) == 0 && st.Seq == 0 }

// ConfigMapState defaults. Eight shards of at most 900 KiB hold
// thousands of Applications at the Notifier's default of 64 keys (about
// 1.3 KB) each; a ConfigMap cannot exceed 1 MiB.
const (
	DefaultStatePrefix = "crowsnest-notify-state"
	DefaultStateShards = 8
)

// ErrStateFull is returned when a state shard has no room left.
var ErrStateFull = errors.New("notification state ConfigMap is full")

// ConfigMapState keeps State in ConfigMaps <Prefix>-<shard> in
// Namespace (crowsnest's own), one data key per Application, sharded by
// Application so a save rewrites one small object. Writes are guarded by
// resourceVersion and retried on conflict.
type ConfigMapState struct {
	Client    kubecore.Interface
	Namespace string
	// Prefix names the ConfigMaps; DefaultStatePrefix when empty.
	Prefix string
	// Shards is the number of ConfigMaps; DefaultStateShards when
	// zero. Keep it fixed for an installation.
	Shards int

	shards cmbatch.LazyKV
}

func (s *ConfigMapState) kv() *cmbatch.KV {
	return s.shards.Get(s.Client, s.Namespace, cmp.Or(s.Prefix, DefaultStatePrefix), cmp.Or(s.Shards, DefaultStateShards), ErrStateFull)
}

// LoadAll implements StateStore. Undecodable entries are skipped:
// the Application is then seen afresh.
func (s *ConfigMapState) LoadAll(ctx context.Context) (map[string]State, error) {
	data, err := s.kv().LoadAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]State, len(data))
	for app, v := range data {
		var st State
		if json.Unmarshal([]byte(v), &st) == nil {
			out[app] = st
		}
	}
	return out, nil
}

// Save implements StateStore.
func (s *ConfigMapState) Save(ctx context.Context, app string, st State) error {
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
