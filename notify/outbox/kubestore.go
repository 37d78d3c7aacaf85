package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// ConfigMap store defaults. Four shards spread writes of many apps; a
// ConfigMap holds at most 1 MiB, so a shard refuses new records past
// 900 KiB rather than failing every later write; a thousand threads per
// shard is months of grouping keys. Every write rewrites a whole
// ConfigMap, so finished records move to log ConfigMaps (Compact), each
// held to 512 KiB, oldest dropped first: the last several hundred
// deliveries per shard. With the log in the shards, every delivery waited
// for a write of up to 900 KiB, which held a wave of a thousand
// Applications to under a hundred messages a second.
const (
	DefaultConfigMapPrefix = "crowsnest-outbox"
	DefaultShards          = 4
	DefaultLogBytes        = 512 << 10
	maxShardBytes          = 900 << 10
	maxThreadsPerShard     = 1000
	recordKeyPrefix        = "d."
	threadKeyPrefix        = "t."
)

// ErrStoreFull is returned when a shard has no room for another record.
var ErrStoreFull = errors.New("outbox store is full")

// ConfigMapStore keeps the outbox in ConfigMaps named <Prefix>-<shard> in
// Namespace (crowsnest's own), one data key per record or thread, sharded
// by app; finished records move to <Prefix>-log-<shard> (Compact). The records saved
// while a shard's write is in flight go out together in its next write
// (group commit), so a deployment wave costs a few writes per shard rather
// than a read and a write per record. Writes are guarded by
// resourceVersion and retried on conflict, so replicas, restarts and the
// CLI do not lose updates.
type ConfigMapStore struct {
	Client    kubecore.Interface
	Namespace string
	// Prefix names the ConfigMaps (DefaultConfigMapPrefix when empty).
	Prefix string
	// Shards is the number of ConfigMaps (DefaultShards when zero). Changing
	// it moves apps between shards: keep it fixed for an installation.
	Shards int
	// Keep is the terminal records kept per app (DefaultKeep when zero).
	Keep int
	// LogBytes bounds the size of the finished records of a shard's log
	// (DefaultLogBytes when zero), and of a shard before compaction: past
	// it the oldest are dropped, whatever their app. Pending records are
	// never dropped.
	LogBytes int

	once sync.Once
	set  *cmbatch.Shards
	logs *cmbatch.Shards

	// logMu guards logIDs: per shard, the IDs in its log ConfigMap (nil
	// until read), so a Create sees a record that compaction moved there.
	logMu  sync.Mutex
	logIDs []map[string]bool
}

var (
	_ Store     = (*ConfigMapStore)(nil)
	_ Compactor = (*ConfigMapStore)(nil)
	_ Peeker    = (*ConfigMapStore)(nil)
)

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

// writers are the shards' group-commit Writers, made on first use.
func (s *ConfigMapStore) writers() *cmbatch.Shards {
	s.init()
	return s.set
}

func (s *ConfigMapStore) init() {
	s.once.Do(func() {
		prefix := cmp.Or(s.Prefix, DefaultConfigMapPrefix)
		s.set = cmbatch.NewShards(s.Client, s.Namespace, prefix, s.shards(),
			map[string]string{"app.kubernetes.io/name": "crowsnest", "app.kubernetes.io/component": "notify-outbox"})
		s.logs = cmbatch.NewShards(s.Client, s.Namespace, prefix+logSuffix, s.shards(),
			map[string]string{"app.kubernetes.io/name": "crowsnest", "app.kubernetes.io/component": "notify-log"})
		s.logIDs = make([]map[string]bool, s.shards())
	})
}

func (s *ConfigMapStore) name(shard int) string { return s.writers().Name(shard) }

func (s *ConfigMapStore) shardOf(key string) int { return s.writers().Of(key) }

// get reads a shard; a missing one is empty.
func (s *ConfigMapStore) get(ctx context.Context, shard int) (*corev1.ConfigMap, error) {
	return s.read(ctx, s.name(shard))
}

// read reads a ConfigMap of the store; a missing one is empty.
func (s *ConfigMapStore) read(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm, err := s.Client.ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &corev1.ConfigMap{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", s.Namespace, name, err)
	}
	return cm, nil
}

// mutate makes fn in the shard's next write: the changes of concurrent
// callers go out together, and another writer's are kept (a conflict
// reads the shard again and applies them anew).
func (s *ConfigMapStore) mutate(ctx context.Context, shard int, fn cmbatch.Change) error {
	return s.writers().Writer(shard).Apply(ctx, fn)
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
	shard := s.shardOf(rec.App)
	if err := s.loadLogIDs(ctx, shard); err != nil {
		return false, err
	}
	created := false
	err = s.mutate(ctx, shard, func(bt *cmbatch.Batch) (bool, error) {
		created = false
		data := bt.Data
		// Compaction adds to the log index before it deletes from the
		// shard, in a write ordered with this one: the record is seen in
		// one or the other.
		if _, ok := data[recordKeyPrefix+rec.ID]; ok || s.inLog(shard, rec.ID) {
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

// Absent implements Peeker from the shard as this process last read or
// wrote it and the IDs of its log: it is sure once it wrote the shard
// (another process changes only records it finds there, never creates
// one while this one leads). The shard is looked at first: compaction
// adds a record's ID to the log before it leaves the shard. A shard more
// than three quarters full says false: a Create there may fail for want
// of room, and a message must not go out that cannot be recorded.
func (s *ConfigMapStore) Absent(id, app string) bool {
	shard := s.shardOf(app)
	absent := false
	kept := s.writers().Writer(shard).Peek(func(data map[string]string) {
		_, ok := data[recordKeyPrefix+id]
		absent = !ok && dataSize(data) < maxShardBytes*3/4
	})
	if !kept || !absent {
		return false
	}
	s.logMu.Lock()
	loaded := s.logIDs[shard] != nil
	s.logMu.Unlock()
	return loaded && !s.inLog(shard, id)
}

// Update implements Store.
func (s *ConfigMapStore) Update(ctx context.Context, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding delivery %s: %w", rec.ID, err)
	}
	return s.mutate(ctx, s.shardOf(rec.App), func(bt *cmbatch.Batch) (bool, error) {
		if _, ok := bt.Data[recordKeyPrefix+rec.ID]; !ok {
			return false, ErrNotFound
		}
		s.put(bt, rec, b)
		return true, nil
	})
}

// Modify implements Store. It finds the record by reading every shard and
// log, then changes it in its shard under that shard's resourceVersion.
func (s *ConfigMapStore) Modify(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	found, err := s.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	var cur, next Record
	err = s.mutate(ctx, s.shardOf(found.App), func(bt *cmbatch.Batch) (bool, error) {
		// A record only in the log comes back to the shard as changed; the
		// log's copy is replaced at the next compaction.
		cur = found
		if v, ok := bt.Data[recordKeyPrefix+id]; ok {
			var err error
			if cur, err = decodeRecord(v); err != nil {
				return false, fmt.Errorf("decoding delivery %s: %w", id, err)
			}
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
		s.put(bt, next, b)
		return true, nil
	})
	if err != nil {
		return cur, err
	}
	return next, nil
}

// put writes rec (encoded as b) into a shard's data; a finished record
// has the shard's finished records trimmed to Keep per app once the
// batch's changes are made (one pass over the shard, however many records
// the batch finished).
func (s *ConfigMapStore) put(bt *cmbatch.Batch, rec Record, b []byte) {
	bt.Data[recordKeyPrefix+rec.ID] = string(b)
	if rec.Terminal() {
		bt.Finally("trim", s.trim)
	}
}

// recordHead is what trimming reads of a record.
type recordHead struct {
	ID     string    `json:"id"`
	App    string    `json:"app"`
	State  State     `json:"state"`
	DoneAt time.Time `json:"doneAt"`
}

// decodeHead reads what trimming and compaction need of a record.
func decodeHead(v string, h *recordHead) bool { return json.Unmarshal([]byte(v), h) == nil }

// trim deletes each app's finished records beyond the newest Keep, then
// the shard's oldest finished records while they take more than LogBytes.
func (s *ConfigMapStore) trim(data map[string]string) {
	type head struct {
		recordHead
		key  string
		size int
	}
	byApp := map[string]map[string]Record{}
	var done []head
	for k, v := range data {
		id, ok := strings.CutPrefix(k, recordKeyPrefix)
		if !ok {
			continue
		}
		var h recordHead
		if !decodeHead(v, &h) || (h.State != StateDelivered && h.State != StateDead) {
			continue
		}
		done = append(done, head{h, k, len(k) + len(v)})
		recs := byApp[h.App]
		if recs == nil {
			recs = map[string]Record{}
			byApp[h.App] = recs
		}
		recs[id] = Record{Delivery: Delivery{ID: id, App: h.App}, State: h.State, DoneAt: h.DoneAt}
	}
	keep := keepOrDefault(s.Keep)
	for app, recs := range byApp {
		if len(recs) > keep {
			for _, id := range trimIDs(recs, app, keep) {
				delete(data, recordKeyPrefix+id)
			}
		}
	}
	limit := cmp.Or(s.LogBytes, DefaultLogBytes)
	size := 0
	for _, h := range done {
		if _, ok := data[h.key]; ok {
			size += h.size
		}
	}
	if size <= limit {
		return
	}
	sort.Slice(done, func(i, j int) bool {
		if !done[i].DoneAt.Equal(done[j].DoneAt) {
			return done[i].DoneAt.Before(done[j].DoneAt)
		}
		return done[i].key < done[j].key
	})
	for _, h := range done {
		if size <= limit {
			break
		}
		if _, ok := data[h.key]; ok {
			delete(data, h.key)
			size -= h.size
		}
	}
}

// Get implements Store. An ID does not say its app's shard, so it reads
// every shard, then every log.
func (s *ConfigMapStore) Get(ctx context.Context, id string) (Record, error) {
	s.init()
	names := make([]string, 0, 2*s.shards())
	for shard := range s.shards() {
		names = append(names, s.set.Name(shard))
	}
	for shard := range s.shards() {
		names = append(names, s.logs.Name(shard))
	}
	for _, name := range names {
		cm, err := s.read(ctx, name)
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

// List implements Store. Undecodable entries are skipped. Pending records
// are only in the shards; finished ones are in the shards until compacted
// into the logs, and a record in both is taken from its shard. At most
// Keep finished records per app are listed.
func (s *ConfigMapStore) List(ctx context.Context, opts ListOptions) ([]Record, error) {
	s.init()
	shards := make([]int, 0, s.shards())
	if opts.App != "" {
		shards = append(shards, s.shardOf(opts.App))
	} else {
		for i := range s.shards() {
			shards = append(shards, i)
		}
	}
	byID := map[string]Record{}
	collect := func(name string, replace bool) error {
		cm, err := s.read(ctx, name)
		if err != nil {
			return err
		}
		for k, v := range cm.Data {
			id, ok := strings.CutPrefix(k, recordKeyPrefix)
			if !ok {
				continue
			}
			if _, seen := byID[id]; seen && !replace {
				continue
			}
			if r, err := decodeRecord(v); err == nil && (opts.App == "" || r.App == opts.App) {
				byID[id] = r
			}
		}
		return nil
	}
	for _, shard := range shards {
		if err := collect(s.set.Name(shard), true); err != nil {
			return nil, err
		}
		if opts.State == StatePending {
			continue // the logs hold finished records only
		}
		if err := collect(s.logs.Name(shard), false); err != nil {
			return nil, err
		}
	}
	byApp := map[string]map[string]Record{}
	for id := range byID {
		app := byID[id].App
		if byApp[app] == nil {
			byApp[app] = map[string]Record{}
		}
		byApp[app][id] = byID[id]
	}
	for app, recs := range byApp {
		for _, id := range trimIDs(recs, app, keepOrDefault(s.Keep)) {
			delete(byID, id)
		}
	}
	out := make([]Record, 0, len(byID))
	for id := range byID {
		if opts.matches(byID[id]) {
			out = append(out, byID[id])
		}
	}
	sortRecords(out)
	return out, nil
}

// Thread implements notify.ThreadStore.
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

// SetThread implements notify.ThreadStore; the oldest threads of a shard past
// its bound are forgotten.
func (s *ConfigMapStore) SetThread(ctx context.Context, key, ref string) error {
	b, err := json.Marshal(threadEntry{Ref: ref, Updated: time.Now().UTC()})
	if err != nil {
		return err
	}
	return s.mutate(ctx, s.shardOf(key), func(bt *cmbatch.Batch) (bool, error) {
		data := bt.Data
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
