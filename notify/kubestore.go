package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// ConfigMap store defaults. Four shards spread writes of many apps; a
// ConfigMap holds at most 1 MiB, so a shard refuses new records past
// 900 KiB rather than failing every later write; a thousand threads per
// shard is months of grouping keys.
const (
	DefaultConfigMapPrefix = "crowsnest-outbox"
	DefaultShards          = 4
	maxShardBytes          = 900 << 10
	maxThreadsPerShard     = 1000
	recordKeyPrefix        = "d."
	threadKeyPrefix        = "t."
)

// ErrStoreFull is returned when a shard has no room for another record.
var ErrStoreFull = errors.New("outbox store is full")

// ConfigMapStore keeps the outbox in ConfigMaps named <Prefix>-<shard> in
// Namespace (crowsnest's own), one data key per record or thread, sharded
// by app so trimming an app's log touches one object. Writes are guarded
// by resourceVersion and retried on conflict, so replicas and restarts do
// not lose updates.
type ConfigMapStore struct {
	Client    kubernetes.Interface
	Namespace string
	// Prefix names the ConfigMaps (DefaultConfigMapPrefix when empty).
	Prefix string
	// Shards is the number of ConfigMaps (DefaultShards when zero). Changing
	// it moves apps between shards: keep it fixed for an installation.
	Shards int
	// Keep is the terminal records kept per app (DefaultKeep when zero).
	Keep int
}

var _ Store = (*ConfigMapStore)(nil)

type threadEntry struct {
	Ref     string    `json:"ref"`
	Updated time.Time `json:"updated"`
}

func (s *ConfigMapStore) shards() int {
	if s.Shards <= 0 {
		return DefaultShards
	}
	return s.Shards
}

func (s *ConfigMapStore) name(shard int) string {
	p := s.Prefix
	if p == "" {
		p = DefaultConfigMapPrefix
	}
	return fmt.Sprintf("%s-%d", p, shard)
}

func (s *ConfigMapStore) shardOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(s.shards()))
}

// get reads a shard; a missing one is empty (and has no resourceVersion).
func (s *ConfigMapStore) get(ctx context.Context, shard int) (*corev1.ConfigMap, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.name(shard), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: s.name(shard), Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "crowsnest", "app.kubernetes.io/component": "notify-outbox"},
		}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, s.name(shard), err)
	}
	return cm, nil
}

// mutate applies fn to a shard and writes it back if fn changed it,
// retrying from a fresh read on conflict.
func (s *ConfigMapStore) mutate(ctx context.Context, shard int, fn func(data map[string]string) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, err := s.get(ctx, shard)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		changed, err := fn(cm.Data)
		if err != nil || !changed {
			return err
		}
		cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
		if cm.ResourceVersion == "" {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another writer created it first: retry on its version.
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cm.Name, err)
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

func decodeRecord(v string) (Record, error) {
	var r Record
	err := json.Unmarshal([]byte(v), &r)
	return r, err
}

func dataSize(data map[string]string) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	return n
}

// Create implements Store.
func (s *ConfigMapStore) Create(ctx context.Context, rec Record) (bool, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("encoding delivery %s: %w", rec.ID, err)
	}
	created := false
	err = s.mutate(ctx, s.shardOf(rec.App), func(data map[string]string) (bool, error) {
		created = false
		if _, ok := data[recordKeyPrefix+rec.ID]; ok {
			return false, nil
		}
		if dataSize(data)+len(b) > maxShardBytes {
			return false, fmt.Errorf("%w: ConfigMap %s is at %d bytes", ErrStoreFull, s.name(s.shardOf(rec.App)), dataSize(data))
		}
		data[recordKeyPrefix+rec.ID] = string(b)
		created = true
		return true, nil
	})
	return created, err
}

// Update implements Store.
func (s *ConfigMapStore) Update(ctx context.Context, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding delivery %s: %w", rec.ID, err)
	}
	return s.mutate(ctx, s.shardOf(rec.App), func(data map[string]string) (bool, error) {
		if _, ok := data[recordKeyPrefix+rec.ID]; !ok {
			return false, ErrNotFound
		}
		s.put(data, rec, b)
		return true, nil
	})
}

// Modify implements Store. It finds the record's shard by reading every
// shard, then changes it under that shard's resourceVersion.
func (s *ConfigMapStore) Modify(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	found, err := s.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	var cur, next Record
	err = s.mutate(ctx, s.shardOf(found.App), func(data map[string]string) (bool, error) {
		v, ok := data[recordKeyPrefix+id]
		if !ok {
			return false, ErrNotFound
		}
		var err error
		if cur, err = decodeRecord(v); err != nil {
			return false, fmt.Errorf("decoding delivery %s: %w", id, err)
		}
		next = cur
		if err := fn(&next); err != nil {
			return false, err
		}
		if next.ID != cur.ID || next.App != cur.App {
			return false, ErrChangedIdentity
		}
		b, err := json.Marshal(next)
		if err != nil {
			return false, fmt.Errorf("encoding delivery %s: %w", id, err)
		}
		s.put(data, next, b)
		return true, nil
	})
	if err != nil {
		return cur, err
	}
	return next, nil
}

// put writes rec (encoded as b) into a shard's data and trims its app's
// finished records past Keep.
func (s *ConfigMapStore) put(data map[string]string, rec Record, b []byte) {
	data[recordKeyPrefix+rec.ID] = string(b)
	if !rec.Terminal() {
		return
	}
	recs := map[string]Record{}
	for k, v := range data {
		if id, ok := strings.CutPrefix(k, recordKeyPrefix); ok {
			if r, err := decodeRecord(v); err == nil && r.App == rec.App {
				recs[id] = r
			}
		}
	}
	for _, id := range trimIDs(recs, rec.App, keepOrDefault(s.Keep)) {
		delete(data, recordKeyPrefix+id)
	}
}

// Get implements Store. An ID does not say its app's shard, so it reads
// every shard.
func (s *ConfigMapStore) Get(ctx context.Context, id string) (Record, error) {
	for shard := range s.shards() {
		cm, err := s.get(ctx, shard)
		if err != nil {
			return Record{}, err
		}
		if v, ok := cm.Data[recordKeyPrefix+id]; ok {
			r, err := decodeRecord(v)
			if err != nil {
				return Record{}, fmt.Errorf("decoding delivery %s: %w", id, err)
			}
			return r, nil
		}
	}
	return Record{}, ErrNotFound
}

// List implements Store. Undecodable entries are skipped.
func (s *ConfigMapStore) List(ctx context.Context, opts ListOptions) ([]Record, error) {
	shards := make([]int, 0, s.shards())
	if opts.App != "" {
		shards = append(shards, s.shardOf(opts.App))
	} else {
		for i := range s.shards() {
			shards = append(shards, i)
		}
	}
	var out []Record
	for _, shard := range shards {
		cm, err := s.get(ctx, shard)
		if err != nil {
			return nil, err
		}
		for k, v := range cm.Data {
			if !strings.HasPrefix(k, recordKeyPrefix) {
				continue
			}
			if r, err := decodeRecord(v); err == nil && opts.matches(r) {
				out = append(out, r)
			}
		}
	}
	sortRecords(out)
	return out, nil
}

// Thread implements ThreadStore.
func (s *ConfigMapStore) Thread(ctx context.Context, key string) (string, error) {
	cm, err := s.get(ctx, s.shardOf(key))
	if err != nil {
		return "", err
	}
	v, ok := cm.Data[threadKeyPrefix+key]
	if !ok {
		return "", nil
	}
	var t threadEntry
	if err := json.Unmarshal([]byte(v), &t); err != nil {
		return "", nil //nolint:nilerr // a damaged entry starts a new thread
	}
	return t.Ref, nil
}

// SetThread implements ThreadStore; the oldest threads of a shard past
// its bound are forgotten.
func (s *ConfigMapStore) SetThread(ctx context.Context, key, ref string) error {
	b, err := json.Marshal(threadEntry{Ref: ref, Updated: time.Now().UTC()})
	if err != nil {
		return err
	}
	return s.mutate(ctx, s.shardOf(key), func(data map[string]string) (bool, error) {
		data[threadKeyPrefix+key] = string(b)
		var threads []struct {
			key     string
			updated time.Time
		}
		for k, v := range data {
			if strings.HasPrefix(k, threadKeyPrefix) {
				var t threadEntry
				_ = json.Unmarshal([]byte(v), &t)
				threads = append(threads, struct {
					key     string
					updated time.Time
				}{k, t.Updated})
			}
		}
		if len(threads) > maxThreadsPerShard {
			sort.Slice(threads, func(i, j int) bool { return threads[i].updated.Before(threads[j].updated) })
			for _, t := range threads[:len(threads)-maxThreadsPerShard] {
				delete(data, t.key)
			}
		}
		return true, nil
	})
}
