package servicetypes

import "errors"

// AWSSQS is service type awssqs.
var AWSSQS = &Type{
	Name:     "awssqs",
	Settings: func() Settings { return &AWSSQSSettings{} },
	Block:    func() any { return &AWSSQSBlock{} },
}

// AWSSQSSettings are the keys of `service.awssqs`.
type AWSSQSSettings struct {
	// Queue is the queue's name; a subscription's recipient replaces it.
	Queue string `yaml:"queue" json:"queue,omitempty"`
	// Account owns the queue when it is another account's.
	Account string `yaml:"account" json:"account,omitempty"`
	// Region; AWS_REGION or AWS_DEFAULT_REGION when empty.
	Region string `yaml:"region" json:"region,omitempty"`
	// EndpointURL replaces https://sqs.<region>.amazonaws.com (a VPC
	// endpoint, LocalStack).
	EndpointURL string `yaml:"endpointUrl" json:"endpointUrl,omitempty"`
	// Key and Secret are static credentials; without them the
	// environment's (AWS_ACCESS_KEY_ID, ..., or a web identity: IRSA).
	Key    string `yaml:"key" json:"key,omitempty"`
	Secret string `yaml:"secret" json:"secret,omitempty"`
}

// AWSSQSBlock is a template's `awssqs:` block. Argo CD renders
// messageAttributes but does not send them; crowsnest reads them the same
// way and does not send them either.
type AWSSQSBlock struct {
	MessageAttributes map[string]string `yaml:"messageAttributes" json:"messageAttributes,omitempty"`
	// MessageGroupID is required by FIFO queues.
	MessageGroupID string `yaml:"messageGroupId" json:"messageGroupId,omitempty"`
}

// Check reports a key without its secret (or the reverse) and an
// endpointUrl that is no http(s) URL.
func (s *AWSSQSSettings) Check() error {
	var errs []error
	if (s.Key == "") != (s.Secret == "") {
		errs = append(errs, errors.New("key and secret: set both or neither"))
	}
	return errors.Join(append(errs, CheckURL("endpointUrl", s.EndpointURL))...)
}
