// Package awssqs is the `awssqs` notification service: it sends the
// message to an Amazon SQS queue through SQS's JSON API, signed with AWS
// Signature Version 4, with static keys or the environment's credentials
// (including a web identity, as IRSA gives). Package services lists its
// Kind; it sends through svc.Client.
package awssqs
