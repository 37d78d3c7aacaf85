package migrate

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// notifications is the notifications the daemon would run: the config's
// and the argocd-notifications-cm it names, merged and compiled by the
// same code as Notifier.Apply, and the services built by run's builder.
type notifications struct {
	set      *triggers.Set // nil: notifications would not start
	resolver *triggers.Resolver
	// built are the services that build; broken the ones that do not,
	// with why (naming a setting, never a value).
	built  map[string]bool
	broken map[string]string
	// unsupported are services of a type crowsnest has no sender for,
	// with the ConfigMap key that configures them (their deliveries
	// dead-letter).
	unsupported map[string]string
	// templateNotes are the parts of a template crowsnest does not send.
	templateNotes map[string][]string
	// usedUnsupported are the Applications subscribed to each
	// unsupported service.
	usedUnsupported map[string][]string
	cmWhere         string
}

// buildNotify reads and compiles the notifications; what stops them is
// recorded as findings.
func (m *migration) buildNotify() *notifications {
	mn := &notifications{built: map[string]bool{}, broken: map[string]string{}, unsupported: map[string]string{},
		templateNotes: map[string][]string{}, usedUnsupported: map[string][]string{}}
	n := m.cfg.Notifications
	n.Services = maps.Clone(n.Services)
	ref := n.ArgoCDConfigMap
	var secret map[string][]byte
	if ref.Name != "" {
		ns := cmp.Or(ref.Namespace, m.in.argoNamespace)
		mn.cmWhere = "ConfigMap " + ns + "/" + ref.Name
		secret = m.in.Secrets[ns+"/"+ref.Secret]
		data, ok := m.in.ConfigMaps[ns+"/"+ref.Name]
		if !ok {
			m.cannot(Finding{Where: mn.cmWhere, What: "not found: crowsnest would not start its notifications", Breaks: true})
			return mn
		}
		parsed, err := config.ParseArgoCDConfigMap(data, secret)
		if err != nil {
			m.cannot(Finding{Where: mn.cmWhere, What: "does not parse, so crowsnest would not start: " + strings.ReplaceAll(err.Error(), "\n", "; "), Breaks: true})
			return mn
		}
		mn.classifyIgnored(m, parsed)
		n.Merge(parsed)
		m.differs(Finding{Where: mn.cmWhere, What: "notification state is crowsnest's own (ConfigMaps in its namespace); the notified.notifications.argoproj.io annotations are neither read nor written",
			Why: "conditions already true when crowsnest starts are a baseline, recorded and not sent, so the cut-over resends nothing"})
	}
	if !n.Enabled() {
		return mn
	}
	if err := n.ResolveSecrets(secret); err != nil {
		for _, e := range setup.FlattenErrors(err) {
			m.cannot(Finding{Where: cmp.Or(mn.cmWhere, "notifications"), What: "crowsnest would not start: " + e.Error(), Breaks: true})
		}
		return mn
	}
	set, err := triggers.Compile(&n)
	if err == nil {
		err = pipeline.Check(&n)
	}
	if err != nil {
		for _, e := range setup.FlattenErrors(err) {
			m.cannot(Finding{Where: cmp.Or(mn.cmWhere, "notifications"), What: "crowsnest would not start: " + e.Error(), Breaks: true})
		}
		return mn
	}
	res, err := triggers.NewResolver(&set.Config)
	if err != nil {
		m.cannot(Finding{Where: cmp.Or(mn.cmWhere, "notifications"), What: "crowsnest would not start: " + err.Error(), Breaks: true})
		return mn
	}
	for name, svc := range set.Config.Services {
		if svc.Unsupported != "" {
			// Built, to dead-letter every delivery with the reason.
			mn.unsupported[name] = "service." + svc.Unsupported
			if name != svc.Unsupported {
				mn.unsupported[name] += "." + name
			}
		}
	}
	// Built as run builds them, so that the report names the services
	// run would refuse.
	svcs, err := setup.BuildServices(&set.Config, &outbox.MemoryStore{})
	for name := range svcs {
		mn.built[name] = mn.unsupported[name] == ""
	}
	for _, e := range setup.FlattenErrors(err) {
		name, why, _ := strings.Cut(strings.TrimPrefix(e.Error(), "service "), ": ")
		if _, unsupported := mn.unsupported[name]; unsupported {
			continue
		}
		mn.broken[name] = why
	}
	mn.set, mn.resolver = set, res
	return mn
}

// classifyIgnored sorts what ParseArgoCDConfigMap read and does not act
// on: template parts (for services it has no sender for, or fields it
// does not send) and keys Argo CD ignores too. Services it has no sender
// for are in the model (config.Service.Unsupported).
func (mn *notifications) classifyIgnored(m *migration, parsed *config.Notifications) {
	for _, ig := range slices.Concat(parsed.Ignored, parsed.Unsupported) {
		key, why, _ := strings.Cut(ig, " (")
		why = strings.TrimSuffix(why, ")")
		switch {
		case strings.HasPrefix(key, "service."):
			// The service is marked unsupported in the model, or a
			// setting of it is unused.
			if !strings.Contains(why, "not supported") {
				m.differs(Finding{Where: mn.cmWhere + " " + key, What: why})
			}
		case strings.HasPrefix(key, "template."):
			tmpl, part, _ := strings.Cut(strings.TrimPrefix(key, "template."), ".")
			mn.templateNotes[tmpl] = append(mn.templateNotes[tmpl], part+" not sent ("+why+")")
		default:
			m.differs(Finding{Where: mn.cmWhere + " " + key, What: "ignored (" + why + ")", Why: "Argo CD Notifications ignores it too"})
		}
	}
}

// appNotifications lists where each trigger's notifications about app
// go, with whether crowsnest delivers them.
func (m *migration) appNotifications(app *watcher.App, proj *watcher.Project, ma *App) {
	mn := m.notify
	appSubs, err := triggers.ParseSubscriptions(app.Annotations)
	if err != nil {
		for _, e := range setup.FlattenErrors(err) {
			ma.Differs = append(ma.Differs, Finding{Where: "Application", What: e.Error() + ": skipped",
				Why: "the other subscriptions still receive"})
		}
	}
	var projSubs []triggers.Subscription
	if proj != nil {
		if projSubs, err = triggers.ParseSubscriptions(proj.Annotations); err != nil {
			for _, e := range setup.FlattenErrors(err) {
				ma.Differs = append(ma.Differs, Finding{Where: "AppProject " + proj.Name, What: e.Error() + ": skipped",
					Why: "the other subscriptions still receive"})
			}
		}
	}
	if mn.set == nil {
		if len(appSubs)+len(projSubs) > 0 {
			ma.Cannot = append(ma.Cannot, Finding{Where: "notifications", What: "subscribed, but crowsnest would send no notifications (see the installation's findings)", Breaks: true})
		}
		return
	}
	names := slices.Collect(maps.Keys(mn.set.Triggers))
	for _, s := range slices.Concat(appSubs, projSubs) {
		if s.Trigger != "" && !slices.Contains(names, s.Trigger) {
			names = append(names, s.Trigger)
		}
	}
	slices.Sort(names)
	for _, t := range names {
		for _, d := range mn.resolver.Destinations(t, app.Labels, appSubs, projSubs) {
			sub := Subscription{Trigger: t, Service: d.Service, Recipient: d.Recipient}
			_, known := mn.set.Triggers[t]
			switch {
			case !known:
				sub.Status = StatusUnknownTrigger
			case mn.built[d.Service]:
				sub.Status = StatusDelivers
				svc := mn.set.Config.Services[d.Service]
				typ := svc.Type()
				for _, c := range mn.set.Config.Triggers[t] {
					for _, tmpl := range c.Send {
						for _, note := range mn.templateNotes[tmpl] {
							// Only the parts of this service's block.
							if block, _, _ := strings.Cut(note, "."); block == typ || strings.HasPrefix(note, typ+" ") {
								sub.Notes = append(sub.Notes, "template "+tmpl+": "+note)
							}
						}
					}
				}
			case mn.unsupported[d.Service] != "":
				sub.Status = StatusUnsupported
				if !slices.Contains(mn.usedUnsupported[d.Service], app.Key()) {
					mn.usedUnsupported[d.Service] = append(mn.usedUnsupported[d.Service], app.Key())
				}
			case mn.broken[d.Service] != "":
				sub.Status = StatusBroken
			default:
				sub.Status = StatusUnknownService
			}
			ma.Notifications = append(ma.Notifications, sub)
		}
	}
	for _, sub := range ma.Notifications {
		switch sub.Status {
		case StatusUnsupported:
			ma.Cannot = append(ma.Cannot, Finding{Where: "notifications " + sub.Trigger + " -> " + sub.Service,
				What: "not sent: " + mn.unsupported[sub.Service] + " is a service type crowsnest has no sender for", Breaks: true})
		case StatusBroken:
			ma.Cannot = append(ma.Cannot, Finding{Where: "notifications " + sub.Trigger + " -> " + sub.Service,
				What: "not sent: the service cannot be built: " + mn.broken[sub.Service], Breaks: true})
		case StatusUnknownService, StatusUnknownTrigger:
			ma.Differs = append(ma.Differs, Finding{Where: "notifications " + sub.Trigger + " -> " + sub.Service,
				What: "never sent: " + sub.Status, Why: "Argo CD Notifications cannot send it either"})
		}
	}
}

// notifyFindings adds the installation-wide notification findings once
// every Application is read: an unsupported service breaks only what
// subscribes to it.
func (m *migration) notifyFindings() {
	mn := m.notify
	for _, name := range slices.Sorted(maps.Keys(mn.unsupported)) {
		apps := mn.usedUnsupported[name]
		f := Finding{Where: mn.cmWhere + " " + mn.unsupported[name], What: "not sent: crowsnest has no sender for this service type"}
		if len(apps) > 0 {
			// Each subscription is marked where it is listed.
			f.What += "; subscribed by " + strings.Join(apps, ", ")
		} else {
			f.What += "; no Application subscribes to it"
		}
		m.cannot(f)
	}
	for _, name := range slices.Sorted(maps.Keys(mn.broken)) {
		m.cannot(Finding{Where: cmp.Or(mn.cmWhere, "notifications") + " service " + name, What: "cannot be built: " + mn.broken[name], Breaks: true})
	}
}
