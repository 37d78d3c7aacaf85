package awssqs_test

import (
	"crypto/md5" // SQS's own checksum of the message body
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

// sqsAPI answers as SQS's JSON API (and STS for a web identity).
func sqsAPI(r svctest.Received) svctest.Answer {
	if r.Path == "/" && strings.Contains(r.Body, "AssumeRoleWithWebIdentity") {
		return svctest.Answer{Body: `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>
<AccessKeyId>ASIATEMP</AccessKeyId><SecretAccessKey>temp-secret</SecretAccessKey><SessionToken>temp-session</SessionToken>
<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`}
	}
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSQS.GetQueueUrl":
		var in struct{ QueueName string }
		_ = json.Unmarshal([]byte(r.Body), &in)
		return svctest.Answer{Body: `{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/123456789012/` + in.QueueName + `"}`}
	case "AmazonSQS.SendMessage":
		var in struct{ MessageBody string }
		_ = json.Unmarshal([]byte(r.Body), &in)
		sum := md5.Sum([]byte(in.MessageBody)) // SQS's checksum
		return svctest.Answer{Body: `{"MessageId":"msg-1","MD5OfMessageBody":"` + hex.EncodeToString(sum[:]) + `"}`}
	}
	return svctest.Answer{Status: http.StatusBadRequest, Body: `{"__type":"UnknownOperation"}`}
}

const sqsTemplate = `message: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.sync.revision}}"}'
awssqs:
  messageGroupId: "{{.app.metadata.name}}"
  messageAttributes:
    app: "{{.app.metadata.name}}"
`

func TestAWSSQSThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, true)
	s.Route = sqsAPI
	const secretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.awssqs":    "region: eu-west-1\nqueue: deploys.fifo\nkey: $aws-key\nsecret: $aws-secret\n",
			"template.deployed": sqsTemplate,
		},
		Secret:  map[string][]byte{"aws-key": []byte("AKIDEXAMPLE"), "aws-secret": []byte(secretKey)},
		Service: "awssqs", Template: "deployed", App: svctest.App("guestbook"), Transport: svctest.Redirect(s),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "msg-1" {
		t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want GetQueueUrl and SendMessage", len(reqs))
	}
	for i, target := range []string{"AmazonSQS.GetQueueUrl", "AmazonSQS.SendMessage"} {
		r := reqs[i]
		if r.Method != http.MethodPost || r.Path != "/" || r.Header.Get("X-Amz-Target") != target ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
			t.Errorf("request %d: %s %s target %q type %q", i, r.Method, r.Path, r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"))
		}
		auth := r.Header.Get("Authorization")
		svctest.MustContain(t, "Authorization", auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", "/eu-west-1/sqs/aws4_request",
			"SignedHeaders=content-type;host;x-amz-date;x-amz-target", "Signature=")
		svctest.MustNotContain(t, "Authorization", auth, secretKey)
	}
	var get struct{ QueueName string }
	var send struct {
		QueueURL          string `json:"QueueUrl"`
		MessageBody       string
		MessageGroupID    string `json:"MessageGroupId"`
		DelaySeconds      int
		MessageAttributes any
	}
	_ = json.Unmarshal([]byte(reqs[0].Body), &get)
	_ = json.Unmarshal([]byte(reqs[1].Body), &send)
	if get.QueueName != "deploys.fifo" || send.QueueURL != "https://sqs.eu-west-1.amazonaws.com/123456789012/deploys.fifo" ||
		send.MessageGroupID != "guestbook" || send.DelaySeconds != 10 || send.MessageAttributes != nil ||
		send.MessageBody != `{"app": "guestbook", "revision": "0123456789abcdef0123456789abcdef01234567"}` {
		t.Errorf("GetQueueUrl %s\nSendMessage %s", reqs[0].Body, reqs[1].Body)
	}
}

// TestAWSSQSWebIdentity takes credentials from a web identity (EKS IRSA):
// the token file is exchanged at STS once, and its session token signs
// the SQS requests; a recipient names the queue.
func TestAWSSQSWebIdentity(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("eyJ-web-identity\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_REGION", "us-east-2")
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/crowsnest")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
	s := svctest.NewSink(t, true)
	s.Route = sqsAPI
	rec := svctest.Deliver(t, svctest.Delivery{
		CM:      map[string]string{"service.awssqs": "{}", "template.deployed": sqsTemplate},
		Service: "awssqs", Template: "deployed", Recipient: "team-queue", App: svctest.App("web"), Transport: svctest.Redirect(s),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want STS, GetQueueUrl, SendMessage", len(reqs))
	}
	form, _ := url.ParseQuery(reqs[0].Body)
	if form.Get("Action") != "AssumeRoleWithWebIdentity" || form.Get("WebIdentityToken") != "eyJ-web-identity" ||
		form.Get("RoleArn") != "arn:aws:iam::123456789012:role/crowsnest" {
		t.Errorf("STS request %s", reqs[0].Body)
	}
	for _, r := range reqs[1:] {
		svctest.MustContain(t, "Authorization", r.Header.Get("Authorization"), "Credential=ASIATEMP/", "/us-east-2/sqs/aws4_request", "x-amz-security-token")
		if r.Header.Get("X-Amz-Security-Token") != "temp-session" {
			t.Errorf("session token %q", r.Header.Get("X-Amz-Security-Token"))
		}
	}
	svctest.MustContain(t, "GetQueueUrl", reqs[1].Body, `"QueueName":"team-queue"`)
}

func TestAWSSQSStatuses(t *testing.T) {
	cm := map[string]string{"service.awssqs": "region: eu-west-1\nqueue: q\nkey: AKID\nsecret: $aws-secret\n", "template.deployed": sqsTemplate}
	secret := map[string][]byte{"aws-secret": []byte("very-secret-key")}
	t.Run("throttled 429 waits, then delivers", func(t *testing.T) {
		s := svctest.NewSink(t, true)
		calls := 0
		s.Route = func(r svctest.Received) svctest.Answer {
			calls++
			if calls == 1 {
				return svctest.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0"}, Body: `{"__type":"RequestThrottled"}`}
			}
			return sqsAPI(r)
		}
		rec := svctest.Deliver(t, svctest.Delivery{CM: cm, Secret: secret, Service: "awssqs", Template: "deployed", App: svctest.App("a"), Transport: svctest.Redirect(s), MaxAttempts: 1})
		if rec.State != outbox.StateDelivered {
			t.Fatalf("state %s: %s", rec.State, rec.LastError)
		}
	})
	t.Run("5xx retried", func(t *testing.T) {
		s := svctest.NewSink(t, true)
		calls := 0
		s.Route = func(r svctest.Received) svctest.Answer {
			calls++
			if calls == 1 {
				return svctest.Answer{Status: http.StatusInternalServerError, Body: `{"__type":"InternalError"}`}
			}
			return sqsAPI(r)
		}
		rec := svctest.Deliver(t, svctest.Delivery{CM: cm, Secret: secret, Service: "awssqs", Template: "deployed", App: svctest.App("a"), Transport: svctest.Redirect(s)})
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 {
			t.Fatalf("state %s attempts %d: %s", rec.State, rec.Attempts, rec.LastError)
		}
	})
	t.Run("403 dead-lettered without the secret", func(t *testing.T) {
		s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusForbidden, Body: `{"__type":"InvalidClientTokenId","message":"The security token included in the request is invalid."}`})
		rec := svctest.Deliver(t, svctest.Delivery{CM: cm, Secret: secret, Service: "awssqs", Template: "deployed", App: svctest.App("a"), Transport: svctest.Redirect(s)})
		if rec.State != outbox.StateDead || rec.Attempts != 1 {
			t.Fatalf("state %s attempts %d", rec.State, rec.Attempts)
		}
		svctest.MustContain(t, "last error", rec.LastError, "403", "InvalidClientTokenId")
		svctest.MustNotContain(t, "last error", rec.LastError, "very-secret-key")
	})
}
