package migrate

import (
	"bytes"
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
)

// migration is one analysis in progress: the inputs, the crowsnest config
// the install would run with, and what the daemon's own code builds from
// them (registries, policies, tenancy rules, notifications, windows).
type migration struct {
	in *Inputs
	// cfg is the config the install runs with: the one migrate proposes
	// (parsed back with config.Parse) or --config's.
	cfg     *config.Config
	cfgPath string // --config, or ""
	baseDir string
	rep     *Report

	regs     *setup.Registries
	policies *imageupdate.Policies
	tenancy  *tenancy.Rules
	notify   *notifications
	windows  windows.Set
	// brokenProjects are AppProjects whose windows do not compile.
	brokenProjects map[string]error
	// secretNamespaces are namespaces (other than Argo CD's) whose
	// Secrets the annotations or registries name, with what names them.
	secretNamespaces map[string][]string
	// updaters are the ImageUpdaters in force, as the daemon holds them.
	updaters *imageupdaters.Set
}

// Options are what Analyze takes besides the installation.
type Options struct {
	// Config is --config's; nil: migrate proposes one.
	Config *config.Config
	// ConfigPath is --config, or "".
	ConfigPath string
	// BaseDir resolves the config's relative paths: --config's folder, or ".".
	BaseDir string
}

// Analyze reads in with crowsnest's readers and returns the report.
func Analyze(in *Inputs, opts Options) (*Report, error) {
	userCfg, cfgPath, baseDir := opts.Config, opts.ConfigPath, opts.BaseDir
	m := &migration{in: in, cfgPath: cfgPath, baseDir: baseDir, secretNamespaces: map[string][]string{},
		brokenProjects: map[string]error{},
		rep:            &Report{Source: in.source, ArgoCDNamespace: in.argoNamespace, Read: in.readList()}}
	proposed := m.readAIUConfig()
	if _, ok := in.configMap(config.DefaultArgoCDNotificationsConfigMap); ok {
		proposed.Notifications = &proposalNotify{ArgoCDConfigMap: proposalCMRef{
			Name: config.DefaultArgoCDNotificationsConfigMap, Namespace: in.argoNamespace}}
	}
	if userCfg == nil {
		values, cfg, err := proposed.build()
		if err != nil {
			return nil, err
		}
		m.cfg, m.rep.Install.Values = cfg, values
	} else {
		m.cfg = userCfg
		if proposed.Notifications != nil && userCfg.Notifications.ArgoCDConfigMap.Name == "" {
			m.cannot(Finding{Where: "--config " + cfgPath, What: "notifications.argocdConfigMap is not set: argocd-notifications-cm is not read, so none of its notifications are sent",
				Why: "crowsnest reads the ConfigMap the config names", Breaks: true})
		}
	}
	// What run checks at start: a config it refuses starts nothing.
	for _, err := range setup.FlattenErrors(setup.CheckConfig(m.cfg, baseDir)) {
		m.cannot(Finding{Where: "crowsnest config", What: "crowsnest would not start: " + err.Error(), Breaks: true})
	}
	m.build()
	m.readImageUpdaters()
	for _, app := range in.apps {
		m.rep.Applications = append(m.rep.Applications, m.analyzeApp(app))
	}
	m.notifyFindings()
	m.windowFindings()
	m.summarize()
	m.install()
	return m.rep, nil
}

// readList names what was read; Secrets by key name only.
func (in *Inputs) readList() []string {
	out := []string{fmt.Sprintf("%d Applications, %d AppProjects, %d ImageUpdaters", len(in.apps), len(in.projects), len(in.imageUpdaters))}
	for _, k := range slices.Sorted(maps.Keys(in.ConfigMaps)) {
		out = append(out, fmt.Sprintf("ConfigMap %s (keys: %s)", k, strings.Join(slices.Sorted(maps.Keys(in.ConfigMaps[k])), ", ")))
	}
	for _, k := range slices.Sorted(maps.Keys(in.Secrets)) {
		out = append(out, fmt.Sprintf("Secret %s (keys: %s; values not shown)", k, strings.Join(slices.Sorted(maps.Keys(in.Secrets[k])), ", ")))
	}
	return out
}

// differs records an installation-wide thing crowsnest reads
// differently.
func (m *migration) differs(f Finding) { m.rep.Differs = append(m.rep.Differs, f) }

// cannot records an installation-wide thing crowsnest does not do.
func (m *migration) cannot(f Finding) { m.rep.Cannot = append(m.rep.Cannot, f) }

// build makes what the daemon makes from the config: the registries
// (offline: no client is used), the image policies, the tenancy rules,
// the notifications and the sync windows.
func (m *migration) build() {
	quiet := slog.New(slog.DiscardHandler)
	list, err := m.cfg.Registries.Resolved(m.baseDir)
	if err != nil {
		list = nil // reported by setup.CheckConfig
	}
	m.regs = setup.NewRegistriesFor(m.cfg, list, nil, nil, quiet)
	for i := range list {
		m.noteSecret(list[i].Credentials, "registries "+cmp.Or(list[i].Name, list[i].Prefix))
	}
	if m.policies, err = imageupdate.CompilePolicies(m.cfg.ImagePolicies); err != nil {
		m.policies, _ = imageupdate.CompilePolicies(nil) // reported by setup.CheckConfig
	}
	m.tenancy = &tenancy.Rules{
		Config:      func() *config.Tenancy { return &m.cfg.Tenancy },
		Projects:    m,
		Assignments: m.regs,
	}
	m.notify = m.buildNotify()
	set, err := windows.FromConfig(m.cfg.Windows)
	if err != nil {
		set = nil // reported by setup.CheckConfig
	}
	for _, p := range m.in.projects {
		ps, err := windows.FromAppProject(p.Object.Object)
		if err != nil {
			m.brokenProjects[p.Name] = err
		}
		set = append(set, ps...)
	}
	m.windows = set
}

// Project finds an Application's AppProject as the daemon does: by name
// in Argo CD's namespace, or (files) in the Application's own.
func (m *migration) Project(app *watcher.App) *watcher.Project {
	name := cmp.Or(app.Project, "default")
	var inAppNS *watcher.Project
	for _, p := range m.in.projects {
		if p.Name != name {
			continue
		}
		switch p.Namespace {
		case m.in.argoNamespace:
			return p
		case app.Namespace:
			inAppNS = p
		}
	}
	return inAppNS
}

// noteSecret remembers a Secret credentials reference outside Argo CD's
// namespace: crowsnest needs a Role there to read it.
func (m *migration) noteSecret(ref config.CredentialRef, by string) {
	if ref.Source != config.CredsPullSecret && ref.Source != config.CredsSecret {
		return
	}
	if ref.Namespace == m.in.argoNamespace {
		return
	}
	if !slices.Contains(m.secretNamespaces[ref.Namespace], by) {
		m.secretNamespaces[ref.Namespace] = append(m.secretNamespaces[ref.Namespace], by)
	}
}

// proposal is the crowsnest config migrate proposes: only what
// differs from the defaults, in crowsnest's own keys.
type proposal struct {
	APIVersion    string          `yaml:"apiVersion"`
	Kind          string          `yaml:"kind"`
	Log           *proposalLog    `yaml:"log,omitempty"`
	Registries    *proposalRegs   `yaml:"registries,omitempty"`
	Notifications *proposalNotify `yaml:"notifications,omitempty"`
	Git           *proposalGit    `yaml:"git,omitempty"`
}

type proposalLog struct {
	Level string `yaml:"level"`
}

type proposalRegs struct {
	List []proposalRegistry `yaml:"list"`
}

// proposalRegistry is config.Registry with only the keys set.
type proposalRegistry struct {
	Name             string  `yaml:"name,omitempty"`
	Prefix           string  `yaml:"prefix"`
	APIURL           string  `yaml:"apiURL,omitempty"`
	Credentials      string  `yaml:"credentials,omitempty"`
	CredsExpire      string  `yaml:"credsExpire,omitempty"`
	Insecure         bool    `yaml:"insecure,omitempty"`
	CAData           string  `yaml:"caData,omitempty"`
	DefaultNamespace string  `yaml:"defaultNamespace,omitempty"`
	RateLimit        float64 `yaml:"rateLimit,omitempty"`
	Default          bool    `yaml:"default,omitempty"`
}

type proposalNotify struct {
	ArgoCDConfigMap proposalCMRef `yaml:"argocdConfigMap"`
}

// proposalCMRef is config.ArgoCDConfigMapRef with only the keys set.
type proposalCMRef struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace,omitempty"`
}

type proposalGit struct {
	Author proposalAuthor `yaml:"author"`
}

type proposalAuthor struct {
	Name  string `yaml:"name,omitempty"`
	Email string `yaml:"email,omitempty"`
}

// build writes the proposed config as Helm values and parses it back
// with crowsnest's own config reader, so the analysis runs on exactly
// what the install would run.
func (c *proposal) build() (string, *config.Config, error) {
	c.APIVersion, c.Kind = config.APIVersion, config.Kind
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return "", nil, err
	}
	pruneEmpty(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return "", nil, err
	}
	if err := enc.Close(); err != nil {
		return "", nil, err
	}
	data := buf.Bytes()
	cfg, err := config.Parse(data)
	if err != nil {
		return "", nil, fmt.Errorf("the proposed config does not parse (a crowsnest bug):\n%w", err)
	}
	var b strings.Builder
	b.WriteString("config:\n")
	for l := range strings.Lines(string(data)) {
		b.WriteString("  " + l)
	}
	return b.String(), cfg, nil
}

// pruneEmpty drops the mapping entries whose value is empty ("", false,
// an empty list or mapping), so the proposed config shows only what is
// set (config types spell every key).
func pruneEmpty(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Tag == "!!null" || (n.Tag == "!!str" && n.Value == "") || (n.Tag == "!!bool" && n.Value == "false")
	case yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !pruneEmpty(n.Content[i+1]) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return len(kept) == 0
	case yaml.SequenceNode:
		for _, c := range n.Content {
			pruneEmpty(c)
		}
		return len(n.Content) == 0
	case yaml.DocumentNode:
		for _, c := range n.Content {
			pruneEmpty(c)
		}
	}
	return false
}
