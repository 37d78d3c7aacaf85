package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/migrate"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
)

// Exit codes of `crowsnest migrate`: 0 everything keeps working, 1
// something would stop working (the report names it), 2 the command
// could not read its input.
const migrateExitUsage = 2

type migrateOptions struct {
	kubeconfig string
	namespace  string
	appsNS     string
	fromDir    string
	configPath string
	output     string
}

func newMigrateCommand() *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Report what crowsnest would do with an argocd-image-updater and Argo CD Notifications installation",
		Long: `Migrate reads an installation of argocd-image-updater and Argo CD
Notifications, from a cluster (read-only: get and list, nothing is written) or
from a folder of manifests (--from-dir), with the readers the daemon runs:
Applications and their argocd-image-updater annotations, ImageUpdater
resources, argocd-image-updater-config (registries.conf and the rest),
argocd-notifications-cm and its Secret (key names only are shown),
subscriptions, and AppProjects' sync windows and subscriptions.

It reports per Application the images crowsnest will update (from which
source, with which strategy, written back how and where), each trigger's
destinations (delivered, or why not) and the sync windows that apply; then
what crowsnest reads differently (and why) and what it cannot do; then the
install: the Helm command with a values file carrying over what crowsnest
has a setting for, and the RBAC its ServiceAccount needs.

The exit code is 0 when everything keeps working, 1 when something would
stop working (each is named, marked "!"), 2 when the input cannot be read.`,
		Example: `  crowsnest migrate --namespace argocd
  crowsnest migrate --from-dir ./exported -o json
  crowsnest migrate --from-dir ./exported --config crowsnest.yaml`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to read ($KUBECONFIG or in-cluster when empty)")
	f.StringVarP(&o.namespace, "namespace", "n", "argocd", "Argo CD's namespace, where argocd-image-updater-config and argocd-notifications-cm live")
	f.StringVar(&o.appsNS, "apps-namespace", "", "from a cluster, only Applications and ImageUpdaters in this namespace (default: every namespace)")
	f.StringVar(&o.fromDir, "from-dir", "", "read manifests from this folder (YAML or JSON, multi-document, Lists) instead of a cluster")
	f.StringVar(&o.configPath, "config", "", "crowsnest config to analyse with and install, instead of the one migrate proposes")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &migrateExitError{code: migrateExitUsage, err: err}
	})
	return cmd
}

func (o *migrateOptions) run(ctx context.Context, out io.Writer) error {
	usage := func(err error) error { return &migrateExitError{code: migrateExitUsage, err: err} }
	if o.output != "text" && o.output != "json" {
		return usage(fmt.Errorf("--output: unsupported value %q, want text or json", o.output))
	}
	if o.fromDir != "" && (o.kubeconfig != "" || o.appsNS != "") {
		return usage(errors.New("--from-dir reads a folder: --kubeconfig and --apps-namespace are for a cluster"))
	}
	var userCfg *config.Config
	baseDir := "."
	if o.configPath != "" {
		c, err := config.Load(o.configPath)
		if err != nil {
			return usage(err)
		}
		userCfg, baseDir = c, filepath.Dir(o.configPath)
	}
	in, err := o.read(ctx)
	if err != nil {
		return usage(err)
	}
	rep, err := migrate.Analyze(in, migrate.Options{Config: userCfg, ConfigPath: o.configPath, BaseDir: baseDir})
	if err != nil {
		return usage(err)
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = migrate.WriteText(out, rep)
	}
	if err != nil {
		return err
	}
	if rep.Summary.ExitCode != 0 {
		return migrateBreaks(rep.Summary.Breaks)
	}
	return nil
}

// read reads the installation: the folder (--from-dir) or the cluster.
func (o *migrateOptions) read(ctx context.Context) (*migrate.Inputs, error) {
	if o.fromDir != "" {
		return migrate.ReadDir(ctx, o.fromDir, o.namespace)
	}
	rc, err := setup.RestConfig(o.kubeconfig, config.Default(), userAgent())
	if err != nil {
		return nil, err
	}
	return migrate.ReadCluster(ctx, rc, o.namespace, o.appsNS)
}

var errMigrateBreaks = errors.New("something would stop working")

// migrateExitError is the error of a report whose exit code is not 0.
type migrateExitError struct {
	code int
	err  error
}

func (e *migrateExitError) Error() string { return e.err.Error() }
func (e *migrateExitError) Unwrap() error { return e.err }

// CommandExitCode is the process's exit code for this error (main).
func (e *migrateExitError) CommandExitCode() int { return e.code }

func migrateBreaks(breaks []string) error {
	return &migrateExitError{code: 1, err: fmt.Errorf("%w: %d finding(s), marked \"!\" in the report", errMigrateBreaks, len(breaks))}
}
