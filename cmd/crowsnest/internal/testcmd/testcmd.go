package testcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/imagecheck"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

type options struct {
	verifyKeys   []string
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
	f.StringArrayVar(&o.verifyKeys, "verify-key", nil, "PEM public key file (cosign.pub): skip tags whose image has no cosign signature by it (repeatable: any one key)")
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

// Report is the JSON form of `crowsnest test` (imagecheck's).
type Report = imagecheck.Report

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
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var keys []string
	for _, path := range o.verifyKeys {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--verify-key: %w", err)
		}
		keys = append(keys, string(b))
	}
	rep, err := imagecheck.Run(ctx, imagecheck.Options{
		Image: image,
		Policy: policy.Spec{
			Strategy: o.strategy, Constraint: o.constraint, AllowTags: o.allowTags, IgnoreTags: o.ignoreTags,
			Extract: o.extract, ExtractOrder: o.extractOrder, Platforms: o.platforms,
		},
		ConfigPath: o.configPath, RegistriesConf: o.regConf, Credentials: o.credentials, Insecure: o.insecure,
		Kubeconfig: o.kubeconfig, UserAgent: o.userAgent, Log: log, VerifyKeys: keys,
	})
	if rep == nil {
		return err
	}
	// With a report, err is nil or says that no tag qualifies
	// (imagecheck.ErrNothingSelected): the report shows why.
	var printErr error
	if o.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		printErr = enc.Encode(rep)
	} else {
		printErr = printTestReport(cmd.OutOrStdout(), rep)
	}
	if printErr != nil {
		return printErr
	}
	return err
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
		result := string(c.Reason)
		if c.Detail != "" {
			result += ": " + c.Detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable(c.Tag), printable(c.Version), created, printable(result))
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
