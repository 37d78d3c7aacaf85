package render

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// CommitMetadata is what `call .repo.GetCommitMetadata SHA` returns: the
// fields of Argo CD's shared.CommitMetadata, with the same meaning
// (Author is "Name <email>", Date the author date, Message the whole
// message trimmed, Tags the tags pointing at the commit).
type CommitMetadata struct {
	Message string
	Author  string
	Date    time.Time
	Tags    []string
}

// AppDetail is what `call .repo.GetAppDetails` returns: the fields of
// Argo CD's shared.AppDetail. Type is "Helm", "Kustomize" or
// "Directory"; the part of that type is set, the others are nil.
type AppDetail struct {
	Type      string
	Helm      *CustomHelmAppSpec
	Kustomize *KustomizeAppSpec
	Directory *DirectoryAppSpec
}

// CustomHelmAppSpec is Argo CD's shared.CustomHelmAppSpec: what the chart
// holds and the Application's parameter overrides.
type CustomHelmAppSpec struct {
	HelmAppSpec            HelmAppSpec
	HelmParameterOverrides []HelmParameter
}

// HelmAppSpec is Argo CD's repo server HelmAppSpec.
type HelmAppSpec struct {
	Name string
	// ValueFiles are the values files found in the source's directory.
	ValueFiles []string
	// Parameters are the chart's values.yaml and the selected value
	// files, flattened (image.tag, args[0]).
	Parameters []*HelmParameter
	// Values is the text of the chart's values.yaml.
	Values         string
	FileParameters []*HelmFileParameter
}

// HelmParameter is Argo CD's v1alpha1.HelmParameter.
type HelmParameter struct {
	Name        string
	Value       string
	ForceString bool
}

// HelmFileParameter is Argo CD's v1alpha1.HelmFileParameter.
type HelmFileParameter struct {
	Name string
	Path string
}

// KustomizeAppSpec is Argo CD's repo server KustomizeAppSpec.
type KustomizeAppSpec struct {
	Images []string
}

// DirectoryAppSpec is Argo CD's repo server DirectoryAppSpec (empty).
type DirectoryAppSpec struct{}

// GetParameterValueByName returns the value of the Helm parameter name:
// the Application's override first, else the chart's, else "".
func (h CustomHelmAppSpec) GetParameterValueByName(name string) string {
	for _, p := range h.HelmParameterOverrides {
		if p.Name == name {
			return p.Value
		}
	}
	for _, p := range h.HelmAppSpec.Parameters {
		if p != nil && p.Name == name {
			return p.Value
		}
	}
	return ""
}

// GetFileParameterPathByName returns the path of the Helm file parameter
// name, or "".
func (h CustomHelmAppSpec) GetFileParameterPathByName(name string) string {
	for _, p := range h.HelmAppSpec.FileParameters {
		if p != nil && p.Name == name {
			return p.Path
		}
	}
	return ""
}

// RepoLookup answers repo.GetCommitMetadata and repo.GetAppDetails about
// an Application (as an unstructured map): from its own source
// repository only, with the credentials Argo CD would use for it. It
// bounds its own time.
type RepoLookup interface {
	CommitMetadata(ctx context.Context, app map[string]any, sha string) (CommitMetadata, error)
	AppDetails(ctx context.Context, app map[string]any) (AppDetail, error)
}

// ErrNoRepoAccess is what GetCommitMetadata and GetAppDetails fail with
// where no Git access is wired (a render without a cluster or cache).
var ErrNoRepoAccess = errors.New("no access to the Application's repository here")

// RepoHelpersFor returns RepoHelpers plus repo.GetCommitMetadata and
// repo.GetAppDetails answered by l for app; nil l makes both fail the
// render with ErrNoRepoAccess. A failure fails the render with an error
// naming the function, as Argo CD's panic inside the template does.
func RepoHelpersFor(ctx context.Context, l RepoLookup, app map[string]any) map[string]any {
	m := map[string]any{
		"RepoURLToHTTPS":    RepoURLToHTTPS,
		"FullNameByRepoURL": FullNameByRepoURL,
		"QueryEscape":       url.QueryEscape,
	}
	m["GetCommitMetadata"] = func(sha any) (CommitMetadata, error) {
		s := toString(sha)
		if s == "" {
			return CommitMetadata{}, errors.New("repo.GetCommitMetadata: no commit SHA given (.app.status.sync.revision is empty?)")
		}
		if l == nil {
			return CommitMetadata{}, fmt.Errorf("repo.GetCommitMetadata: %w", ErrNoRepoAccess)
		}
		md, err := l.CommitMetadata(ctx, app, s)
		if err != nil {
			return CommitMetadata{}, fmt.Errorf("repo.GetCommitMetadata %s: %w", s, err)
		}
		return md, nil
	}
	m["GetAppDetails"] = func() (AppDetail, error) {
		if l == nil {
			return AppDetail{}, fmt.Errorf("repo.GetAppDetails: %w", ErrNoRepoAccess)
		}
		d, err := l.AppDetails(ctx, app)
		if err != nil {
			return AppDetail{}, fmt.Errorf("repo.GetAppDetails: %w", err)
		}
		return d, nil
	}
	return m
}
