package notify_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
)

const slackToken = "xoxb-secret-bot-token"

func newSlack(t *testing.T, f *fakeSlack, opts ...notify.SlackOption) *notify.Slack {
	t.Helper()
	sl, err := notify.NewSlack("slack", slackToken, append([]notify.SlackOption{notify.WithSlackAPIURL(f.APIURL()), notify.WithSlackTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sl.Close() })
	return sl
}

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
	f := newFakeSlack(t)
	sl := newSlack(t, f, notify.WithSlackUsername("crowsnest"), notify.WithSlackIcon(":bird:"))
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
	for k, want := range map[string]string{"channel": "#deploys", "text": "guestbook deployed", "username": "crowsnest", "icon_emoji": ":bird:", "token": slackToken, "thread_ts": ""} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	jsonEqual(t, blocks, form.Get("blocks"))
	jsonEqual(t, `[{"color":"#18be52","title":"guestbook","fields":[{"title":"Sync","value":"Synced","short":true}],"blocks":null}]`, form.Get("attachments"))
}

func TestSlackThreadsAndPolicies(t *testing.T) {
	f := newFakeSlack(t)
	store := &notify.MemoryStore{}
	sl := newSlack(t, f, notify.WithThreads(store))
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
	f := newFakeSlack(t)
	f.errors["#gone"] = "channel_not_found"
	f.errors["#busy"] = "internal_error"
	sl := newSlack(t, f)
	for channel, permanent := range map[string]bool{"#gone": true, "#busy": false} {
		_, err := sl.Send(t.Context(), notify.Notification{Message: "x"}, notify.Destination{Service: "slack", Recipient: channel})
		if err == nil || notify.IsPermanent(err) != permanent || strings.Contains(err.Error(), slackToken) {
			t.Errorf("%s: error = %v, want permanent=%v without the token", channel, err, permanent)
		}
	}
	_, err := sl.Send(t.Context(), notify.Notification{Slack: &notify.SlackTemplate{Blocks: "[not json"}}, notify.Destination{Service: "slack", Recipient: "#x"})
	if !notify.IsPermanent(err) {
		t.Errorf("bad blocks: error = %v, want permanent", err)
	}
}

// A 429 with Retry-After is waited out by the outbox without spending an
// attempt, and the message is delivered once.
func TestSlackRateLimitedThroughOutbox(t *testing.T) {
	f := newFakeSlack(t)
	f.rateLimited = 1
	reg := prometheus.NewRegistry()
	o := fastOutbox(&notify.MemoryStore{}, map[string]notify.Service{"slack": newSlack(t, f)}, notify.NewMetrics(reg))
	o.MaxAttempts = 1
	runOutbox(t, o)
	start := time.Now()
	rec, _, err := o.Enqueue(t.Context(), notify.Delivery{Key: "rl", App: "a/b", Trigger: "on-deployed", Service: "slack", Recipient: "#deploys", Notification: notify.Notification{Message: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitState(t, o, rec.ID, notify.StateDelivered)
	if took := time.Since(start); took < time.Second {
		t.Errorf("delivered after %s, before Retry-After: 1 passed", took)
	}
	var methods []string
	for _, c := range f.Calls() {
		methods = append(methods, c.Method)
	}
	if diff := cmp.Diff([]string{"chat.postMessage (429)", "chat.postMessage"}, methods); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (the 429 does not count)", got.Attempts)
	}
	testwait.For(t, "the delivered metric", func() bool {
		return metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "on-deployed", "result": "delivered"}) == 1
	})
	if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "on-deployed", "result": "rate_limited"}); n != 1 {
		t.Errorf("rate_limited deliveries = %v, want 1", n)
	}
	if n := metric(t, reg, "crowsnest_notify_retries_total", map[string]string{"service": "slack"}); n != 1 {
		t.Errorf("retries = %v, want 1", n)
	}
}
