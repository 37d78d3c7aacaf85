// Package gcppubsub is the `gcppubsub` notification service: it publishes
// the message to a Google Cloud Pub/Sub topic over the REST API. Its auth
// (auth.go) gets an access token from a service account key (an RS256
// JWT exchanged at Google's token endpoint) or from the metadata server,
// and keeps it until shortly before it expires. Package services lists
// its Kind; it sends through svc.Client.
package gcppubsub
