package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
	"github.com/crowsnest-dev/crowsnest/config/internal/strictyaml"
)

// confFile is argocd-image-updater's registries.conf.
type confFile struct {
	Registries []confRegistry `yaml:"registries"`
}

// confRegistry is one entry of registries.conf, with its key names.
type confRegistry struct {
	Name        string        `yaml:"name"`
	APIURL      string        `yaml:"api_url"`
	Prefix      string        `yaml:"prefix"`
	Ping        yaml11Bool    `yaml:"ping"`
	Credentials CredentialRef `yaml:"credentials"`
	CredsExpire Duration      `yaml:"credsexpire"`
	TagSortMode string        `yaml:"tagsortmode"`
	Insecure    yaml11Bool    `yaml:"insecure"`
	CAFile      string        `yaml:"ca_file"`
	CAData      string        `yaml:"ca_data"`
	DefaultNS   string        `yaml:"defaultns"`
	Limit       int           `yaml:"limit"`
	Default     yaml11Bool    `yaml:"default"`
}

var confKeys = registryKeys{
	prefix: "prefix", apiURL: "api_url", credsExpire: "credsexpire", caFile: "ca_file", caData: "ca_data",
	defaultNamespace: "defaultns", rateLimit: "limit", maxConcurrency: "limit", isDefault: "default",
}

// tagSortModes are argocd-image-updater's, in any case (it lower-cases
// them); crowsnest sorts tags itself, so the value is checked and
// otherwise ignored, like ping.
var tagSortModes = []string{"", "none", "latest-first", "latest-last"}

// yaml11Bool is a bool that also reads YAML 1.1's yes/no/on/off, which
// argocd-image-updater's YAML library accepts and its docs use.
type yaml11Bool bool

func (b *yaml11Bool) decodeNode(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "true", "yes", "y", "on":
			*b = true
			return nil
		case "false", "no", "n", "off":
			*b = false
			return nil
		}
	}
	return fmt.Errorf("expected true or false (or yes/no), got %s", strictyaml.Describe(n))
}

// ParseRegistriesConf reads argocd-image-updater's registries.conf format
// strictly (unknown keys are errors naming the key and line) into the
// same model as the registries list. An entry without prefix is, as in
// older argocd-image-updater releases, the default registry at its
// api_url's host. The error is a *ValidationError.
func ParseRegistriesConf(data []byte) (RegistryList, error) {
	errs := &fieldErrors{lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		errs.add("", 0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, errs.err()
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return RegistryList{}, nil // an empty file configures nothing
	}
	var f confFile
	newDecoder(errs, false).Decode(doc.Content[0], reflect.ValueOf(&f).Elem(), "")
	decodeErrs := len(errs.list)
	list := make(RegistryList, len(f.Registries))
	for i := range f.Registries {
		c, p := &f.Registries[i], fieldpath.Index("registries", i)
		r := Registry{
			Name: c.Name, Prefix: c.Prefix, APIURL: c.APIURL, Credentials: c.Credentials,
			CredsExpire: c.CredsExpire, Insecure: bool(c.Insecure), CAFile: c.CAFile, CAData: c.CAData,
			DefaultNamespace: c.DefaultNS, RateLimit: float64(c.Limit), Default: bool(c.Default),
		}
		if r.Prefix == "" && r.APIURL != "" && checkAPIURL(r.APIURL) == nil {
			r.Prefix, r.Default = RegistryHost(r.APIURL), true
		}
		r.setDefaults()
		if !slices.Contains(tagSortModes, strings.ToLower(c.TagSortMode)) {
			errs.invalid(fieldpath.Join(p, "tagsortmode"), "unsupported value %q, want none, latest-first or latest-last", c.TagSortMode)
		}
		list[i] = r
	}
	list.validate("registries", confKeys, errs)
	errs.dropAfterDecode(decodeErrs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return list, nil
}

// LoadRegistriesConf reads a registries.conf file. Relative ca_file paths
// start at the file's folder.
func LoadRegistriesConf(path string) (RegistryList, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading registries.conf: %w", err)
	}
	list, err := ParseRegistriesConf(data)
	if err != nil {
		return nil, fmt.Errorf("registries.conf %s:\n%w", path, err)
	}
	list.absCAFiles(filepath.Dir(path))
	return list, nil
}

func (l RegistryList) absCAFiles(dir string) {
	for i := range l {
		if l[i].CAFile != "" && !filepath.IsAbs(l[i].CAFile) {
			l[i].CAFile = filepath.Join(dir, l[i].CAFile)
		}
	}
}

// Resolved returns the registries in force: the entries of ConfFile, each
// replaced by a List entry with the same prefix, then the rest of List. A
// default in List overrides one in ConfFile. Relative paths (confFile,
// caFile) start at baseDir, the config file's folder; CA files are read
// to check that they hold certificates. The result shares nothing with r.
func (r *Registries) Resolved(baseDir string) (RegistryList, error) {
	var out RegistryList
	if r.ConfFile != "" {
		path := r.ConfFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, path)
		}
		conf, err := LoadRegistriesConf(path)
		if err != nil {
			return nil, fmt.Errorf("registries.confFile: %w", err)
		}
		out = conf
	}
	own := slices.Clone(r.List)
	own.absCAFiles(baseDir)
	if own.Default() != nil {
		for i := range out {
			out[i].Default = false
		}
	}
	for j := range own {
		key := CanonicalPrefix(own[j].Prefix)
		if i := slices.IndexFunc(out, func(o Registry) bool { return CanonicalPrefix(o.Prefix) == key }); i >= 0 {
			out[i] = own[j]
		} else {
			out = append(out, own[j])
		}
	}
	var errs []error
	// Each source was validated alone; the merged list must still agree
	// on every host's connection settings.
	name := func(i int) string { return "registry " + out[i].Prefix }
	for _, c := range out.hostConflicts() {
		errs = append(errs, fmt.Errorf("%s: %s %s", name(c.entry), c.field(crowsnestKeys), c.message(out, name)))
	}
	for i := range out {
		if err := out[i].checkCA(); err != nil {
			errs = append(errs, fmt.Errorf("registry %s: %w", out[i].Prefix, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// CertPool returns the system roots plus CAFile and CAData, or nil when
// neither is set (or Insecure makes them moot).
func (r *Registry) CertPool() (*x509.CertPool, error) {
	if r.Insecure || (r.CAFile == "" && r.CAData == "") {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system roots (e.g. a scratch image)
	}
	return r.addCAs(pool)
}

// checkCA reads CAFile and CAData as CertPool does, without the system
// roots: validation runs at start, before anything connects, and loading
// the system roots there (30 ms) would delay the first pass; the
// registry's first connection loads them.
func (r *Registry) checkCA() error {
	if r.Insecure || (r.CAFile == "" && r.CAData == "") {
		return nil
	}
	_, err := r.addCAs(x509.NewCertPool())
	return err
}

// addCAs adds CAFile's and CAData's certificates to pool.
func (r *Registry) addCAs(pool *x509.CertPool) (*x509.CertPool, error) {
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading caFile: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s: no PEM certificate found", r.CAFile)
		}
	}
	if r.CAData != "" && !pool.AppendCertsFromPEM([]byte(r.CAData)) {
		return nil, errors.New("caData: no PEM certificate found")
	}
	return pool, nil
}

// TLSConfig returns the TLS settings for the registry's custom CAs, or nil
// to use Go's defaults. Insecure is the caller's to apply.
func (r *Registry) TLSConfig() (*tls.Config, error) {
	pool, err := r.CertPool()
	if pool == nil || err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
