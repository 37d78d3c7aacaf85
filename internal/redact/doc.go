// Package redact owns crowsnest's one rule for secrets in text: the
// credentials a URL carries (user information, token and password query
// values, the paths of chat webhook URLs), Authorization headers and
// bearer tokens, and the well-known token shapes of Git forges and Slack
// are masked wherever they show inside a string. Every exit applies it —
// the log handler, the Kubernetes Event recorder, notification event
// texts, the CLI's error output — so a secret that slips into an error
// message stops there. It also rewrites errors (Rewrite) so that a
// subsystem can say a remote server's status without copying the
// server's answer. It imports the standard library only.
package redact
