// Package examples_test checks that every example in this folder is valid:
// configs pass `crowsnest config validate` rules and Application files are
// read by the file source without errors.
package examples_test

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
)

// configChecks says what each example config must hold beyond being valid,
// so an example keeps showing what its comments say. Every file in config/
// needs an entry.
var configChecks = map[string]func(t *testing.T, c *config.Config){
	"crowsnest.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		// "Every key with its default": the file is the defaults, with the
		// lease namespace a cluster install needs.
		// appProjects is a *bool whose nil means true; the file writes it out.
		want := config.Default()
		want.LeaderElection.LeaseNamespace = "argocd"
		on := true
		want.Watch.AppProjects = &on
		if diff := cmp.Diff(want, c, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("crowsnest.yaml differs from the defaults (-want +got):\n%s", diff)
		}
	},
	"registries.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		// The daemon applies an entry to the registry host it names.
		for host, want := range map[string]string{
			"docker.io":                   "Docker Hub",
			"index.docker.io":             "Docker Hub",
			"ghcr.io":                     "GitHub packages",
			"harbor.internal.example.com": "Harbor",
			"quay.io":                     "",
			"123456789012.dkr.ecr.eu-central-1.amazonaws.com": "ECR",
		} {
			got := ""
			if r := c.Registries.List.MatchHost(host); r != nil {
				got = r.Name
				if r.Credentials.IsZero() {
					t.Errorf("registry %s has no credentials reference", r.Name)
				}
			}
			if got != want {
				t.Errorf("host %s has the settings of %q, want %q", host, got, want)
			}
		}
		var sources []string
		for _, s := range c.Registries.Webhook.Sources {
			sources = append(sources, s.Type)
			if s.SecretEnv == "" && s.SecretFile == "" {
				t.Errorf("webhook source %s has no secret", s.Type)
			}
		}
		if diff := cmp.Diff([]string{"harbor", "ghcr", "dockerhub", "distribution"}, sources); diff != "" {
			t.Errorf("webhook sources (-want +got):\n%s", diff)
		}
	},
	"notifications-slack.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		wantServices(t, c, map[string]string{"slack": config.ServiceSlack})
		if tok := c.Notifications.Services["slack"].Slack.Token; tok.Env != "SLACK_TOKEN" {
			t.Errorf("slack token = %v, want env:SLACK_TOKEN", tok)
		}
	},
	"notifications-webhook.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		wantServices(t, c, map[string]string{"tracker": config.ServiceWebhook, "incidents": config.ServiceWebhook})
		w := c.Notifications.Services["tracker"].Webhook
		if w.Bearer.File == "" || w.HMACSecret.Env == "" {
			t.Errorf("tracker authenticates with bearer %v and hmacSecret %v, want a file and an env reference", w.Bearer, w.HMACSecret)
		}
	},
	"notifications-email.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		wantServices(t, c, map[string]string{"mail": config.ServiceEmail})
		if cm := c.Notifications.ArgoCDConfigMap; cm.Name != "argocd-notifications-cm" || cm.Namespace != "argocd" {
			t.Errorf("argocdConfigMap = %+v, want argocd/argocd-notifications-cm", cm)
		}
		if p := c.Notifications.Services["mail"].Email.Password; p.Key != "smtp-password" {
			t.Errorf("email password = %v, want $smtp-password", p)
		}
	},
	"sync-windows.yaml": func(t *testing.T, c *config.Config) {
		t.Helper()
		set, err := windows.FromConfig(c.Windows)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range set {
			got = append(got, string(w.Kind())+" "+w.Description())
		}
		want := []string{"deny weekend freeze", "deny year-end freeze", "allow nightly deploys", "deny daily billing batch"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("windows (-want +got):\n%s", diff)
		}
		if !c.Windows[2].SyncOnOpen || c.Windows[3].HoldsImageUpdates() {
			t.Error("the nightly window should sync on open and the billing window should not hold updates")
		}
	},
}

func wantServices(t *testing.T, c *config.Config, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for name, s := range c.Notifications.Services {
		got[name] = s.Type()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notification services (-want +got):\n%s", diff)
	}
}

// TestConfigExamplesAreValid runs what `crowsnest config validate` runs on
// every example config, then the file's own checks.
func TestConfigExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no config examples found (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := triggers.Compile(&c.Notifications); err != nil {
				t.Error(err)
			}
			if _, err := imageupdate.CompilePolicies(c.ImagePolicies); err != nil {
				t.Error(err)
			}
			if _, err := windows.FromConfig(c.Windows); err != nil {
				t.Error(err)
			}
			check, ok := configChecks[filepath.Base(f)]
			if !ok {
				t.Fatalf("%s has no entry in configChecks: say what it must show", f)
			}
			check(t, c)
		})
	}
}

type collect struct {
	mu       sync.Mutex
	apps     map[string]*watcher.App
	projects map[string]*watcher.Project
}

func (c *collect) OnAppEvent(ev watcher.AppEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps[ev.Key()] = ev.New
}

func (c *collect) OnProjectEvent(ev watcher.ProjectEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.projects[ev.New.Key()] = ev.New
}

// readApps reads dir with the file source, as `crowsnest run --apps-dir`
// does, and fails when any object was unreadable.
func readApps(t *testing.T, dir string) *collect {
	t.Helper()
	reg := prometheus.NewRegistry()
	src := &watcher.FileSource{Dir: dir, Metrics: watcher.NewMetrics(reg)}
	c := &collect{apps: map[string]*watcher.App{}, projects: map[string]*watcher.Project{}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, c) }()
	select {
	case <-src.SyncedDone():
	case <-time.After(30 * time.Second):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "crowsnest_watch_objects_invalid_total" {
			t.Errorf("an example was unreadable: %v", mf)
		}
	}
	return c
}

// Every Application and AppProject is read, its annotations parse without
// an error (image updates and notification subscriptions), and AppProject
// sync windows compile.
func TestAppExamplesAreReadable(t *testing.T) {
	c := readApps(t, "apps")
	var got []string
	for k, app := range c.apps {
		got = append(got, "Application "+k)
		spec, errs := imageupdate.FromAnnotations(app.Annotations)
		for _, err := range errs {
			t.Errorf("Application %s: %v", k, err)
		}
		if spec == nil {
			t.Errorf("Application %s has no %s%s annotation", k, imageupdate.Prefix, imageupdate.KeyImageList)
		} else if ref, ok := strings.CutPrefix(spec.WriteBack.Target.Path, "$"); ok {
			// helmvalues:$<ref>/<path> needs a source with that ref.
			ref, _, _ = strings.Cut(ref, "/")
			if !slices.ContainsFunc(app.Sources, func(s watcher.Source) bool { return s.Ref == ref }) {
				t.Errorf("Application %s writes to $%s but no source has ref %q", k, ref, ref)
			}
		}
		if _, err := triggers.ParseSubscriptions(app.Annotations); err != nil {
			t.Errorf("Application %s: %v", k, err)
		}
	}
	for k, p := range c.projects {
		got = append(got, "AppProject "+k)
		if _, err := windows.FromAppProject(p.Object.Object); err != nil {
			t.Errorf("AppProject %s: %v", k, err)
		}
		if _, err := triggers.ParseSubscriptions(p.Annotations); err != nil {
			t.Errorf("AppProject %s: %v", k, err)
		}
	}
	sort.Strings(got)
	want := []string{
		"AppProject argocd/payments",
		"Application argocd/api",
		"Application argocd/guestbook",
		"Application argocd/payments",
		"Application argocd/shop",
		"Application argocd/storefront",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects read from examples/apps (-want +got):\n%s", diff)
	}
}

// registryTag is one tag of a made-up registry the example Applications'
// images are selected from.
type registryTag struct {
	tag       string
	digest    string
	created   time.Time
	platforms []string
}

// What the example Applications' annotations choose from these tags, and
// what crowsnest would write: the decision the daemon makes (selection,
// then imageupdate.Decide), without a registry or a cluster.
func TestAppExamplesDecideAsDocumented(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	both := []string{"linux/amd64", "linux/arm64"}
	tags := map[string][]registryTag{
		"registry.example.com/guestbook": {{tag: "1.4.0"}, {tag: "1.4.2"}, {tag: "1.5.0"}},
		"registry.example.com/shop":      {{tag: "2.0.0"}, {tag: "2.1.0"}, {tag: "3.0.0-rc.1"}},
		"ghcr.io/my-org/api":             {{tag: "2.3.1"}, {tag: "2.3.2"}, {tag: "2.4.0"}, {tag: "3.0.0"}},
		"ghcr.io/my-org/api-migrations": {
			{tag: "build-118", created: day, platforms: both},
			{tag: "build-120", created: day.Add(48 * time.Hour), platforms: both},
			{tag: "build-121", created: day.Add(72 * time.Hour), platforms: []string{"linux/amd64"}},
			{tag: "latest", created: day.Add(96 * time.Hour), platforms: both},
		},
		"ghcr.io/my-org/payments":              {{tag: "1.8.2"}, {tag: "1.8.5"}, {tag: "1.9.0"}},
		"registry.example.com/shop/storefront": {{tag: "stable", digest: "sha256:" + strings.Repeat("b", 64)}, {tag: "latest"}},
	}
	strParam := func(name, value string) watcher.HelmParameter {
		return watcher.HelmParameter{Name: name, Value: value, ForceString: true}
	}
	want := map[string][]imageupdate.Change{
		"argocd/guestbook": {{Alias: "web", Image: "registry.example.com/guestbook", From: "1.4.0", To: "1.4.2", SourceIndex: -1,
			Kustomize: "registry.example.com/guestbook:1.4.2", KustomizeName: "registry.example.com/guestbook"}},
		"argocd/shop": {{Alias: "shop", Image: "registry.example.com/shop", From: "2.0.0", To: "2.1.0", SourceIndex: 0,
			Helm: []watcher.HelmParameter{strParam("image.repository", "registry.example.com/shop"), strParam("image.tag", "2.1.0")}}},
		"argocd/api": {
			{Alias: "api", Image: "ghcr.io/my-org/api", From: "2.3.1", To: "2.3.2", SourceIndex: -1,
				Helm: []watcher.HelmParameter{strParam("image.repository", "ghcr.io/my-org/api"), strParam("image.tag", "2.3.2")}},
			{Alias: "migrations", Image: "ghcr.io/my-org/api-migrations", From: "build-118", To: "build-120", SourceIndex: -1,
				Helm:      []watcher.HelmParameter{strParam("migrations.image", "ghcr.io/my-org/api-migrations:build-120")},
				Described: true}, // newest-build read the tag's metadata
		},
		"argocd/payments": {{Alias: "payments", Image: "ghcr.io/my-org/payments", From: "1.8.2", To: "1.8.5", SourceIndex: 0,
			Helm: []watcher.HelmParameter{strParam("image.repository", "ghcr.io/my-org/payments"), strParam("image.tag", "1.8.5")}}},
		"argocd/storefront": {{Alias: "front", Image: "registry.example.com/shop/storefront", From: "stable",
			To: "stable@sha256:" + strings.Repeat("b", 64), Digest: "sha256:" + strings.Repeat("b", 64), SourceIndex: -1,
			Kustomize:     "storefront=registry.example.com/shop/storefront:stable@sha256:" + strings.Repeat("b", 64),
			KustomizeName: "storefront", Described: true}},
	}
	c := readApps(t, "apps")
	for key, app := range c.apps {
		t.Run(key, func(t *testing.T) {
			spec, errs := imageupdate.FromAnnotations(app.Annotations)
			if len(errs) > 0 || spec == nil {
				t.Fatalf("annotations: %v", errs)
			}
			results := map[string]imageupdate.Selection{}
			for _, img := range spec.Images {
				p, err := policy.Compile(img.Name, img.Policy)
				if err != nil {
					t.Fatal(err)
				}
				repo, ok := tags[img.Name]
				if !ok {
					t.Fatalf("no tags for %s in this test", img.Name)
				}
				meta := func(_ context.Context, tag string) (policy.Metadata, error) {
					for _, rt := range repo {
						if rt.tag == tag {
							m := policy.Metadata{Digest: rt.digest, Created: rt.created}
							if m.Digest == "" {
								m.Digest = "sha256:" + strings.Repeat("a", 64)
							}
							for _, pl := range rt.platforms {
								os, arch, _ := strings.Cut(pl, "/")
								m.Platforms = append(m.Platforms, policy.Platform{OS: os, Architecture: arch})
							}
							return m, nil
						}
					}
					t.Fatalf("metadata of unknown tag %s", tag)
					return policy.Metadata{}, nil
				}
				var names []string
				for _, rt := range repo {
					names = append(names, rt.tag)
				}
				res, err := p.Select(t.Context(), names, meta)
				results[img.Alias] = imageupdate.Selection{Result: res, Err: err}
			}
			plan := imageupdate.Decide(app, spec, results, imageupdate.Hold{})
			if len(plan.Skipped) > 0 {
				t.Errorf("skipped: %+v", plan.Skipped)
			}
			if diff := cmp.Diff(want[key], plan.Changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}
