package config

import "fmt"

// Connection settings belong to a registry host: one HTTP transport
// (API URL, TLS) serves every repository on it, whichever entry's prefix
// matches the repository. MatchHost picks the entry they come from; the
// other entries of the host may leave them unset or repeat them. Pacing
// (rateLimit, maxConcurrency; registries.conf's limit) is not among
// them: as in argocd-image-updater, each entry paces the images it serves
// with its own limit (see Match), so two prefixes of one host may set
// different ones.

// hostConflict is an entry of a host setting a connection setting to
// something else than the host's entry (MatchHost) does.
type hostConflict struct {
	entry, source int
	setting       string // one of the settings below
}

// The connection settings, by the names of crowsnest's config.
const (
	settingAPIURL   = "apiURL"
	settingInsecure = "insecure"
	settingCAFile   = "caFile"
	settingCAData   = "caData"
)

// field names the setting's key in the file format of keys.
func (c hostConflict) field(keys registryKeys) string {
	switch c.setting {
	case settingAPIURL:
		return keys.apiURL
	case settingCAFile:
		return keys.caFile
	case settingCAData:
		return keys.caData
	}
	return c.setting // insecure: the same key in both formats
}

func (c hostConflict) message(l RegistryList, name func(int) string) string {
	return fmt.Sprintf("differs from %s, whose connection settings apply to every image on %s: "+
		"connection settings (apiURL, insecure, caFile, caData) are per registry host; "+
		"leave it out here or set the same value", name(c.source), RegistryHost(l[c.source].Prefix))
}

// hostConflicts finds entries whose connection settings disagree with
// their host's entry. Unset values (empty, false) never disagree.
func (l RegistryList) hostConflicts() []hostConflict {
	var out []hostConflict
	for i := range l {
		host := RegistryHost(l[i].Prefix)
		src := l.hostEntry(host)
		if src < 0 || src == i || l[i].Prefix == "" {
			continue
		}
		e, s := &l[i], &l[src]
		add := func(setting string, differs bool) {
			if differs {
				out = append(out, hostConflict{entry: i, source: src, setting: setting})
			}
		}
		add(settingAPIURL, e.APIURL != "" && e.APIURL != s.APIURL)
		add(settingInsecure, e.Insecure && !s.Insecure)
		add(settingCAFile, e.CAFile != "" && e.CAFile != s.CAFile)
		add(settingCAData, e.CAData != "" && e.CAData != s.CAData)
	}
	return out
}
