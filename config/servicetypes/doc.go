// Package servicetypes is what config knows about each service type of
// Argo CD Notifications beyond Slack, webhooks and email (Teams, GitHub,
// Opsgenie, ...): the Go types of its `service.<type>` settings and of its
// template block, with the keys Argo CD reads, the checks config runs on
// the settings when it loads them, and the list of Argo CD's type names.
// It imports only the standard library (a depguard rule in .golangci.yml
// keeps it so), which lets config, and every pure package that imports
// config, read notification settings without linking a sender.
//
// The senders are package notify/services and its subpackages: each
// svc.Kind there names its Type here and builds a sender from settings of
// that Type's struct.
package servicetypes
