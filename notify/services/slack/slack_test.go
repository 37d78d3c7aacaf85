package slack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got %q: %v", got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestSlackPostMessage(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	sl := f.Service(t, nil, func(c *config.SlackService) { c.Username, c.Icon = "crowsnest", ":bird:" })
	blocks := `[{"type":"section","text":{"type":"mrkdwn","text":"*guestbook* deployed"}}]`
	atts := `[{"color":"#18be52","title":"guestbook","fields":[{"title":"Sync","value":"Synced","short":true}]}]`
	rc, err := sl.Send(t.Context(), notify.Notification{Message: "guestbook deployed", Slack: &notify.SlackTemplate{Blocks: blocks, Attachments: atts}},
		notify.Destination{Service: "slack", Recipient: "#deploys"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.ID != "1700000000.000001" {
		t.Errorf("receipt = %+v", rc)
	}
	calls := f.Calls()
	if len(calls) != 1 || calls[0].Method != "chat.postMessage" {
		t.Fatalf("calls = %+v", calls)
	}
	form := calls[0].Form
	for k, want := range map[string]string{"channel": "#deploys", "text": "guestbook deployed", "username": "crowsnest", "icon_emoji": ":bird:", "token": testnotify.SlackToken, "thread_ts": ""} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	jsonEqual(t, blocks, form.Get("blocks"))
	jsonEqual(t, `[{"color":"#18be52","title":"guestbook","fields":[{"title":"Sync","value":"Synced","short":true}],"blocks":null}]`, form.Get("attachments"))
}

func TestSlackThreadsAndPolicies(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	store := &outbox.MemoryStore{}
	sl := f.Service(t, store)
	send := func(msg string, policy notify.DeliveryPolicy, broadcast bool) notify.Receipt {
		t.Helper()
		rc, err := sl.Send(t.Context(), notify.Notification{Message: msg, Slack: &notify.SlackTemplate{GroupingKey: "guestbook-abc", DeliveryPolicy: policy, NotifyBroadcast: broadcast}},
			notify.Destination{Service: "slack", Recipient: "#deploys"})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	// Update with no message yet posts nothing.
	if rc := send("u0", notify.PolicyUpdate, false); !rc.Skipped {
		t.Errorf("Update without a thread = %+v, want skipped", rc)
	}
	send("first", notify.PolicyPost, false)
	send("reply", notify.PolicyPost, true)
	send("edited", notify.PolicyPostAndUpdate, false)
	send("edited again", notify.PolicyUpdate, false)
	type call struct{ Method, Channel, Text, TS, ThreadTS, Broadcast string }
	var got []call
	for _, c := range f.Calls() {
		got = append(got, call{c.Method, c.Form.Get("channel"), c.Form.Get("text"), c.Form.Get("ts"), c.Form.Get("thread_ts"), c.Form.Get("reply_broadcast")})
	}
	want := []call{
		{Method: "chat.postMessage", Channel: "#deploys", Text: "first"},
		{Method: "chat.postMessage", Channel: "CDEPLOYS", Text: "reply", ThreadTS: "1700000000.000001", Broadcast: "true"},
		{Method: "chat.update", Channel: "CDEPLOYS", Text: "edited", TS: "1700000000.000001"},
		{Method: "chat.update", Channel: "CDEPLOYS", Text: "edited again", TS: "1700000000.000001"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Slack calls (-want +got):\n%s", diff)
	}
}

func TestSlackErrors(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	f.FailChannel("#gone", "channel_not_found")
	f.FailChannel("#busy", "internal_error")
	sl := f.Service(t, nil)
	for channel, permanent := range map[string]bool{"#gone": true, "#busy": false} {
		_, err := sl.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Service: "slack", Recipient: channel})
		if err == nil || notify.IsPermanent(err) != permanent || strings.Contains(err.Error(), testnotify.SlackToken) {
			t.Errorf("%s: error = %v, want permanent=%v without the token", channel, err, permanent)
		}
	}
	_, err := sl.Send(t.Context(), notify.Notification{Slack: &notify.SlackTemplate{Blocks: "[not json"}}, notify.Destination{Service: "slack", Recipient: "#x"})
	if !notify.IsPermanent(err) {
		t.Errorf("bad blocks: error = %v, want permanent", err)
	}
}
