package servicetypes

// GCPPubSub is service type gcppubsub.
var GCPPubSub = &Type{
	Name:     "gcppubsub",
	Settings: func() Settings { return &GCPPubSubSettings{} },
	Block:    func() any { return &GCPPubSubBlock{} },
}

// GCPPubSubSettings are the keys of `service.gcppubsub`.
type GCPPubSubSettings struct {
	// Topic is the topic's ID; a subscription's recipient replaces it.
	Topic string `yaml:"topic" json:"topic,omitempty"`
	// Project is the Google Cloud project that owns the topic.
	Project string `yaml:"project" json:"project,omitempty"`
	// KeyFile is the path of a service account key (JSON), as in Argo
	// CD; crowsnest also takes the key's JSON itself (`keyFile:
	// $gcp-key` from the notifications Secret). Without it:
	// GOOGLE_APPLICATION_CREDENTIALS, else the metadata server (GKE
	// Workload Identity, GCE).
	KeyFile string `yaml:"keyFile" json:"keyFile,omitempty"`
}

// GCPPubSubBlock is a template's `gcppubsub:` block.
type GCPPubSubBlock struct {
	// Attributes are the message's attributes; each value is a template.
	Attributes map[string]string `yaml:"attributes" json:"attributes,omitempty"`
}

// Check reports a missing project.
func (s *GCPPubSubSettings) Check() error { return Require("project", s.Project) }
