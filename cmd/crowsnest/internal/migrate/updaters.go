package migrate

import (
	"cmp"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// updaterRules is one ImageUpdater's rules, for naming the
// resource and applicationRef that decide for an Application.
type updaterRules struct {
	key, namespace string
	rules          []imageupdater.Rule
}

// readImageUpdaters puts argocd-image-updater 1.x's ImageUpdater
// resources in force as the daemon does (imageupdaters.Decode, Set.Apply;
// the image reconciler then asks Set.Match first) and records each
// resource's problems: what they leave out would not be updated.
func (m *migration) readImageUpdaters() {
	m.updaters = &imageupdaters.Set{Check: m.tenancy.CheckAnnotations, Log: slog.New(slog.DiscardHandler)}
	for _, u := range m.in.imageUpdaters {
		key := u.GetNamespace() + "/" + u.GetName()
		where := "ImageUpdater " + key
		mu := Updater{Name: key}
		iu, parseErr := imageupdaters.Decode(u)
		if iu == nil {
			m.cannot(Finding{Where: where, What: "unreadable, so the images it configures would not be updated: " + parseErr.Error(), Breaks: true})
			m.rep.Updaters = append(m.rep.Updaters, mu)
			continue
		}
		mu.Analysed = true
		if parseErr != nil {
			m.differs(Finding{Where: where, What: "fields this crowsnest does not know are ignored: " + parseErr.Error()})
		}
		m.updaters.Apply(iu, parseErr)
		rules, problems := iu.Rules()
		for _, fe := range problems {
			m.cannot(Finding{Where: where + " " + fe.Path, What: fe.Msg, Breaks: true})
		}
		m.updaterRules = append(m.updaterRules, updaterRules{key: key, namespace: u.GetNamespace(), rules: rules})
		for _, app := range m.in.apps {
			if r := m.updaterRuleFor(app); r != nil && strings.HasPrefix(r.where, where+" ") {
				mu.Apps = append(mu.Apps, app.Key())
			}
		}
		m.rep.Updaters = append(m.rep.Updaters, mu)
	}
	slices.SortFunc(m.updaterRules, func(a, b updaterRules) int { return cmp.Compare(a.key, b.key) })
}

// updaterRuleRef names the resource and applicationRef that decide for an
// Application, in the daemon's order (resources of the Application's
// namespace by name, each one's rules most specific first).
type updaterRuleRef struct {
	where          string
	useAnnotations bool
}

func (m *migration) updaterRuleFor(app *watcher.App) *updaterRuleRef {
	for _, ur := range m.updaterRules {
		if ur.namespace != app.Namespace {
			continue
		}
		for i := range ur.rules {
			if ur.rules[i].Matches(app.Namespace, app.Name, app.Labels) {
				return &updaterRuleRef{where: "ImageUpdater " + ur.key + " " + ur.rules[i].Path, useAnnotations: ur.rules[i].UseAnnotations}
			}
		}
	}
	return nil
}

// updaterSpec asks the ImageUpdaters in force about app, as the image
// reconciler does before annotations and policies. Problems that name
// the resource's field are recorded here (a refusal by the tenancy rules
// is something that would stop working); the annotations' own problems
// (a useAnnotations rule) are returned, as FromAnnotations' are.
func (m *migration) updaterSpec(app *watcher.App, ma *App) (spec *imageupdate.Spec, annErrs []error, ref *updaterRuleRef, ok bool) {
	spec, errs, ok := m.updaters.Match(app)
	if !ok {
		if len(m.in.imageUpdaters) > 0 && app.Annotations[imageUpdateListKey] != "" {
			ma.Differs = append(ma.Differs, Finding{Where: "annotations", What: "read: no ImageUpdater selects this Application, and crowsnest reads its argocd-image-updater annotations",
				Why: "argocd-image-updater 1.x reads annotations only where an ImageUpdater rule with useAnnotations selects the Application"})
		}
		return nil, nil, nil, false
	}
	ref = m.updaterRuleFor(app)
	if ref == nil {
		ref = &updaterRuleRef{where: "an ImageUpdater"}
	}
	for _, err := range errs {
		var fe *imageupdaters.FieldError
		if !errors.As(err, &fe) {
			annErrs = append(annErrs, err)
			continue
		}
		f := Finding{Where: "ImageUpdater " + fe.Resource + " " + fe.Path, What: fe.Msg}
		if errors.Is(err, tenancy.ErrRefused) {
			f.Why, f.Breaks = "an ImageUpdater is as trusted as its namespace's annotations: Secrets of its own namespace, its Applications' AppProject repositories", true
			ma.Cannot = append(ma.Cannot, f)
			continue
		}
		ma.Differs = append(ma.Differs, f)
	}
	return spec, annErrs, ref, true
}

// imageUpdateListKey is the annotation that makes an Application one
// argocd-image-updater manages.
const imageUpdateListKey = imageupdate.Prefix + imageupdate.KeyImageList
