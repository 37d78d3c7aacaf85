package migrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// readImageUpdaters puts argocd-image-updater 1.x's ImageUpdater
// resources in force as the daemon does (imageupdaters.Decode, Set.Apply;
// the image reconciler then asks Set.Match first) and records each
// resource's problems as the daemon compiles them: what they leave out
// would not be updated; a warning is read as argocd-image-updater reads it.
func (m *migration) readImageUpdaters() {
	m.updaters = &imageupdaters.Set{Tenancy: m.tenancy, Secrets: givenSecrets(m.in.Secrets), Log: slog.New(slog.DiscardHandler)}
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
		m.updaters.Apply(iu, parseErr)
		for _, err := range m.updaters.Problems(key) {
			var fe *imageupdaters.FieldError
			if !errors.As(err, &fe) {
				continue
			}
			f := Finding{Where: where + " " + fe.Path, What: fe.Msg}
			if fe.Warning || parseErr != nil && fe.Path == "spec" {
				m.differs(f)
				continue
			}
			f.Breaks = true
			m.cannot(f)
		}
		m.rep.Updaters = append(m.rep.Updaters, mu)
	}
	// Which Applications each resource decides for, now that all are in
	// force: several may decide for one.
	for i := range m.rep.Updaters {
		mu := &m.rep.Updaters[i]
		if !mu.Analysed {
			continue
		}
		for _, app := range m.in.apps {
			for _, d := range m.updaters.Deciding(app) {
				if d.Resource == mu.Name {
					mu.Apps = append(mu.Apps, app.Key())
				}
			}
		}
	}
}

// updaterSpec asks the ImageUpdaters in force about app, as the image
// reconciler does before annotations and policies. Problems that name
// the resource's field are recorded here (a refusal by the tenancy rules
// is something that would stop working); the annotations' own problems
// (a useAnnotations rule) are returned, as FromAnnotations' are.
func (m *migration) updaterSpec(app *watcher.App, ma *App) (spec *imageupdate.Spec, annErrs []error, ref *updaterRuleRef, ok bool) {
	// The Secrets are those given to migrate, in memory: nothing waits.
	spec, errs, ok := m.updaters.Match(context.Background(), app)
	if !ok {
		if len(m.in.imageUpdaters) > 0 && app.Annotations[imageUpdateListKey] != "" {
			ma.Differs = append(ma.Differs, Finding{Where: "annotations", What: "read: no ImageUpdater selects this Application, and crowsnest reads its argocd-image-updater annotations",
				Why: "argocd-image-updater 1.x reads annotations only where an ImageUpdater rule with useAnnotations selects the Application"})
		}
		return nil, nil, nil, false
	}
	ds := m.updaters.Deciding(app)
	var where []string
	for _, d := range ds {
		where = append(where, "ImageUpdater "+d.Resource+" "+d.Path)
		m.resourceProblemsFor(d, ma)
	}
	// The first resource's applicationRef gives the write-back, and with
	// useAnnotations the Application's annotations do.
	ref = &updaterRuleRef{where: strings.Join(where, " and "), useAnnotations: len(ds) > 0 && ds[0].UseAnnotations}
	for _, err := range errs {
		var fe *imageupdaters.FieldError
		if !errors.As(err, &fe) {
			annErrs = append(annErrs, err)
			continue
		}
		f := Finding{Where: "ImageUpdater " + fe.Resource + " " + fe.Path, What: fe.Msg}
		switch {
		case errors.Is(err, tenancy.ErrRefused):
			f.Why, f.Breaks = "an ImageUpdater is as trusted as its namespace's annotations: Secrets of its own namespace, its Applications' AppProject repositories", true
			ma.Cannot = append(ma.Cannot, f)
		case errors.Is(err, errSecretNotGiven):
			notGiven, _, _ := strings.Cut(fe.Msg, ";")
			f.What = "signature verification: " + strings.TrimPrefix(notGiven, errSecretNotGiven.Error()+": ") + " was not given to migrate, so its public key is not checked here"
			f.Why = "crowsnest reads the key from the Secret at run time and verifies the tags with it; an image whose key it cannot read is not updated (pass the Secret with the manifests to check it now)"
			ma.Differs = append(ma.Differs, f)
		case errors.Is(err, imageupdaters.ErrVerifyKey):
			f.Why, f.Breaks = "crowsnest verifies cosign signatures with the PEM public key the Secret holds, and does not update an image whose key it cannot read", true
			ma.Cannot = append(ma.Cannot, f)
		case errors.Is(err, imageupdaters.ErrNotUpdated):
			f.Why, f.Breaks = "argocd-image-updater runs each ImageUpdater on its own, so each writes its images its own way; crowsnest updates an Application's images together and writes them one way", true
			ma.Cannot = append(ma.Cannot, f)
		default:
			ma.Differs = append(ma.Differs, f)
		}
	}
	return spec, annErrs, ref, true
}

// updaterRuleRef names the applicationRefs that decide for an
// Application ("ImageUpdater <ns>/<name> spec.applicationRefs[i]", joined
// with "and" when several resources do).
type updaterRuleRef struct {
	where          string
	useAnnotations bool
}

// imageUpdateListKey is the annotation that makes an Application one
// argocd-image-updater manages.
const imageUpdateListKey = imageupdate.Prefix + imageupdate.KeyImageList

// resourceProblemsFor records, on the Application, the problems of the
// resource that bear on the applicationRef deciding for it: what
// argocd-image-updater would write there and crowsnest will not (an image
// left out, nothing written) would stop working; a warning is read as it
// reads it.
func (m *migration) resourceProblemsFor(d imageupdaters.Decision, ma *App) {
	for _, err := range m.updaters.Problems(d.Resource) {
		var fe *imageupdaters.FieldError
		if !errors.As(err, &fe) || !imageupdaters.Concerns(fe.Path, d.Path) {
			continue
		}
		f := Finding{Where: "ImageUpdater " + fe.Resource + " " + fe.Path, What: fe.Msg}
		if fe.Warning {
			ma.Differs = append(ma.Differs, f)
			continue
		}
		f.Breaks = true
		ma.Cannot = append(ma.Cannot, f)
	}
}

// errSecretNotGiven says migrate was not given a Secret an ImageUpdater
// names (imagesVerification's cosignKey): the daemon reads it at run time.
var errSecretNotGiven = errors.New("not given to migrate")

// givenSecrets reads the Secrets given to migrate, by "namespace/name".
type givenSecrets map[string]map[string][]byte

func (g givenSecrets) Get(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	data, ok := g[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s/%s", errSecretNotGiven, namespace, name)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}, nil
}
