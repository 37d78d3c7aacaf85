package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// unrecordingStore is a MemoryStore that never takes a delivered state:
// the store write a killed process did not get to make.
type unrecordingStore struct {
	*outbox.MemoryStore
}

func (s unrecordingStore) Update(ctx context.Context, rec outbox.Record) error {
	if rec.State == outbox.StateDelivered {
		return outbox.ErrNotFound
	}
	return s.MemoryStore.Update(ctx, rec)
}

// A message sent whose delivered state never reached the store is not
// sent again by the next process when the journal has it; without the
// journal it is (which is what the journal is for).
func TestJournalKeepsMessagesSentAcrossARestart(t *testing.T) {
	for _, withJournal := range []bool{true, false} {
		t.Run(fmt.Sprintf("journal=%v", withJournal), func(t *testing.T) {
			dir := t.TempDir()
			hook := newFlakyWebhook(t, 0)
			svcs := map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}
			mem := &outbox.MemoryStore{}
			open := func() *outbox.Journal {
				if !withJournal {
					return nil
				}
				j, err := outbox.OpenJournal(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				return j
			}

			// The first process sends three messages; their delivered
			// state never lands, and then it is gone.
			first := fastOutbox(unrecordingStore{mem}, svcs, nil)
			first.Journal = open()
			stop := runOutbox(t, first)
			var ids []string
			for i := range 3 {
				app := fmt.Sprintf("argocd/app%d", i)
				rec, _, err := first.Enqueue(t.Context(), hookDelivery(app, app, fmt.Sprintf(`{"n":%d}`, i)))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, rec.ID)
			}
			testwait.For(t, "three messages sent", func() bool { return hook.delivered.Load() == 3 })
			waitSettled(t, first) // the saves failed
			stop()
			if err := first.Journal.Close(); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if rec, err := mem.Get(t.Context(), id); err != nil || rec.State != outbox.StatePending {
					t.Fatalf("record %s after the first process = %v, %v; want it pending", id, rec.State, err)
				}
			}

			// The next process finds them pending.
			reg := prometheus.NewRegistry()
			next := fastOutbox(mem, svcs, outbox.NewMetrics(reg))
			next.Journal = open()
			runOutbox(t, next)
			for _, id := range ids {
				rec := waitState(t, next, id, outbox.StateDelivered)
				if withJournal && !strings.Contains(rec.Receipt.Detail, "local journal") {
					t.Errorf("receipt of %s = %+v, want it to say the journal had it", id, rec.Receipt)
				}
			}
			want, confirmed := int32(3), 3.0
			if !withJournal {
				want, confirmed = 6, 0
			}
			if n := hook.delivered.Load(); n != want {
				t.Errorf("%d messages at the destination, want %d", n, want)
			}
			if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "webhook.hook", "trigger": "on-deployed", "result": outbox.ResultConfirmed}); n != confirmed {
				t.Errorf("%v deliveries confirmed, want %v", n, confirmed)
			}
		})
	}
}

// A redelivery asked for by hand is a message of its own: the journal's
// note of the first one does not hold it back.
func TestJournalDoesNotHoldBackARedelivery(t *testing.T) {
	j, err := outbox.OpenJournal(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	rec := outbox.Record{Delivery: outbox.Delivery{ID: "abcd"}}
	j.Sent(rec, notify.Receipt{ID: "200 OK"})
	if r, ok := j.Lookup(rec); !ok || r.ID != "200 OK" {
		t.Fatalf("Lookup of a sent message = %+v, %v", r, ok)
	}
	rec.Redeliveries = 1
	if _, ok := j.Lookup(rec); ok {
		t.Error("a redelivery was taken for the message sent before it")
	}
	rec.Redeliveries = 0
	j.Recorded(rec)
	if _, ok := j.Lookup(rec); ok {
		t.Error("a recorded message is still in the journal")
	}
}

func TestJournalIsUsedByOneProcessAtATime(t *testing.T) {
	dir := t.TempDir()
	j, err := outbox.OpenJournal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.OpenJournal(dir, nil); !errors.Is(err, outbox.ErrJournalInUse) {
		t.Fatalf("second OpenJournal = %v, want ErrJournalInUse", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := outbox.OpenJournal(dir, nil)
	if err != nil {
		t.Fatalf("OpenJournal after the first closed: %v", err)
	}
	_ = j2.Close()
}

// A journal left with stale and broken lines (a disk filled up, an old
// crash) keeps what is good and recent, and its file does not grow
// without bound however many messages pass through.
func TestJournalDropsOldAndBrokenLinesAndStaysSmall(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notify-sent.jsonl")
	old := time.Now().Add(-outbox.JournalKeep - time.Minute).UnixMilli()
	recent := time.Now().Add(-time.Minute).UnixMilli()
	content := fmt.Sprintf("{\"t\":%d,\"id\":\"old\"}\nnot json\n{\"t\":%d,\"id\":\"recent\",\"receipt\":\"200 OK\"}\n{\"t\":%d,\"id\":\"trunc", old, recent, recent)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := outbox.OpenJournal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	if _, ok := j.Lookup(outbox.Record{Delivery: outbox.Delivery{ID: "old"}}); ok {
		t.Error("an entry older than JournalKeep was kept")
	}
	if r, ok := j.Lookup(outbox.Record{Delivery: outbox.Delivery{ID: "recent"}}); !ok || r.ID != "200 OK" {
		t.Errorf("recent entry = %+v, %v; want its receipt", r, ok)
	}
	for i := range 5000 {
		rec := outbox.Record{Delivery: outbox.Delivery{ID: fmt.Sprintf("id%d", i)}}
		j.Sent(rec, notify.Receipt{ID: "200 OK"})
		j.Recorded(rec)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 1100 {
		t.Errorf("journal file has %d lines after 5000 recorded messages, want it rewritten to stay near 1024", n)
	}
}

// A message recorded in the store is out of the journal for good: the
// next process (a restart) does not take a later message with the same
// key for it, which would record that message as delivered unsent.
func TestJournalRecordedStaysForgottenAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	j, err := outbox.OpenJournal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	recorded := outbox.Record{Delivery: outbox.Delivery{ID: "aaaa"}}
	pending := outbox.Record{Delivery: outbox.Delivery{ID: "bbbb"}}
	skipped := outbox.Record{Delivery: outbox.Delivery{ID: "cccc"}}
	j.Sent(recorded, notify.Receipt{ID: "204 No Content"})
	j.Recorded(recorded)
	j.Sent(pending, notify.Receipt{ID: "204 No Content"})
	j.Sent(skipped, notify.Receipt{Skipped: true, Detail: "nothing for this service"})
	if err := j.Close(); err != nil { // as a kill leaves it
		t.Fatal(err)
	}
	next, err := outbox.OpenJournal(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = next.Close() })
	if _, ok := next.Lookup(recorded); ok {
		t.Error("a message recorded before the restart is in the journal again")
	}
	if _, ok := next.Lookup(pending); !ok {
		t.Error("a message sent and not recorded before the restart is not in the journal")
	}
	if r, ok := next.Lookup(skipped); !ok || !r.Skipped {
		t.Errorf("a skipped send reads back as %+v, %v; want it skipped", r, ok)
	}
}
