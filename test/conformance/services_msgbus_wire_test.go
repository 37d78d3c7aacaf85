package conformance

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/pstest"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// natsMessage is what a subscriber receives.
type natsMessage struct {
	Subject string
	Data    string
	Header  nats.Header
}

// TestNATSOnTheWire publishes the same notification through
// notifications-engine's NATS service (nats.go) and crowsnest's own client
// to one real NATS server, with user/password and with an nkey; a
// subscriber must receive identical messages: subject, data, headers.
func TestNATSOnTheWire(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "argocd", Password: "nats-pw"}},
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("argocd", "nats-pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	template := `message: |
  {"app": "{{.app.metadata.name}}", "sync": "{{.app.status.sync.status}}", "revision": "{{.app.status.sync.revision}}"}
`
	for _, tc := range []struct{ name, service string }{
		{"user and password with headers", "url: " + s.ClientURL() + "\nusername: argocd\npassword: $nats-password\n" +
			"headers:\n  X-Argo-App: guestbook\n  content-type: application/json\n  Multi-Word-Key: a value with spaces\n"},
		{"nkey", "url: " + s.ClientURL() + "\nnkey: $nats-nkey\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sendBothSides(t, wireCase{
				CM:      map[string]string{"service.nats": tc.service, "template.deployed": template},
				Secret:  map[string][]byte{"nats-password": []byte("nats-pw"), "nats-nkey": seed},
				Service: "nats", Template: "deployed", Recipient: "argocd.deploys.guestbook", App: wireApp("guestbook"),
			})
			var got []natsMessage
			for range 2 {
				m, err := sub.NextMsg(10 * time.Second)
				if err != nil {
					t.Fatalf("after %d messages: %v", len(got), err)
				}
				got = append(got, natsMessage{Subject: m.Subject, Data: string(m.Data), Header: m.Header})
			}
			// Nothing else: a marker published now is the next message.
			if err := nc.Publish("argocd.marker", nil); err != nil {
				t.Fatal(err)
			}
			if m, err := sub.NextMsg(10 * time.Second); err != nil || m.Subject != "argocd.marker" {
				t.Fatalf("after both messages: %+v %v, want only the marker", m, err)
			}
			if got[0].Data == "" {
				t.Fatalf("notifications-engine published nothing useful: %+v", got[0])
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("message (-notifications-engine +crowsnest):\n%s", diff)
			}
		})
	}
}

// TestGCPPubSubOnTheWire publishes the same notification through
// notifications-engine's Pub/Sub service (the gRPC client library,
// pointed at pstest, the in-process fake Pub/Sub server, by
// PUBSUB_EMULATOR_HOST as the library honours it) and crowsnest's (REST,
// to a sink): the message pstest stored and the one crowsnest's request
// carried must have the same topic, data and attributes.
func TestGCPPubSubOnTheWire(t *testing.T) {
	fake := pstest.NewServer()
	t.Cleanup(func() { _ = fake.Close() })
	if _, err := fake.GServer.CreateTopic(t.Context(), &pb.Topic{Name: "projects/my-project/topics/deploys"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PUBSUB_EMULATOR_HOST", fake.Addr)
	_, got := sendBothSides(t, wireCase{
		CM: map[string]string{
			"service.gcppubsub": "project: my-project\ntopic: other\n",
			"template.deployed": `message: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.sync.revision}}"}'
gcppubsub:
  attributes:
    app: "{{.app.metadata.name}}"
    health: "{{.app.status.health.status}}"
    repo: "{{.app.spec.source.repoURL}}"
`,
		},
		Service: "gcppubsub", Template: "deployed", Recipient: "deploys", App: wireApp("guestbook"),
		Redirect: true, // crowsnest's REST request goes to its sink
		Answer:   func(wireRequest) (int, string) { return http.StatusOK, `{"messageIds":["1"]}` },
	})
	stored := fake.Messages()
	if len(stored) != 1 {
		t.Fatalf("pstest stored %d messages, want notifications-engine's one", len(stored))
	}
	if len(got) != 1 || got[0].Method != http.MethodPost || got[0].Path != "/v1/projects/my-project/topics/deploys:publish" {
		t.Fatalf("crowsnest's requests: %+v", got)
	}
	var body struct {
		Messages []struct {
			Data       string            `json:"data"`
			Attributes map[string]string `json:"attributes"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(got[0].Body), &body); err != nil || len(body.Messages) != 1 {
		t.Fatalf("crowsnest's body %s: %v", got[0].Body, err)
	}
	data, err := base64.StdEncoding.DecodeString(body.Messages[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	type message struct {
		Topic, Data string
		Attributes  map[string]string
	}
	want := message{stored[0].Topic, string(stored[0].Data), stored[0].Attributes}
	have := message{"projects/my-project/topics/deploys", string(data), body.Messages[0].Attributes}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("message (-notifications-engine via pstest +crowsnest):\n%s", diff)
	}
}
