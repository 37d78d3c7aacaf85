// Package services holds crowsnest's notification senders, one per
// service type of Argo CD Notifications it supports: Slack, webhooks and
// email (subpackages slack, webhook and email), Microsoft Teams, GitHub,
// Opsgenie, PagerDuty and the rest. Each is configured with the keys of
// its `service.<type>` block in argocd-notifications-cm (or crowsnest's
// config), reads its own block of a template (`slack:`, `teams:`, ...),
// and sends through notify's outbox like the others: one shared HTTP
// client per configured service, a context on every request, 429
// answered with the outbox's Retry-After wait, 4xx dead-lettered at once,
// and no secret in any error.
//
// Each type is described by a svc.Kind, and every sender is built from
// its Kind (Lookup); this package lists every Kind (the small types live
// here, the others in the subpackages slack, webhook, email, github,
// gcppubsub, nats, awssqs and teams). A Kind's servicetypes.Type holds
// the Go types config reads settings and template blocks into, and their
// checks; Slack, webhook and email settings are config's own structs
// instead (config.Service.Settings). notify renders the block's strings
// as templates, and the Kind's New builds the sender. What the senders
// share (the HTTP client, Options, the JWT signer) is package svc.
package services

import (
	"fmt"
	"slices"
	"sort"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify/services/awssqs"
	"github.com/crowsnest-dev/crowsnest/notify/services/email"
	"github.com/crowsnest-dev/crowsnest/notify/services/gcppubsub"
	"github.com/crowsnest-dev/crowsnest/notify/services/github"
	"github.com/crowsnest-dev/crowsnest/notify/services/nats"
	"github.com/crowsnest-dev/crowsnest/notify/services/slack"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/teams"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// Options are what every sender shares (svc.Options, named here so that
// callers build a sender from Lookup's Kind with this package alone).
type Options = svc.Options

// kinds are the supported service types by name. The set is fixed at
// build time; newKinds panics on a duplicate or incomplete Kind, and on a
// type config reads that has no Kind.
var kinds = newKinds(
	alertmanagerKind, awssqs.Kind, email.Kind, gcppubsub.Kind, github.Kind,
	googlechatKind, grafanaKind, mattermostKind, nats.Kind, newrelicKind,
	opsgenieKind, pagerdutyKind, pagerdutyv2Kind, pushoverKind, rocketchatKind,
	slack.Kind, teams.Kind, teams.WorkflowsKind, telegramKind, webexKind, webhook.Kind,
)

// configTypes are the types whose settings are config's own structs
// (config.Service's Slack, Webhook and Email): their Kinds have no
// servicetypes.Type.
var configTypes = []string{config.ServiceSlack, config.ServiceWebhook, config.ServiceEmail}

func newKinds(list ...*svc.Kind) map[string]*svc.Kind {
	m := make(map[string]*svc.Kind, len(list))
	for _, k := range list {
		if k.Name == "" || k.New == nil {
			panic(fmt.Sprintf("services: incomplete Kind %+v", k))
		}
		if k.Type == nil && !slices.Contains(configTypes, k.Name) {
			panic("services: Kind " + k.Name + " has no servicetypes.Type")
		}
		if t, ok := servicetypes.Lookup(k.Name); k.Type != nil && (!ok || t != k.Type) {
			panic("services: Kind " + k.Name + " is not servicetypes' type of that name")
		}
		if _, dup := m[k.Name]; dup {
			panic("services: duplicate Kind " + k.Name)
		}
		m[k.Name] = k
	}
	for _, name := range append(servicetypes.Names(), configTypes...) {
		if _, ok := m[name]; !ok {
			panic("services: no Kind for service type " + name)
		}
	}
	return m
}

// Lookup returns the Kind of typ.
func Lookup(typ string) (*svc.Kind, bool) {
	k, ok := kinds[typ]
	return k, ok
}

// Types lists the supported types, sorted.
func Types() []string {
	out := make([]string, 0, len(kinds))
	for t := range kinds {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// TemplateBlocks returns the blocks of template (called name) that a
// service of type typ sends: its own block, with the Kind's defaults
// applied; nil when the template has none.
func TemplateBlocks(name string, blocks map[string]any, typ string) map[string]any {
	b, ok := blocks[typ]
	if !ok {
		return nil
	}
	if k, found := Lookup(typ); found && k.BlockDefaults != nil {
		b = k.BlockDefaults(name, b)
	}
	return map[string]any{typ: b}
}
