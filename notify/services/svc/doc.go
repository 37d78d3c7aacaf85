// Package svc is what every sender of package services shares, and
// nothing else: the Kind a service type describes itself with, the
// Options and the shared HTTP Client (timeouts, 429 as
// notify.RateLimitError, 4xx permanent, no secret in errors), reading a
// rendered template block (DecodeBlock), a recipient's webhook
// (RecipientURL), the Mailer that may take an email sender's messages
// instead of its SMTP session. The RS256 JWT signer GitHub Apps and
// Google service accounts use is internal/rs256; a GitHub App's
// installation token, internal/githubapp. The settings and template blocks, and their checks
// (Require, CheckURL, ...), are config's: package config/servicetypes.
//
// The senders live in package services and its subpackages (slack,
// webhook, email, github, gcppubsub, nats, awssqs, teams), which import
// svc; package services lists every Kind. svc imports notify and
// config/servicetypes.
package svc
