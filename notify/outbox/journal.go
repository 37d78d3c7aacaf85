package outbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// Journal file names inside the state directory.
const (
	journalFile     = "notify-sent.jsonl"
	journalLockFile = "notify-sent.lock"
	// JournalKeep is how long a journal entry is kept: a message is not
	// re-fired later than this after the crash that lost its record (the
	// notifier looks at every Application within moments of a start).
	JournalKeep = time.Hour
	// journalMinCompact is the fewest lines a journal file reaches before
	// it is rewritten without its recorded entries.
	journalMinCompact = 1024
)

// Journal remembers in a local file each message sent until its
// delivered state is in the store. A process killed between the two
// (SIGKILL, OOM kill, a panic) leaves the file behind; the next process
// in the same place (a restarted container keeps its emptyDir) reads it
// and records those deliveries as delivered instead of sending them
// again. The store's write takes a round trip to the apiserver, the
// journal's one write(2) to the page cache, which a killed process does
// not lose: what a crash can make the next process send again shrinks
// from the messages waiting for the store to those whose destination
// answered but whose answer was not read yet.
//
// The journal is not flushed to disk (fsync): a lost node loses it, and
// with it only this shortcut. A failover to another replica does not see
// it either; that case keeps the outbox's bound (MaxUnrecorded) and the
// destinations' notify.Confirmer. A nil *Journal remembers nothing.
type Journal struct {
	dir    string
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	f       *os.File
	lock    *os.File
	entries map[journalKey]journalEntry
	lines   int
	failing bool
}

type journalKey struct {
	id           string
	redeliveries int
}

type journalEntry struct {
	At           int64  `json:"t"`
	ID           string `json:"id"`
	Redeliveries int    `json:"r,omitempty"`
	Receipt      string `json:"receipt,omitempty"`
	Detail       string `json:"detail,omitempty"`
	Skipped      bool   `json:"skipped,omitempty"`
	// Recorded cancels the entry before it: the delivery's state is in
	// the store, and a later delivery with the same key is a new message.
	Recorded bool `json:"recorded,omitempty"`
}

func (e journalEntry) key() journalKey { return journalKey{e.ID, e.Redeliveries} }

// ErrJournalInUse is returned by OpenJournal when another process holds
// the journal of dir.
var ErrJournalInUse = errors.New("another crowsnest process uses this state directory")

// OpenJournal opens (creating them as needed) dir and the journal in it,
// reading the entries an earlier process left that are younger than
// JournalKeep; unreadable lines are skipped and counted in a log line.
// One process at a time uses a journal (an advisory lock, released when
// the process ends however it ends).
func OpenJournal(dir string, logger *slog.Logger) (*Journal, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, journalLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state directory %s: %w", dir, ErrJournalInUse)
		}
		return nil, fmt.Errorf("state directory %s: locking %s: %w", dir, journalLockFile, err)
	}
	j := &Journal{dir: dir, logger: logger, now: time.Now, lock: lock, entries: map[journalKey]journalEntry{}}
	// Rewrites a killed process left half done.
	if leftovers, err := filepath.Glob(filepath.Join(dir, journalFile+".*")); err == nil {
		for _, f := range leftovers {
			_ = os.Remove(f)
		}
	}
	bad, err := j.load()
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	if bad > 0 {
		logger.Warn("skipped unreadable lines of the notification journal", "file", filepath.Join(dir, journalFile), "lines", bad)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.compactLocked(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if len(j.entries) > 0 {
		logger.Info("notification journal: messages an earlier process sent are recorded as delivered, not sent again", "count", len(j.entries))
	}
	return j, nil
}

// load reads the journal file, keeping its entries younger than
// JournalKeep; it returns the number of lines it could not read.
func (j *Journal) load() (int, error) {
	f, err := os.Open(filepath.Join(j.dir, journalFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the notification journal: %w", err)
	}
	defer func() { _ = f.Close() }()
	oldest := j.now().Add(-JournalKeep).UnixMilli()
	bad := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.ID == "" {
			bad++
			continue
		}
		switch {
		case e.Recorded:
			delete(j.entries, e.key())
		case e.At >= oldest:
			j.entries[e.key()] = e
		}
	}
	if err := sc.Err(); err != nil {
		// A line longer than any entry: the rest is not a journal.
		return bad + 1, nil //nolint:nilerr // counted as unreadable, the entries read so far kept
	}
	return bad, nil
}

// compactLocked rewrites the journal with its live entries (a new file
// renamed over the old one, so a kill meanwhile leaves one or the other
// whole) and opens it for appending; j.mu is held.
func (j *Journal) compactLocked() error {
	oldest := j.now().Add(-JournalKeep).UnixMilli()
	tmp, err := os.CreateTemp(j.dir, journalFile+".*")
	if err != nil {
		return fmt.Errorf("rewriting the notification journal: %w", err)
	}
	w := bufio.NewWriter(tmp)
	for k, e := range j.entries {
		if e.At < oldest {
			delete(j.entries, k)
			continue
		}
		line, _ := json.Marshal(e)
		_, _ = w.Write(append(line, '\n'))
	}
	err = w.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(j.dir, journalFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("rewriting the notification journal: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(j.dir, journalFile), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the notification journal: %w", err)
	}
	if j.f != nil {
		_ = j.f.Close()
	}
	j.f, j.lines = f, len(j.entries)
	return nil
}

// Sent notes that rec's message was accepted by its destination with
// receipt. It is one append to the file; a failure is logged (once until
// a write succeeds again) and only loses the shortcut.
func (j *Journal) Sent(rec Record, receipt notify.Receipt) {
	if j == nil {
		return
	}
	e := journalEntry{At: j.now().UnixMilli(), ID: rec.ID, Redeliveries: rec.Redeliveries,
		Receipt: receipt.ID, Detail: receipt.Detail, Skipped: receipt.Skipped}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries[e.key()] = e
	j.appendLocked(e)
}

// appendLocked writes e to the file, rewriting it first when it holds
// mostly settled entries; j.mu is held.
func (j *Journal) appendLocked(e journalEntry) {
	if j.lines >= max(journalMinCompact, 4*len(j.entries)) {
		if err := j.compactLocked(); err != nil {
			j.failedLocked(err)
			return
		}
		if e.Recorded {
			return // the rewrite left the entry out
		}
	}
	line, _ := json.Marshal(e)
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		j.failedLocked(err)
		return
	}
	j.lines++
	j.failing = false
}

func (j *Journal) failedLocked(err error) {
	if !j.failing {
		j.logger.Warn("writing the notification journal failed; a crash may make the next process send recent messages again", "err", err)
	}
	j.failing = true
}

// Recorded forgets rec: its delivered state is in the store. A line
// saying so cancels the entry for the next process too: a later delivery
// with the same key (the store forgot the record, a local-mode restart
// counts from 1 again) is a new message, which must be sent.
func (j *Journal) Recorded(rec Record) {
	if j == nil {
		return
	}
	k := journalKey{rec.ID, rec.Redeliveries}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.entries[k]; !ok {
		return
	}
	delete(j.entries, k)
	j.appendLocked(journalEntry{At: j.now().UnixMilli(), ID: rec.ID, Redeliveries: rec.Redeliveries, Recorded: true})
}

// Lookup returns the receipt of rec's message when the journal holds it:
// it was sent, by this process or the one before it, and not recorded.
func (j *Journal) Lookup(rec Record) (notify.Receipt, bool) {
	if j == nil {
		return notify.Receipt{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.entries[journalKey{rec.ID, rec.Redeliveries}]
	if !ok || e.At < j.now().Add(-JournalKeep).UnixMilli() {
		return notify.Receipt{}, false
	}
	return notify.Receipt{ID: e.Receipt, Detail: e.Detail, Skipped: e.Skipped}, true
}

// Close closes the journal's file and releases its lock.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.f.Close()
	if cerr := j.lock.Close(); err == nil {
		err = cerr
	}
	return err
}
