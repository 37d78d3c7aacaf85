package main

import (
	"encoding/json"
	"fmt"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// updaterRule is one rule of an ImageUpdater, with the resource it came
// from and the image policy it becomes ("" for a useAnnotations rule).
type updaterRule struct {
	updater string // namespace/name
	policy  string
	rule    config.UpdaterRule
}

// readImageUpdaters reads argocd-image-updater 1.x's ImageUpdater
// resources with config.ParseImageUpdater and translates each rule into
// one of crowsnest's image policies, in the order argocd-image-updater
// tries them (most specific first). A resource or image that does not
// translate is a finding: its images would not be updated.
func (m *migration) readImageUpdaters() ([]config.ImagePolicy, []migrateFinding) {
	var policies []config.ImagePolicy
	var problems []migrateFinding
	for _, u := range m.in.imageUpdaters {
		key := u.GetNamespace() + "/" + u.GetName()
		where := "ImageUpdater " + key
		mu := migrateUpdater{Name: key}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return nil, append(problems, migrateFinding{Where: where, What: err.Error(), Breaks: true})
		}
		iu, err := config.ParseImageUpdater(data)
		if err != nil {
			problems = append(problems, migrateFinding{Where: where, What: "does not parse, so the images it configures would not be updated: " + err.Error(), Breaks: true})
			m.rep.Updaters = append(m.rep.Updaters, mu)
			continue
		}
		mu.Analysed = true
		rules, errs := iu.Rules()
		for _, fe := range errs {
			problems = append(problems, migrateFinding{Where: where + " " + fe.Path, What: fe.Msg + " (left out: not updated)", Breaks: true})
		}
		for i := range rules {
			ur := updaterRule{updater: key, rule: rules[i]}
			if !rules[i].UseAnnotations {
				ur.policy = fmt.Sprintf("imageupdater-%s-%s-%d", u.GetNamespace(), u.GetName(), i)
				policies = append(policies, rules[i].ImagePolicy(ur.policy))
				mu.Policies = append(mu.Policies, ur.policy)
			}
			m.updaterRules = append(m.updaterRules, ur)
		}
		for _, app := range m.in.apps {
			for i := range rules {
				if rules[i].Matches(app.Namespace, app.Name, app.Labels) {
					mu.Apps = append(mu.Apps, app.Key())
					break
				}
			}
		}
		m.rep.Updaters = append(m.rep.Updaters, mu)
	}
	return policies, problems
}

// updaterRuleFor returns the ImageUpdater rule argocd-image-updater 1.x
// applies to app (the first that matches), or nil.
func (m *migration) updaterRuleFor(app *watcher.App) *updaterRule {
	for i := range m.updaterRules {
		if m.updaterRules[i].rule.Matches(app.Namespace, app.Name, app.Labels) {
			return &m.updaterRules[i]
		}
	}
	return nil
}

// updaterDifferences compares what crowsnest uses for app (spec, from
// annotations or the policy named policy) with what argocd-image-updater
// 1.x does when ImageUpdaters exist.
func (m *migration) updaterDifferences(app *watcher.App, spec *imageupdate.Spec, policy string, ma *migrateApp) {
	if len(m.in.imageUpdaters) == 0 {
		return
	}
	rule := m.updaterRuleFor(app)
	fromAnnotations := spec != nil && spec.Source == imageupdate.SourceAnnotations
	switch {
	case fromAnnotations && (rule == nil || !rule.rule.UseAnnotations):
		f := migrateFinding{Where: "annotations", What: "read: crowsnest reads every Application's argocd-image-updater annotations",
			Why: "argocd-image-updater 1.x reads them only where an ImageUpdater rule with useAnnotations selects the Application"}
		if rule != nil {
			f.What += "; they win over ImageUpdater " + rule.updater + " (" + rule.rule.Path + "), which selects it"
		}
		ma.Differs = append(ma.Differs, f)
	case policy != "" && rule != nil && rule.policy != policy:
		for i := range m.updaterRules {
			ur := &m.updaterRules[i]
			if ur.policy == policy {
				ma.Cannot = append(ma.Cannot, migrateFinding{Where: "image policy " + policy,
					What:   fmt.Sprintf("would update this Application, though ImageUpdater %s (%s) does not select it", ur.updater, ur.rule.Path),
					Why:    "crowsnest's imagePolicies match names, projects and labels in every namespace; narrow the policy's match",
					Breaks: true})
			}
		}
	case policy != "" && rule == nil:
		ma.Cannot = append(ma.Cannot, migrateFinding{Where: "image policy " + policy,
			What:   "would update this Application, which no ImageUpdater selects (the policy's ImageUpdater selects only its own namespace)",
			Why:    "crowsnest's imagePolicies match names, projects and labels in every namespace; narrow the policy's match",
			Breaks: true})
	}
}
