package conformance

import (
	"context"
	"crypto/md5" // SQS's own checksum of the message body
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sqsAnswer answers as SQS's JSON API, with the body checksum the AWS SDK
// verifies.
func sqsAnswer(r wireRequest) (int, string) {
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSQS.GetQueueUrl":
		return http.StatusOK, `{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/123456789012/deploys"}`
	case "AmazonSQS.SendMessage":
		var in struct{ MessageBody string }
		_ = json.Unmarshal([]byte(r.Body), &in)
		sum := md5.Sum([]byte(in.MessageBody)) // SQS's checksum
		return http.StatusOK, `{"MessageId":"m-1","MD5OfMessageBody":"` + hex.EncodeToString(sum[:]) + `"}`
	}
	return http.StatusBadRequest, `{"__type":"UnknownOperation"}`
}

// TestAWSSQSOnTheWire sends the same notification through
// notifications-engine's SQS service (the AWS SDK) and crowsnest's: the
// same two JSON API calls with the same bodies; and crowsnest's Signature
// Version 4 equals the AWS SDK's own signer's over the same request.
func TestAWSSQSOnTheWire(t *testing.T) {
	got := compareOnWire(t, wireCase{
		CM: map[string]string{
			"service.awssqs": "region: eu-west-1\nqueue: deploys\naccount: \"123456789012\"\nendpointUrl: SINK\nkey: AKIDEXAMPLE\nsecret: $aws-secret\n",
			"template.deployed": `message: '{"app": "{{.app.metadata.name}}"}'
awssqs:
  messageGroupId: "{{.app.metadata.name}}"
  messageAttributes: {app: "{{.app.metadata.name}}"}
`,
		},
		Secret:  map[string][]byte{"aws-secret": []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")},
		Service: "awssqs", Template: "deployed", App: wireApp("guestbook"),
		Answer:  sqsAnswer,
		Headers: []string{"X-Amz-Target", "Content-Type"},
	})
	for _, r := range got {
		amzDate := r.Header.Get("X-Amz-Date")
		when, err := time.Parse("20060102T150405Z", amzDate)
		if err != nil {
			t.Fatalf("X-Amz-Date %q: %v", amzDate, err)
		}
		req, _ := http.NewRequest(r.Method, "http://"+r.Host+r.Path, strings.NewReader(r.Body))
		req.ContentLength = 0 // crowsnest does not sign Content-Length (SigV4 does not require it)
		for _, h := range []string{"Content-Type", "X-Amz-Target", "X-Amz-Date"} {
			req.Header.Set(h, r.Header.Get(h))
		}
		sum := sha256.Sum256([]byte(r.Body))
		creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "sqs", "eu-west-1", when); err != nil {
			t.Fatal(err)
		}
		if want, have := req.Header.Get("Authorization"), r.Header.Get("Authorization"); want != have {
			t.Errorf("%s: Authorization\n AWS SDK:   %s\n crowsnest: %s", r.Header.Get("X-Amz-Target"), want, have)
		}
	}
}
