package migrate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config"
)

// aiuConfigKeys maps the keys of argocd-image-updater-config that its
// install turns into `run` flags (environment variables the flags read)
// to those flags, so a key means what `crowsnest run` makes of the flag
// (internal/daemon's ImageUpdaterAliases, imageupdater.IgnoredFlags). registries.conf is read on its own.
var aiuConfigKeys = map[string]string{
	"log.level":                   "loglevel",
	"git.user":                    "git-commit-user",
	"git.email":                   "git-commit-email",
	"git.commit-message-template": "git-commit-message-path",
	"git.commit-signing-key":      "git-commit-signing-key",
	"git.commit-signing-method":   "git-commit-signing-method",
	"git.commit-sign-off":         "git-commit-sign-off",
	"kube.events":                 "disable-kube-events",
	"applications_api":            "applications-api",
	"argocd.server_addr":          "argocd-server-addr",
	"argocd.insecure":             "argocd-insecure",
	"argocd.plaintext":            "argocd-plaintext",
	"argocd.grpc_web":             "argocd-grpc-web",
}

// aiuConfigBreaks are the keys whose loss changes what lands in Git:
// commits signed today would be unsigned, which protected branches
// refuse.
var aiuConfigBreaks = map[string]bool{"git.commit-signing-key": true}

// readAIUConfig reads argocd-image-updater-config: registries.conf with
// crowsnest's reader, the other keys through the flags they set. It
// returns the config that carries over what crowsnest has a field for.
func (m *migration) readAIUConfig() *proposal {
	c := &proposal{}
	data, ok := m.in.configMap(aiuConfigMap)
	if !ok {
		return c
	}
	where := func(key string) string { return "ConfigMap " + m.in.argoNamespace + "/" + aiuConfigMap + " " + key }
	for _, key := range slices.Sorted(maps.Keys(data)) {
		val := strings.TrimSpace(data[key])
		if key == aiuRegistriesKey {
			m.readRegistriesConf(c, where(key), data[key])
			continue
		}
		flag, known := aiuConfigKeys[key]
		if !known {
			m.differs(Finding{Where: where(key), What: "not read",
				Why: "not a key argocd-image-updater's install turns into a setting"})
			continue
		}
		switch key {
		case "log.level":
			lvl := strings.ToLower(val)
			if lvl == "trace" {
				lvl = "debug" // as --loglevel=trace does
			}
			c.Log = &proposalLog{Level: lvl}
			continue
		case "git.user", "git.email":
			if c.Git == nil {
				c.Git = &proposalGit{}
			}
			if key == "git.user" {
				c.Git.Author.Name = val
			} else {
				c.Git.Author.Email = val
			}
			continue
		case "applications_api":
			if val == "" || val == "kubernetes" {
				continue // crowsnest's way too
			}
		}
		f := Finding{Where: where(key), What: fmt.Sprintf("not read (argocd-image-updater's --%s)", flag),
			Why: imageupdater.IgnoredFlags[flag], Breaks: aiuConfigBreaks[key]}
		if f.Breaks {
			f.What = "commits would not be signed: " + f.What
			m.cannot(f)
		} else {
			m.differs(f)
		}
	}
	return c
}

// confIgnoredWhy says why crowsnest accepts and ignores a registries.conf
// key.
var confIgnoredWhy = map[string]string{
	"ping":        "crowsnest never pings a registry before using it",
	"tagsortmode": "crowsnest sorts tags itself, as the strategy says",
}

// readRegistriesConf reads registries.conf as `registries.confFile`
// does and carries its entries into the proposed config's registries
// list (the ConfigMap is argocd-image-updater's, not crowsnest's).
func (m *migration) readRegistriesConf(c *proposal, where, text string) {
	list, err := config.ParseRegistriesConf([]byte(text))
	if err != nil {
		m.cannot(Finding{Where: where, What: "does not parse, so no registry settings carry over: " + strings.ReplaceAll(err.Error(), "\n", "; "),
			Why: "crowsnest reads registries.conf strictly (unknown keys and bad values are errors)", Breaks: true})
		return
	}
	// Keys crowsnest accepts and does not act on, per entry.
	var raw struct {
		Registries []map[string]any `yaml:"registries"`
	}
	_ = yaml.Unmarshal([]byte(text), &raw) // it parsed above
	regs := &proposalRegs{}
	for i := range list {
		r := &list[i]
		name := r.Name
		if name == "" {
			name = r.Prefix
		}
		e := proposalRegistry{Name: r.Name, Prefix: r.Prefix, APIURL: r.APIURL, Insecure: r.Insecure, CAData: r.CAData,
			DefaultNamespace: r.DefaultNamespace, Default: r.Default}
		if !r.Credentials.IsZero() {
			e.Credentials = r.Credentials.String()
		}
		if r.CredsExpire.Duration > 0 {
			e.CredsExpire = r.CredsExpire.String()
		}
		if r.RateLimit != config.DefaultRegistryRateLimit {
			e.RateLimit = r.RateLimit
		}
		regs.List = append(regs.List, e)
		at := fmt.Sprintf("%s registries[%d] (%s)", where, i, name)
		if r.CAFile != "" {
			m.cannot(Finding{Where: at, What: "ca_file " + r.CAFile + " is a path in argocd-image-updater's pod: not carried over, so TLS to " + r.Prefix + " would fail",
				Why: "put the certificate in the entry's caData (or mount it and set caFile)", Breaks: true})
		}
		if i < len(raw.Registries) {
			for _, k := range []string{"ping", "tagsortmode"} {
				if _, set := raw.Registries[i][k]; set {
					m.differs(Finding{Where: at, What: k + " is accepted and ignored", Why: confIgnoredWhy[k]})
				}
			}
		}
		if strings.Contains(strings.TrimSuffix(config.CanonicalPrefix(r.Prefix), "/"), "/") {
			m.differs(Finding{Where: at, What: "prefix " + r.Prefix + " has a path: its credentials serve only the images under it",
				Why: "connection settings (api_url, insecure, CAs) belong to the host and must agree among the host's entries"})
		}
	}
	if len(regs.List) > 0 {
		c.Registries = regs
	}
}
