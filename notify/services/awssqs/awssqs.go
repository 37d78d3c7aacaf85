package awssqs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// sqsDelaySeconds is the delivery delay Argo CD Notifications sets on
// every message; kept so consumers see the same timing.
const sqsDelaySeconds = 10

// Kind describes service type awssqs; package services lists it.
var Kind = &svc.Kind{
	Name: "awssqs",
	Type: servicetypes.AWSSQS,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		c := *s.(*servicetypes.AWSSQSSettings)
		return &awsSQS{c: svc.NewClient(name, false, o), s: c, env: os.Getenv}, nil
	},
	DefaultRecipient: true,
}

// awsSQS sends the message to a queue with the SQS JSON API, signed with
// AWS Signature Version 4: GetQueueUrl for the queue's name, then
// SendMessage, as Argo CD Notifications does through the AWS SDK.
type awsSQS struct {
	c   *svc.Client
	s   servicetypes.AWSSQSSettings
	env func(string) string

	mu    sync.Mutex
	creds awsCredentials // from the web identity, until expiry
}

type awsCredentials struct {
	key, secret, token string
	expires            time.Time
}

func (a *awsSQS) region() string {
	for _, r := range []string{a.s.Region, a.env("AWS_REGION"), a.env("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	return ""
}

func (a *awsSQS) endpoint(region string) string {
	if a.s.EndpointURL != "" {
		return strings.TrimSuffix(a.s.EndpointURL, "/")
	}
	suffix := "amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		suffix = "amazonaws.com.cn"
	}
	return "https://sqs." + region + "." + suffix
}

func (a *awsSQS) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b servicetypes.AWSSQSBlock
	if _, err := svc.DecodeBlock(n, "awssqs", &b); err != nil {
		return notify.Receipt{}, err
	}
	region := a.region()
	if region == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no region: set region or AWS_REGION", a.c.Service))
	}
	queue := a.s.Queue
	if d.Recipient != "" {
		queue = d.Recipient
	}
	if queue == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no queue: set queue or name one as the recipient", a.c.Service))
	}
	creds, err := a.credentials(ctx, region)
	if err != nil {
		return notify.Receipt{}, err
	}
	get := map[string]any{"QueueName": queue}
	if a.s.Account != "" {
		get["QueueOwnerAWSAccountId"] = a.s.Account
	}
	var q struct {
		QueueURL string `json:"QueueUrl"`
	}
	if err := a.call(ctx, region, creds, "GetQueueUrl", get, &q); err != nil {
		return notify.Receipt{}, err
	}
	send := map[string]any{"QueueUrl": q.QueueURL, "MessageBody": n.Message, "DelaySeconds": sqsDelaySeconds}
	if b.MessageGroupID != "" {
		send["MessageGroupId"] = b.MessageGroupID
	}
	var m struct {
		MessageID string `json:"MessageId"`
	}
	if err := a.call(ctx, region, creds, "SendMessage", send, &m); err != nil {
		return notify.Receipt{}, err
	}
	return notify.Receipt{ID: m.MessageID}, nil
}

// call makes one SQS JSON API request, signed.
func (a *awsSQS) call(ctx context.Context, region string, creds awsCredentials, action string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return notify.Permanent(fmt.Errorf("%s: %s: %w", a.c.Service, action, err))
	}
	endpoint := a.endpoint(region) + "/"
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return notify.Permanent(fmt.Errorf("%s: endpointUrl: want an http or https URL with a host", a.c.Service))
	}
	h := http.Header{
		"Content-Type": {"application/x-amz-json-1.0"},
		"X-Amz-Target": {"AmazonSQS." + action},
	}
	signV4(h, http.MethodPost, u, body, creds, region, "sqs", a.c.Now())
	resp, err := a.c.Do(ctx, svc.Request{Method: http.MethodPost, URL: endpoint, Header: h, Body: body})
	if err != nil {
		return err
	}
	if err := resp.Decode(out); err != nil {
		return fmt.Errorf("%s: %s: unreadable answer: %w", a.c.Service, action, err)
	}
	return nil
}

// credentials are the static key and secret, else the environment's
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else a web
// identity's (AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, as EKS's IRSA
// sets them) exchanged at STS and kept until five minutes before they
// expire.
func (a *awsSQS) credentials(ctx context.Context, region string) (awsCredentials, error) {
	if a.s.Key != "" {
		return awsCredentials{key: a.s.Key, secret: a.s.Secret}, nil
	}
	if k, s := a.env("AWS_ACCESS_KEY_ID"), a.env("AWS_SECRET_ACCESS_KEY"); k != "" && s != "" {
		return awsCredentials{key: k, secret: s, token: a.env("AWS_SESSION_TOKEN")}, nil
	}
	role, tokenFile := a.env("AWS_ROLE_ARN"), a.env("AWS_WEB_IDENTITY_TOKEN_FILE")
	if role == "" || tokenFile == "" {
		return awsCredentials{}, notify.Permanent(fmt.Errorf("%s: no AWS credentials: set key and secret, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE)", a.c.Service))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.creds.key != "" && a.c.Now().Before(a.creds.expires.Add(-5*time.Minute)) {
		return a.creds, nil
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return awsCredentials{}, fmt.Errorf("%s: reading the web identity token: %w", a.c.Service, errors.Unwrap(err))
	}
	form := url.Values{
		"Action": {"AssumeRoleWithWebIdentity"}, "Version": {"2011-06-15"}, "RoleArn": {role},
		"RoleSessionName": {"crowsnest-" + strconv.FormatInt(a.c.Now().Unix(), 10)}, "WebIdentityToken": {strings.TrimSpace(string(token))},
	}
	resp, err := a.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: "https://sts." + region + ".amazonaws.com/",
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: []byte(form.Encode()),
	})
	if err != nil {
		return awsCredentials{}, err
	}
	var out struct {
		Result struct {
			Credentials struct {
				AccessKeyID     string    `xml:"AccessKeyId"`
				SecretAccessKey string    `xml:"SecretAccessKey"`
				SessionToken    string    `xml:"SessionToken"`
				Expiration      time.Time `xml:"Expiration"`
			} `xml:"Credentials"`
		} `xml:"AssumeRoleWithWebIdentityResult"`
	}
	if err := xml.Unmarshal(resp.Body, &out); err != nil || out.Result.Credentials.AccessKeyID == "" {
		return awsCredentials{}, fmt.Errorf("%s: STS AssumeRoleWithWebIdentity: unreadable answer", a.c.Service)
	}
	c := out.Result.Credentials
	a.creds = awsCredentials{key: c.AccessKeyID, secret: c.SecretAccessKey, token: c.SessionToken, expires: c.Expiration}
	return a.creds, nil
}

// signV4 adds X-Amz-Date (and X-Amz-Security-Token) and the
// Authorization of AWS Signature Version 4 to h, signing every header in
// h plus Host.
func signV4(h http.Header, method string, u *url.URL, body []byte, c awsCredentials, region, service string, now time.Time) {
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	h.Set("X-Amz-Date", amzDate)
	if c.token != "" {
		h.Set("X-Amz-Security-Token", c.token)
	}
	names := []string{"host"}
	values := map[string]string{"host": u.Host}
	for k, v := range h {
		lk := strings.ToLower(k)
		names = append(names, lk)
		values[lk] = strings.Join(v, ",")
	}
	sort.Strings(names)
	var canon strings.Builder
	for _, k := range names {
		canon.WriteString(k + ":" + strings.TrimSpace(values[k]) + "\n")
	}
	signed := strings.Join(names, ";")
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	payload := sha256.Sum256(body)
	req := strings.Join([]string{method, path, u.Query().Encode(), canon.String(), signed, hex.EncodeToString(payload[:])}, "\n")
	reqHash := sha256.Sum256([]byte(req))
	scope := day + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(reqHash[:])
	key := hmacSHA256([]byte("AWS4"+c.secret), day)
	for _, part := range []string{region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	h.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.key+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
