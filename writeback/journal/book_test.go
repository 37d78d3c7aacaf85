package journal_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// A Book gives each key's intent from a previous process once, within
// the recovery window and only when not done; it writes through, skips a
// write that records the same values, and settles an intent only when
// the changes written are exactly its own.
func TestBook(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "intents.json")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	web := journal.Intent{Method: "git", At: now.Add(-time.Minute), Changes: []journal.Change{{Image: "team/web", From: "1.0.0", To: "1.1.0"}}}
	old := journal.Intent{Method: "argocd", At: now.Add(-2 * time.Hour), Changes: []journal.Change{{Image: "team/api", To: "2.0.0"}}}
	done := web
	done.Done = true
	prev := &journal.File{Path: path}
	for key, in := range map[string]journal.Intent{"shop/web": web, "shop/api": old, "shop/db": done} {
		if err := prev.Save(ctx, key, &in); err != nil {
			t.Fatal(err)
		}
	}

	b := &journal.Book{Store: &journal.File{Path: path}}
	for _, tt := range []struct {
		key  string
		want *journal.Intent
	}{
		{key: "shop/web", want: &web},
		{key: "shop/web"}, // once per process
		{key: "shop/api"}, // older than the window
		{key: "shop/db"},  // done
		{key: "shop/none"},
	} {
		got, err := b.Previous(ctx, tt.key, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Previous(%s) (-want +got):\n%s", tt.key, diff)
		}
	}

	b.Recovering("shop/web", web)
	if _, ok := b.Take("shop/web", []journal.Change{{Image: "team/web", To: "1.2.0"}}); ok {
		t.Error("Take gave an intent for other values")
	}
	if rec, ok := b.Take("shop/web", []journal.Change{{Image: "team/web", To: "1.1.0"}}); !ok || !rec.Writes(web.Changes) {
		t.Errorf("Take = %+v, %v; want the recovering intent", rec, ok)
	}
	if _, ok := b.Take("shop/web", []journal.Change{{Image: "team/web", To: "1.1.0"}}); ok {
		t.Error("Take gave the same intent twice")
	}

	next := journal.Intent{Method: "git", At: now, Changes: []journal.Change{{Image: "team/web", From: "1.1.0", To: "1.2.0"}}}
	if err := b.Record(ctx, "shop/web", next); err != nil {
		t.Fatal(err)
	}
	// An intent another batch wrote does not settle this one.
	if err := b.Settle(ctx, "shop/web", []journal.Change{{Image: "team/web", To: "1.1.0"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Settle(ctx, "shop/api", []journal.Change{{Image: "team/api", To: "2.0.0"}, {Image: "team/api", To: "2.0.0"}}); err != nil {
		t.Fatal(err)
	}
	all, err := (&journal.File{Path: path}).LoadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]journal.Intent{"shop/web": next, "shop/api": old, "shop/db": done}, all); diff != "" {
		t.Errorf("journal before settling (-want +got):\n%s", diff)
	}

	if err := b.Settle(ctx, "shop/web", []journal.Change{{Image: "team/web", To: "1.2.0"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Forget(ctx, "shop/db"); err != nil {
		t.Fatal(err)
	}
	settled := next
	settled.Done = true
	all, err = (&journal.File{Path: path}).LoadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]journal.Intent{"shop/web": settled, "shop/api": old}, all); diff != "" {
		t.Errorf("journal after settling and forgetting (-want +got):\n%s", diff)
	}
}

// Declined versions outlive the intents of their key: a new intent and
// its settling keep them, a new process reads them back, a newer decline
// of the same image replaces the older, and Forget drops them with the
// key.
func TestBookDeclined(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "intents.json")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b := &journal.Book{Store: &journal.File{Path: path}}
	web := journal.Intent{Method: "git", At: now, Changes: []journal.Change{{Image: "team/web", From: "1.0.0", To: "1.1.0"}}}
	if err := b.Record(ctx, "shop/web", web); err != nil {
		t.Fatal(err)
	}
	d11 := journal.Declined{Image: "team/web", To: "1.1.0", URL: "https://git.example.com/pulls/1"}
	dAPI := journal.Declined{Image: "team/api", To: "2.0.0", URL: "https://git.example.com/pulls/1"}
	if err := b.Decline(ctx, "shop/web", []journal.Declined{d11, dAPI}); err != nil {
		t.Fatal(err)
	}
	newer := journal.Intent{Method: "git", At: now.Add(time.Minute), Changes: []journal.Change{{Image: "team/web", From: "1.0.0", To: "1.2.0"}}}
	if err := b.Record(ctx, "shop/web", newer); err != nil {
		t.Fatal(err)
	}
	if err := b.Settle(ctx, "shop/web", []journal.Change{{Image: "team/web", To: "1.2.0"}}); err != nil {
		t.Fatal(err)
	}
	// A key with no intent recorded (a journal emptied by hand).
	if err := b.Decline(ctx, "shop/db", []journal.Declined{{Image: "team/db", To: "3.0.0"}}); err != nil {
		t.Fatal(err)
	}

	next := &journal.Book{Store: &journal.File{Path: path}}
	got, err := next.DeclinedOf(ctx, "shop/web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]journal.Declined{d11, dAPI}, got); diff != "" {
		t.Errorf("declined after a new intent, its settling and a restart (-want +got):\n%s", diff)
	}
	if in, _ := next.Previous(ctx, "shop/db", now, time.Hour); in != nil {
		t.Errorf("a decline without an intent is recovered as a write: %+v", in)
	}
	d12 := journal.Declined{Image: "team/web", To: "1.2.0", URL: "https://git.example.com/pulls/2"}
	if err := next.Decline(ctx, "shop/web", []journal.Declined{d12}); err != nil {
		t.Fatal(err)
	}
	if got, _ := next.DeclinedOf(ctx, "shop/web"); !cmp.Equal([]journal.Declined{dAPI, d12}, got) {
		t.Errorf("after declining 1.2.0: %+v, want api's and web's 1.2.0", got)
	}
	if err := next.Forget(ctx, "shop/web"); err != nil {
		t.Fatal(err)
	}
	if got, _ := (&journal.Book{Store: &journal.File{Path: path}}).DeclinedOf(ctx, "shop/web"); len(got) != 0 {
		t.Errorf("declined after Forget: %+v", got)
	}
}
