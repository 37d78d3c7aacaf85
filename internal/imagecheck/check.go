package imagecheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
)

// ErrNothingSelected is Run's error when no tag qualifies, so that
// `crowsnest test` exits non-zero and scripts can rely on the exit code.
var ErrNothingSelected = errors.New("no tag qualifies")

// Options are one image's selection dry run.
type Options struct {
	// Image is the reference as written (nginx, ghcr.io/org/app:1.2.0); a
	// tag in it is the current version.
	Image string
	// Policy is the selection policy; a digest strategy without a
	// constraint tracks Image's tag.
	Policy policy.Spec
	// ConfigPath is a crowsnest config whose registries apply, and
	// RegistriesConf an argocd-image-updater registries.conf; empty for
	// none.
	ConfigPath, RegistriesConf string
	// Credentials, when set, is the credentials reference for Image's
	// repository; Insecure allows plain HTTP and skips TLS verification
	// for its registry host.
	Credentials string
	Insecure    bool
	// Kubeconfig and UserAgent are the kube client's, for pullsecret: and
	// secret: credentials.
	Kubeconfig, UserAgent string
	// VerifyKeys, when set, are PEM public keys: a tag whose image has no
	// cosign signature by one of them is skipped, as the daemon does for
	// a policy's verify.cosign.publicKeys.
	VerifyKeys []string
	// Log receives the registry client's logs.
	Log *slog.Logger
}

// Report is the JSON form of `crowsnest test`.
type Report struct {
	Image      string      `json:"image"`
	Current    string      `json:"current,omitempty"`
	Strategy   string      `json:"strategy"`
	Tags       int         `json:"tags"`
	Selected   string      `json:"selected,omitempty"`
	Digest     string      `json:"digest,omitempty"`
	Ref        string      `json:"ref,omitempty"`
	Update     bool        `json:"update"`
	Error      string      `json:"error,omitempty"`
	Candidates []Candidate `json:"candidates"`
}

// Candidate is a policy.Candidate with the lowerCamel JSON keys all of
// crowsnest's JSON output uses.
type Candidate struct {
	Tag string `json:"tag"`
	// Version is the sort key; empty when the tag was skipped before it
	// had one.
	Version string        `json:"version,omitempty"`
	Reason  policy.Reason `json:"reason"`
	Created time.Time     `json:"created,omitzero"`
	// Detail says why a signature did not verify.
	Detail string `json:"detail,omitempty"`
}

// Run lists the image's tags and selects as the daemon would. When no
// tag qualifies it returns the report and an error wrapping
// ErrNothingSelected; on any other failure, no report.
func Run(ctx context.Context, o Options) (*Report, error) {
	cfg, baseDir, err := o.config()
	if err != nil {
		return nil, err
	}
	list, err := cfg.Registries.Resolved(baseDir)
	if err != nil {
		return nil, err
	}
	img, pol, err := o.policy(list)
	if err != nil {
		return nil, err
	}
	var keys *verify.KeySet
	if len(o.VerifyKeys) > 0 {
		if keys, err = verify.ParseKeys(o.VerifyKeys); err != nil {
			return nil, fmt.Errorf("verify keys: %w", err)
		}
	}
	if list, err = o.override(list, img); err != nil {
		return nil, err
	}
	var secrets creds.SecretGetter
	if needsKube(list) {
		if secrets, err = o.secrets(); err != nil {
			return nil, err
		}
	}
	regs := setup.NewRegistriesFor(cfg, list, secrets, nil, o.Log)
	rep, selErr, err := selectTag(ctx, regs, img, pol, keys)
	if err != nil {
		return nil, err
	}
	if rep.Selected == "" {
		return &rep, fmt.Errorf("%s: %w: %w", img.Repo(), ErrNothingSelected, selErr)
	}
	return &rep, nil
}

// policy reads the image as the daemon would look it up (a name without
// a registry goes to the default registry, with its namespace) and
// compiles the policy for it.
func (o *Options) policy(list config.RegistryList) (registry.Image, *policy.Policy, error) {
	img, err := registry.ParseImage(list.Qualify(o.Image))
	if err != nil {
		return img, nil, err
	}
	if !tagWritten(o.Image) {
		img.Tag = "" // ParseImage's "latest" is not a current version
	}
	spec := o.Policy
	if spec.Constraint == "" && img.Tag != "" && isDigestStrategy(spec.Strategy) {
		spec.Constraint = img.Tag
	}
	pol, err := policy.Compile(img.Repo(), spec)
	return img, pol, err
}

// selectTag lists the repository's tags and selects as the daemon would.
// selErr is the selection's policy.ErrNoCandidate (in the report); err
// any other failure.
func selectTag(ctx context.Context, regs *setup.Registries, img registry.Image, pol *policy.Policy, keys *verify.KeySet) (rep Report, selErr, err error) {
	repo := img.Repository
	rep = Report{Image: img.Repo(), Current: img.Tag, Strategy: string(pol.Strategy()), Candidates: []Candidate{}}
	tags, err := regs.Client.ListTags(ctx, repo)
	if err != nil {
		return rep, nil, err
	}
	rep.Tags = len(tags)
	facts := policy.Facts{Metadata: regs.Client.MetadataFunc(repo, pol.Platforms())}
	if keys != nil {
		facts.Verify = regs.Client.VerifyFunc(repo, keys)
	}
	res, selErr := pol.ExplainWith(ctx, tags, facts)
	if res.Candidates != nil {
		for _, c := range res.Candidates {
			rep.Candidates = append(rep.Candidates, Candidate(c))
		}
	}
	switch {
	case selErr == nil:
		rep.Selected, rep.Digest, rep.Ref = res.Tag, res.Digest, res.Ref()
		rep.Update = img.Tag != "" && (res.Tag != img.Tag || (res.Pinned && res.Digest != img.Digest))
	case errors.Is(selErr, policy.ErrNoCandidate):
		rep.Error = selErr.Error()
	default:
		return rep, nil, selErr
	}
	return rep, selErr, nil
}

// tagWritten reports whether the reference names a tag: a colon in its
// last path segment, before any digest.
func tagWritten(ref string) bool {
	ref, _, _ = strings.Cut(ref, "@")
	return strings.Contains(ref[strings.LastIndexByte(ref, '/')+1:], ":")
}

func isDigestStrategy(s string) bool { return strings.EqualFold(s, string(policy.StrategyDigest)) }

// config reads ConfigPath, then RegistriesConf.
func (o *Options) config() (*config.Config, string, error) {
	cfg := config.Default()
	baseDir := "."
	if o.ConfigPath != "" {
		c, err := config.Load(o.ConfigPath)
		if err != nil {
			return nil, "", err
		}
		cfg, baseDir = c, filepath.Dir(o.ConfigPath)
	}
	if o.RegistriesConf != "" {
		abs, err := filepath.Abs(o.RegistriesConf)
		if err != nil {
			return nil, "", err
		}
		cfg.Registries.ConfFile = abs
	}
	return cfg, baseDir, nil
}

// override applies Insecure to the image's registry host (through the
// entry MatchHost picks, or a new one for the host) and Credentials to
// the image's repository (an entry for it, which wins as the longest
// prefix and repeats the host's connection settings).
func (o *Options) override(list config.RegistryList, img registry.Image) (config.RegistryList, error) {
	if o.Credentials == "" && !o.Insecure {
		return list, nil
	}
	list = slices.Clone(list)
	host := img.Repository.Host()
	entry := func(prefix string) config.Registry {
		return config.Registry{Prefix: prefix, RateLimit: config.DefaultRegistryRateLimit, MaxConcurrency: config.DefaultRegistryMaxConcurrency}
	}
	if o.Insecure {
		if e := list.MatchHost(host); e != nil {
			e.Insecure = true
		} else {
			e := entry(host)
			e.Insecure = true
			list = append(list, e)
		}
	}
	if o.Credentials != "" {
		ref, err := creds.Parse(o.Credentials)
		if err != nil {
			return nil, fmt.Errorf("--credentials: %w", err)
		}
		repo := img.Repo()
		e := entry(repo)
		if m := list.Match(repo); m != nil {
			e = *m // the settings in force, which agree with the host's
			e.Prefix, e.Default, e.DefaultNamespace = repo, false, ""
		}
		e.Credentials, e.CredsExpire = ref, config.Duration{}
		list = slices.DeleteFunc(list, func(r config.Registry) bool { return config.CanonicalPrefix(r.Prefix) == repo })
		list = append(list, e)
	}
	if err := list.Validate(); err != nil {
		return nil, fmt.Errorf("registries with --credentials and --insecure:\n%w", err)
	}
	return list, nil
}

// needsKube reports whether any credentials in force read Kubernetes.
func needsKube(list config.RegistryList) bool {
	for i := range list {
		if src := list[i].Credentials.Source; src == config.CredsPullSecret || src == config.CredsSecret {
			return true
		}
	}
	return false
}

func (o *Options) secrets() (creds.SecretGetter, error) {
	rc, err := setup.RestConfig(o.Kubeconfig, config.Default(), o.UserAgent)
	if err != nil {
		return nil, err
	}
	cs, err := kubecore.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	return creds.KubeSecrets{Client: cs}, nil
}
