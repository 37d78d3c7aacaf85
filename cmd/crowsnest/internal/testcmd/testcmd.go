package testcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// errNothingSelected makes `crowsnest test` exit non-zero when no tag
// qualifies, so scripts can rely on the exit code.
var errNothingSelected = errors.New("no tag qualifies")

type options struct {
	userAgent    string
	strategy     string
	constraint   string
	allowTags    string
	ignoreTags   []string
	extract      string
	extractOrder string
	platforms    []string
	credentials  string
	configPath   string
	regConf      string
	insecure     bool
	output       string
	timeout      time.Duration
	kubeconfig   string
	logLevel     string
}

// NewCommand is `crowsnest test`; userAgent is its kube client's.
func NewCommand(userAgent string) *cobra.Command {
	o := &options{userAgent: userAgent}
	cmd := &cobra.Command{
		Use:   "test IMAGE",
		Short: "Show which tag a policy would select for an image, and why",
		Long: `Test lists an image's tags in its registry and runs version selection on
them exactly as the daemon would, printing every candidate with the reason it
was selected or skipped. IMAGE is a reference such as nginx, ghcr.io/org/app
or registry.local:5000/team/app:1.2.0; a tag in IMAGE is shown as the current
version (and is the tag to track with --strategy digest when --constraint is
not given). The exit code is non-zero when no tag qualifies.

Registry settings (endpoints, CAs, rate limits, credentials per prefix, the
default registry for names like nginx and its default namespace) come from
--config and --registries-conf, as the daemon applies them; --credentials
overrides the credentials for this image (pullsecret:ns/name,
secret:ns/name#field, env:VAR, ext:/path, dockerconfig:/path) and --insecure
the TLS settings of its registry host. Kubernetes secrets are read with
--kubeconfig.`,
		Example: `  crowsnest test nginx --constraint '~1.27'
  crowsnest test ghcr.io/org/app --strategy newest-build --platform linux/amd64 --platform linux/arm64
  crowsnest test registry.local/app --allow-tags 'regexp:^build-' --extract 'build-(?P<version>\d+)' --extract-order numeric
  crowsnest test nginx:stable --strategy digest -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd, args[0])
		},
		SilenceUsage: true,
	}
	f := cmd.Flags()
	f.StringVar(&o.strategy, "strategy", "", "semver (default), newest-build, digest or alphabetical (argocd-image-updater's latest and name work too)")
	f.StringVar(&o.strategy, "update-strategy", "", "same as --strategy (argocd-image-updater's name)")
	f.StringVar(&o.constraint, "constraint", "", "semver range such as '~1.2' or '>=1.0 <2'; the tag to track with digest")
	f.StringVar(&o.constraint, "semver-constraint", "", "same as --constraint (argocd-image-updater's name)")
	f.StringVar(&o.allowTags, "allow-tags", "", "keep only these tags: 'regexp:<re>' or 'any'")
	f.StringArrayVar(&o.ignoreTags, "ignore-tags", nil, "drop tags matching this glob or 'regexp:<re>' (repeatable)")
	f.StringVar(&o.extract, "extract", "", "regexp with a (?P<version>...) group; the group's text is what gets ordered")
	f.StringVar(&o.extractOrder, "extract-order", "", "how extracted values sort: semver, numeric or lexical")
	f.StringSliceVar(&o.platforms, "platform", nil, "os/arch[/variant] the tag must be built for, one of them is enough (repeatable or comma-separated)")
	f.StringSliceVar(&o.platforms, "platforms", nil, "same as --platform")
	f.StringVar(&o.credentials, "credentials", "", "credentials reference for this image's registry")
	f.StringVar(&o.configPath, "config", "", "crowsnest config file whose registries section applies")
	f.StringVar(&o.regConf, "registries-conf", "", "argocd-image-updater registries.conf to read")
	f.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP and skip TLS verification for this image's registry")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for pullsecret: and secret: credentials")
	f.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error (logs go to stderr)")
	return cmd
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
}

func (o *options) run(ctx context.Context, cmd *cobra.Command, image string) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output: unsupported value %q, want text or json", o.output)
	}
	lvl, err := logging.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	var level slog.LevelVar
	level.Set(lvl)
	log, err := logging.New(cmd.ErrOrStderr(), "text", &level)
	if err != nil {
		return err
	}
	cfg, baseDir, err := o.config()
	if err != nil {
		return err
	}
	list, err := cfg.Registries.Resolved(baseDir)
	if err != nil {
		return err
	}
	img, pol, err := o.policy(list, image)
	if err != nil {
		return err
	}
	if list, err = o.override(list, img); err != nil {
		return err
	}
	var secrets creds.SecretGetter
	if needsKube(list) {
		if secrets, err = o.secrets(); err != nil {
			return err
		}
	}
	regs := setup.NewRegistriesFor(cfg, list, secrets, nil, log)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rep, selErr, err := selectTag(ctx, regs, img, pol)
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := printTestReport(cmd.OutOrStdout(), &rep); err != nil {
		return err
	}
	if rep.Selected == "" {
		return fmt.Errorf("%s: %w: %w", img.Repo(), errNothingSelected, selErr)
	}
	return nil
}

// policy reads the image as the daemon would look it up (a name without
// a registry goes to the default registry, with its namespace) and
// compiles the flags' policy for it.
func (o *options) policy(list config.RegistryList, image string) (registry.Image, *policy.Policy, error) {
	img, err := registry.ParseImage(list.Qualify(image))
	if err != nil {
		return img, nil, err
	}
	if !tagWritten(image) {
		img.Tag = "" // ParseImage's "latest" is not a current version
	}
	spec := policy.Spec{
		Strategy: o.strategy, Constraint: o.constraint, AllowTags: o.allowTags, IgnoreTags: o.ignoreTags,
		Extract: o.extract, ExtractOrder: o.extractOrder, Platforms: o.platforms,
	}
	if spec.Constraint == "" && img.Tag != "" && isDigestStrategy(spec.Strategy) {
		spec.Constraint = img.Tag
	}
	pol, err := policy.Compile(img.Repo(), spec)
	return img, pol, err
}

// selectTag lists the repository's tags and selects as the daemon would.
// selErr is the selection's policy.ErrNoCandidate (in the report); err
// any other failure.
func selectTag(ctx context.Context, regs *setup.Registries, img registry.Image, pol *policy.Policy) (rep Report, selErr, err error) {
	repo := img.Repository
	rep = Report{Image: img.Repo(), Current: img.Tag, Strategy: string(pol.Strategy()), Candidates: []Candidate{}}
	tags, err := regs.Client.ListTags(ctx, repo)
	if err != nil {
		return rep, nil, err
	}
	rep.Tags = len(tags)
	res, selErr := pol.Explain(ctx, tags, regs.Client.MetadataFunc(repo, pol.Platforms()))
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

// config reads --config, then --registries-conf.
func (o *options) config() (*config.Config, string, error) {
	cfg := config.Default()
	baseDir := "."
	if o.configPath != "" {
		c, err := config.Load(o.configPath)
		if err != nil {
			return nil, "", err
		}
		cfg, baseDir = c, filepath.Dir(o.configPath)
	}
	if o.regConf != "" {
		abs, err := filepath.Abs(o.regConf)
		if err != nil {
			return nil, "", err
		}
		cfg.Registries.ConfFile = abs
	}
	return cfg, baseDir, nil
}

// override applies --insecure to the image's registry host (through the
// entry MatchHost picks, or a new one for the host) and --credentials to
// the image's repository (an entry for it, which wins as the longest
// prefix and repeats the host's connection settings).
func (o *options) override(list config.RegistryList, img registry.Image) (config.RegistryList, error) {
	if o.credentials == "" && !o.insecure {
		return list, nil
	}
	list = slices.Clone(list)
	host := img.Repository.Host()
	entry := func(prefix string) config.Registry {
		return config.Registry{Prefix: prefix, RateLimit: config.DefaultRegistryRateLimit, MaxConcurrency: config.DefaultRegistryMaxConcurrency}
	}
	if o.insecure {
		if e := list.MatchHost(host); e != nil {
			e.Insecure = true
		} else {
			e := entry(host)
			e.Insecure = true
			list = append(list, e)
		}
	}
	if o.credentials != "" {
		ref, err := creds.Parse(o.credentials)
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

func (o *options) secrets() (creds.SecretGetter, error) {
	rc, err := setup.RestConfig(o.kubeconfig, config.Default(), o.userAgent)
	if err != nil {
		return nil, err
	}
	cs, err := kubecore.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	return creds.KubeSecrets{Client: cs}, nil
}

func printTestReport(w io.Writer, rep *Report) error {
	fmt.Fprintf(w, "image:    %s\n", rep.Image)
	if rep.Current != "" {
		fmt.Fprintf(w, "current:  %s\n", rep.Current)
	}
	fmt.Fprintf(w, "strategy: %s\n", rep.Strategy)
	fmt.Fprintf(w, "tags:     %d\n\n", rep.Tags)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tVERSION\tCREATED\tRESULT")
	for _, c := range rep.Candidates {
		created := ""
		if !c.Created.IsZero() {
			created = c.Created.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(c.Tag), printable(c.Version), created, c.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch {
	case rep.Selected == "":
		fmt.Fprintf(w, "selected: none (%s)\n", rep.Error)
	case rep.Current == "":
		fmt.Fprintf(w, "selected: %s\n", rep.Ref)
	case rep.Update:
		fmt.Fprintf(w, "selected: %s (update from %s)\n", rep.Ref, rep.Current)
	default:
		fmt.Fprintf(w, "selected: %s (up to date)\n", rep.Ref)
	}
	return nil
}

// printable quotes a tag with control characters so a hostile tag cannot
// rewrite the terminal.
func printable(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
