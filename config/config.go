package config

import (
	"fmt"
	"os"
	"time"
)

// The file's identity; other values are rejected so a future format is
// never misread as this one.
const (
	APIVersion = "crowsnest.dev/v1alpha1"
	Kind       = "Config"
)

// Config is crowsnest's own configuration file.
type Config struct {
	APIVersion     string         `yaml:"apiVersion"`
	Kind           string         `yaml:"kind"`
	Watch          Watch          `yaml:"watch"`
	Controller     Controller     `yaml:"controller"`
	LeaderElection LeaderElection `yaml:"leaderElection"`
	Log            Log            `yaml:"log"`
	Registries     Registries     `yaml:"registries"`
	// Windows are sync windows that gate write-backs and can start syncs.
	Windows []SyncWindow `yaml:"syncWindows"`
	// Notifications configures deployment notifications.
	Notifications Notifications `yaml:"notifications"`
	// ImagePolicies say what to update in the Applications they match,
	// for Applications without argocd-image-updater annotations.
	ImagePolicies []ImagePolicy `yaml:"imagePolicies"`
	// Git configures Git write-back commits.
	Git Git `yaml:"git"`
	// Tenancy widens what Application annotations may use: credentials
	// beyond their own namespace, Git repositories beyond their
	// AppProject's sourceRepos.
	Tenancy Tenancy `yaml:"tenancy"`
}

// Default returns a config with every default filled in.
func Default() *Config {
	c := &Config{APIVersion: APIVersion, Kind: Kind}
	c.setDefaults()
	return c
}

// Parse decodes data strictly, fills defaults and validates. The error is a
// *ValidationError listing every problem with its field path and line.
func Parse(data []byte) (*Config, error) {
	c := &Config{}
	errs := &fieldErrors{}
	decodeStrict(data, c, errs)
	decodeErrs := len(errs.list)
	if decodeErrs > 0 && errs.list[0].Path == "" {
		return nil, errs.err() // not a YAML mapping: nothing to validate
	}
	c.setDefaults()
	c.validate(errs)
	errs.dropAfterDecode(decodeErrs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Load reads and parses the config file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s:\n%w", path, err)
	}
	return c, nil
}

// Validate checks a config built in code or changed after Parse (flags
// applied over a file); the error is a *ValidationError.
func (c *Config) Validate() error {
	errs := &fieldErrors{}
	c.validate(errs)
	return errs.err()
}

func (c *Config) setDefaults() {
	c.Watch.setDefaults()
	c.Controller.setDefaults()
	c.LeaderElection.setDefaults()
	c.Log.setDefaults()
	c.Registries.setDefaults()
	c.Notifications.setDefaults()
	c.Git.setDefaults()
}

func (c *Config) validate(errs *fieldErrors) {
	switch c.APIVersion {
	case APIVersion:
	case "":
		errs.invalid("apiVersion", "required (want %s)", APIVersion)
	default:
		errs.invalid("apiVersion", "unsupported value %q, want %s", c.APIVersion, APIVersion)
	}
	switch c.Kind {
	case Kind:
	case "":
		errs.invalid("kind", "required (want %s)", Kind)
	default:
		errs.invalid("kind", "unsupported value %q, want %s", c.Kind, Kind)
	}
	c.Watch.validate("watch", errs)
	c.Controller.validate("controller", errs)
	c.LeaderElection.validate("leaderElection", errs)
	c.Log.validate("log", errs)
	c.Registries.validate("registries", errs)
	validateWindows("syncWindows", c.Windows, errs)
	c.Notifications.validate("notifications", errs)
	validateImagePolicies("imagePolicies", c.ImagePolicies, errs)
	c.Git.validate("git", errs)
	c.validateForgeApps(errs)
	c.Tenancy.validate("tenancy", errs)
}

// orDefault fills a zero duration.
func (d *Duration) orDefault(def time.Duration) {
	if d.Duration == 0 {
		d.Duration = def
	}
}

// decodedBadly reports whether path, or a field it belongs to, failed to decode.
