package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// State is where a delivery stands.
type State string

// Delivery states.
const (
	StatePending   State = "pending"
	StateDelivered State = "delivered"
	StateDead      State = "dead" // gave up: attempts spent or a permanent error
)

// Delivery is one notification to one destination, as the caller asks
// for it.
type Delivery struct {
	// ID is derived from Key by Enqueue (DeliveryID); callers leave it empty.
	ID string `json:"id"`
	// Key is the caller's dedupe key (trigger, oncePer value, app,
	// destination): enqueuing a key again is a no-op while its record is kept.
	Key          string              `json:"key"`
	App          string              `json:"app"` // namespace/name
	Trigger      string              `json:"trigger,omitempty"`
	Service      string              `json:"service"`
	Recipient    string              `json:"recipient,omitempty"`
	Notification notify.Notification `json:"notification"`
	// MaybeSent says an earlier process may have sent this delivery
	// already: the caller asks for it again from state that process may
	// have acted on without recording it (the first look after a restart
	// or a failover). The outbox records it first and, where the service
	// can tell (notify.Confirmer), asks the destination before sending it.
	MaybeSent bool `json:"-"`
	// ObservedAt is when the caller observed what the message is about
	// (crowsnest_notify_latency_seconds); zero leaves it uncounted.
	ObservedAt time.Time `json:"-"`
}

// Destination is where the delivery goes.
func (d Delivery) Destination() notify.Destination {
	return notify.Destination{Service: d.Service, Recipient: d.Recipient}
}

// Record is a Delivery with its progress: the outbox entry and the
// delivery log line.
type Record struct {
	Delivery
	State        State          `json:"state"`
	Attempts     int            `json:"attempts,omitempty"`
	LastError    string         `json:"lastError,omitempty"`
	Receipt      notify.Receipt `json:"receipt,omitzero"`
	Redeliveries int            `json:"redeliveries,omitempty"`
	CreatedAt    time.Time      `json:"createdAt"`
	UpdatedAt    time.Time      `json:"updatedAt"`
	NextAttempt  time.Time      `json:"nextAttempt,omitzero"`
	DoneAt       time.Time      `json:"doneAt,omitzero"`
}

// Terminal reports whether the record needs no more attempts.
func (r Record) Terminal() bool { return r.State == StateDelivered || r.State == StateDead }

// sending is what a notify.Confirmer is asked to look for: r's message.
func (r Record) sending() notify.Sending {
	return notify.Sending{
		ID:           r.ID,
		Redeliveries: r.Redeliveries,
		Recipient:    r.Recipient,
		Notification: r.Notification,
		MaybeSent:    r.MaybeSent,
		CreatedAt:    r.CreatedAt,
		UpdatedAt:    r.UpdatedAt,
	}
}

// idBytes is the length of a delivery ID before hex encoding: 128 bits
// keep IDs unique without making them hard to copy.
const idBytes = 16

// DeliveryID derives a delivery's ID from its dedupe key.
func DeliveryID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:idBytes])
}

// ErrNotFound is returned for an unknown delivery ID.
var ErrNotFound = errors.New("delivery not found")

// ListOptions filters Store.List; zero fields match everything.
type ListOptions struct {
	App   string
	State State
}

// Store keeps outbox records and Slack threads. Implementations keep at
// most a retention's worth of terminal records per app (dropping the
// oldest) and never drop pending ones.
type Store interface {
	notify.ThreadStore
	// Create saves rec unless a record with its ID exists.
	Create(ctx context.Context, rec Record) (created bool, err error)
	// Update replaces the record with rec.ID.
	Update(ctx context.Context, rec Record) error
	Get(ctx context.Context, id string) (Record, error)
	// List returns matching records, oldest first.
	List(ctx context.Context, opts ListOptions) ([]Record, error)
	// Modify saves what fn makes of the record with id, atomically against
	// other writers: fn gets the current record and may run again after a
	// conflict; it must keep the record's ID and app. An error from fn
	// aborts the change and is returned with the record as read.
	Modify(ctx context.Context, id string, fn func(*Record) error) (Record, error)
}

// Peeker is a Store that can tell from memory, without a request, that
// it holds no record with an ID. The outbox then sends a new delivery
// while its record is being written rather than after (an early send).
// Absent is true only when the store is sure: it answers false when it
// has read nothing yet.
type Peeker interface {
	Absent(id, app string) bool
}

// ErrChangedIdentity is returned by Store.Modify when fn changed the
// record's ID or app, which place it in the store.
var ErrChangedIdentity = errors.New("a record's ID and app cannot change")

// DefaultKeep is how many terminal records a store keeps per app: enough
// for `notify log` to show a day of busy deployments, small enough that a
// ConfigMap shard holds many apps.
const DefaultKeep = 20

// MemoryStore is a Store in process memory, for tests and `crowsnest demo`.
type MemoryStore struct {
	// Keep is the terminal records kept per app (DefaultKeep when zero).
	Keep int

	mu      sync.Mutex
	records map[string]Record
	threads map[string]string
}

var (
	_ Store  = (*MemoryStore)(nil)
	_ Peeker = (*MemoryStore)(nil)
)

func (m *MemoryStore) init() {
	if m.records == nil {
		m.records = map[string]Record{}
		m.threads = map[string]string{}
	}
}

// Create implements Store.
func (m *MemoryStore) Create(_ context.Context, rec Record) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if _, ok := m.records[rec.ID]; ok {
		return false, nil
	}
	m.records[rec.ID] = rec
	return true, nil
}

// Absent implements Peeker.
func (m *MemoryStore) Absent(id, _ string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.records[id]
	return !ok
}

// Update implements Store.
func (m *MemoryStore) Update(_ context.Context, rec Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if _, ok := m.records[rec.ID]; !ok {
		return ErrNotFound
	}
	m.put(rec)
	return nil
}

// Modify implements Store.
func (m *MemoryStore) Modify(_ context.Context, id string, fn func(*Record) error) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.records[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	next := cur
	if err := fn(&next); err != nil {
		return cur, err
	}
	if next.ID != cur.ID || next.App != cur.App {
		return cur, ErrChangedIdentity
	}
	m.put(next)
	return next, nil
}

// put saves rec and trims its app's finished records; m.mu is held.
func (m *MemoryStore) put(rec Record) {
	m.records[rec.ID] = rec
	if rec.Terminal() {
		for _, id := range trimIDs(m.records, rec.App, keepOrDefault(m.Keep)) {
			delete(m.records, id)
		}
	}
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return r, nil
}

// List implements Store.
func (m *MemoryStore) List(_ context.Context, opts ListOptions) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for id := range m.records {
		if r := m.records[id]; opts.matches(r) {
			out = append(out, r)
		}
	}
	sortRecords(out)
	return out, nil
}

// Thread implements notify.ThreadStore.
func (m *MemoryStore) Thread(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.threads[key], nil
}

// SetThread implements notify.ThreadStore.
func (m *MemoryStore) SetThread(_ context.Context, key, ref string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	m.threads[key] = ref
	return nil
}

func (o ListOptions) matches(r Record) bool {
	return (o.App == "" || o.App == r.App) && (o.State == "" || o.State == r.State)
}

func sortRecords(rs []Record) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].CreatedAt.Equal(rs[j].CreatedAt) {
			return rs[i].CreatedAt.Before(rs[j].CreatedAt)
		}
		return rs[i].ID < rs[j].ID
	})
}

func keepOrDefault(k int) int {
	if k <= 0 {
		return DefaultKeep
	}
	return k
}

// trimIDs returns the IDs of app's terminal records beyond the newest keep.
func trimIDs(records map[string]Record, app string, keep int) []string {
	var done []Record
	for id := range records {
		if r := records[id]; r.App == app && r.Terminal() {
			done = append(done, r)
		}
	}
	if len(done) <= keep {
		return nil
	}
	sort.Slice(done, func(i, j int) bool {
		if !done[i].DoneAt.Equal(done[j].DoneAt) {
			return done[i].DoneAt.After(done[j].DoneAt)
		}
		return done[i].ID > done[j].ID
	})
	ids := make([]string, 0, len(done)-keep)
	for i := range done[keep:] {
		ids = append(ids, done[keep+i].ID)
	}
	return ids
}
