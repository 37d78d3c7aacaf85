package config

import "fmt"

// Connection settings belong to a registry host: one HTTP transport, one
// rate limit and one concurrency bound serve every repository on it,
// whichever entry's prefix matches the repository. MatchHost picks the
// entry they come from; the other entries of the host may leave them
// unset or repeat them.

// hostConflict is an entry of a host setting a connection setting to
// something else than the host's entry (MatchHost) does.
type hostConflict struct {
	entry, source int
	setting       string // one of the settings below
}

// The connection settings, by the names of crowsnest's config.
const (
	settingAPIURL         = "apiURL"
	settingInsecure       = "insecure"
	settingCAFile         = "caFile"
	settingCAData         = "caData"
	settingRateLimit      = "rateLimit"
	settingMaxConcurrency = "maxConcurrency"
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
	case settingRateLimit:
		return keys.rateLimit
	case settingMaxConcurrency:
		return keys.maxConcurrency
	}
	return c.setting // insecure: the same key in both formats
}

func (c hostConflict) message(l RegistryList, name func(int) string) string {
	return fmt.Sprintf("differs from %s, whose connection settings apply to every image on %s: "+
		"connection settings (apiURL, insecure, caFile, caData, rateLimit, maxConcurrency) are per registry host; "+
		"leave it out here or set the same value", name(c.source), RegistryHost(l[c.source].Prefix))
}

// hostConflicts finds entries whose connection settings disagree with
// their host's entry. Unset values (empty, false) never disagree; a rate
// limit or concurrency at its default is taken as unset, since defaults
// are filled in before validation.
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
		add(settingRateLimit, e.RateLimit != s.RateLimit && e.RateLimit != DefaultRegistryRateLimit)
		add(settingMaxConcurrency, e.MaxConcurrency != s.MaxConcurrency && e.MaxConcurrency != DefaultRegistryMaxConcurrency)
	}
	return out
}
