// Package svc is what every sender of package services shares, and
// nothing else: the Kind a service type describes itself with, the
// Options and the shared HTTP Client (timeouts, 429 as
// notify.RateLimitError, 4xx permanent, no secret in errors), reading a
// rendered template block (DecodeBlock), the checks of settings
// (Require, RequireURL, CheckURL, recipient → webhook maps) and the RS256
// JWT signer GitHub Apps and Google service accounts use.
//
// The service types themselves live in package services and its
// subpackages (github, gcppubsub, nats, awssqs, teams), which import svc;
// package services lists every Kind. svc imports only notify.
package svc
